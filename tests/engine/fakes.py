"""In-memory implementations of the engine ports, for tests that exercise the rules together."""

from collections.abc import Sequence

from research.engine.contracts import (
    Budget,
    Evidence,
    ProgressEvent,
    Report,
    RunControls,
    RunSnapshot,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
    SourceQuality,
    SourceRecord,
    StepKind,
    StepRecord,
    StepStatus,
    Usage,
    WorkingState,
)
from research.engine.ports import AcquisitionError, AcquisitionErrorKind
from research.engine.states import RunStatus, check_transition
from research.engine.urls import canonical_url, evaluate_domain_policy, hostname, url_hash


class MemoryStore:
    """A Store keeping everything in dictionaries, with the same idempotency rules."""

    def __init__(
        self, run_id: str, *, budget: Budget, status: RunStatus = RunStatus.QUEUED
    ) -> None:
        self.run = RunSnapshot(id=run_id, status=status, plan_version=1, budget=budget)
        self.steps: dict[str, StepRecord] = {}
        self.sources: dict[str, SourceRecord] = {}
        self.snapshots: dict[str, SourceDocument] = {}
        self.evidence: dict[str, Evidence] = {}
        self.report: Report | None = None

    def load_run(self, run_id: str) -> RunSnapshot:
        return self.run.model_copy(deep=True)

    def transition(
        self,
        run_id: str,
        *,
        expected: RunStatus,
        to: RunStatus,
        plan_version: int | None = None,
        reason: str = "",
    ) -> bool:
        if self.run.status != expected or (
            plan_version is not None and plan_version != self.run.plan_version
        ):
            return False
        check_transition(expected, to)
        self.run = self.run.model_copy(update={"status": to})
        return True

    def controls(self, run_id: str) -> RunControls:
        return self.run.controls

    def save_checkpoint(self, run_id: str, *, state: WorkingState, usage: Usage) -> None:
        self.run = self.run.model_copy(update={"state": state, "usage": usage})

    def begin_step(
        self,
        run_id: str,
        *,
        kind: StepKind,
        dedupe_key: str,
        rationale: str = "",
        payload: dict[str, object] | None = None,
    ) -> StepRecord:
        existing = next((s for s in self.steps.values() if s.dedupe_key == dedupe_key), None)
        if existing is not None:
            return existing
        step = StepRecord(
            id=f"step-{len(self.steps) + 1}",
            run_id=run_id,
            kind=kind,
            dedupe_key=dedupe_key,
            rationale=rationale,
            payload=dict(payload or {}),
        )
        self.steps[step.id] = step
        return step

    def finish_step(
        self, step_id: str, *, status: StepStatus, summary: str = "", usage: Usage | None = None
    ) -> None:
        self.steps[step_id] = self.steps[step_id].model_copy(
            update={"status": status, "summary": summary}
        )

    def record_candidates(
        self, run_id: str, *, step_id: str, candidates: Sequence[SearchCandidate]
    ) -> list[SourceRecord]:
        recorded: list[SourceRecord] = []
        for candidate in candidates:
            canonical = canonical_url(candidate.url)
            digest = url_hash(canonical)
            existing = next(
                (s for s in self.sources.values() if s.canonical_url_hash == digest), None
            )
            if existing is None:
                existing = SourceRecord(
                    id=f"s{len(self.sources) + 1}",
                    run_id=run_id,
                    status="candidate",
                    url=candidate.url,
                    canonical_url=canonical,
                    canonical_url_hash=digest,
                    title=candidate.title,
                    domain=hostname(candidate.url),
                    snippet=candidate.snippet,
                )
                self.sources[existing.id] = existing
            recorded.append(existing)
        self.finish_step(step_id, status="succeeded", summary=f"{len(recorded)} results")
        return recorded

    def list_sources(self, run_id: str) -> list[SourceRecord]:
        return [s for s in self.sources.values() if s.run_id == run_id]

    def get_source(self, run_id: str, source_id: str) -> SourceRecord | None:
        source = self.sources.get(source_id)
        return source if source is not None and source.run_id == run_id else None

    def record_acquisition(
        self,
        run_id: str,
        source_id: str,
        *,
        document: SourceDocument,
        quality: SourceQuality,
        duplicate_of: str | None = None,
    ) -> SourceRecord:
        record = self.sources[source_id].model_copy(
            update={
                "status": "duplicate" if duplicate_of else "fetched",
                "duplicate_of": duplicate_of,
                "content_hash": document.content_hash,
                "title": document.title,
                "publisher": document.publisher,
                "quality": quality,
                "declared_canonical_url": document.declared_canonical_url,
            }
        )
        self.sources[source_id] = record
        self.snapshots[source_id] = document
        return record

    def record_failure(
        self, run_id: str, source_id: str, *, kind: AcquisitionErrorKind, reason: str
    ) -> SourceRecord:
        record = self.sources[source_id].model_copy(
            update={"status": kind, "status_reason": reason}
        )
        self.sources[source_id] = record
        return record

    def load_snapshot(self, run_id: str, source_id: str) -> SourceDocument | None:
        return self.snapshots.get(source_id)

    def add_evidence(
        self, run_id: str, *, step_id: str, evidence: Sequence[Evidence]
    ) -> list[Evidence]:
        known = {item.evidence_hash for item in self.evidence.values() if item.run_id == run_id}
        added: list[Evidence] = []
        for item in evidence:
            if item.evidence_hash in known:
                continue
            known.add(item.evidence_hash)
            self.evidence[item.id] = item
            added.append(item)
        return added

    def list_evidence(self, run_id: str) -> list[Evidence]:
        return [item for item in self.evidence.values() if item.run_id == run_id]

    def save_report(self, run_id: str, *, report: Report) -> None:
        self.report = report


class MemoryWeb:
    """A SourceAdapter over a dictionary of pages, honouring the domain policy."""

    def __init__(self, pages: dict[str, SourceDocument], results: dict[str, list[str]]) -> None:
        self.pages = pages
        self.results = results
        self.fetches: list[str] = []

    def discover(
        self, query: str, *, policy: SourcePolicy, limit: int = 10
    ) -> list[SearchCandidate]:
        urls = [u for u in self.results.get(query, []) if evaluate_domain_policy(u, policy).allowed]
        return [
            SearchCandidate(
                url=url,
                title=self.pages[url].title if url in self.pages else "",
                provider="memory",
                rank=rank,
            )
            for rank, url in enumerate(urls[:limit], start=1)
        ]

    def acquire(self, url: str, *, policy: SourcePolicy, max_bytes: int) -> SourceDocument:
        self.fetches.append(url)
        decision = evaluate_domain_policy(url, policy)
        if not decision.allowed:
            raise AcquisitionError("blocked", decision.reason)
        document = self.pages.get(url)
        if document is None:
            raise AcquisitionError("failed", "The page could not be found.", retryable=False)
        if document.content_bytes > max_bytes:
            raise AcquisitionError("unsupported", "The page is larger than the per-source limit.")
        return document


class MemoryEvents:
    """An EventSink that remembers what it was sent."""

    def __init__(self) -> None:
        self.events: list[ProgressEvent] = []

    def emit(self, event: ProgressEvent) -> None:
        self.events.append(event)
