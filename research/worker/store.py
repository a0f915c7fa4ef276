"""The Django implementation of the engine's Store port.

Rules the engine relies on, enforced here and by database constraints:
* steps are created once per (run, dedupe key) and a retried step counts its attempts;
* search results become sources once per (run, canonical URL hash), in the same
  transaction that completes the search step;
* evidence is inserted once per (run, evidence hash);
* status changes are compare-and-set on (status[, plan_version]);
* when the store is bound to a lease, every write first checks — inside its own
  transaction, holding the run's row lock on PostgreSQL — that the lease is still
  this worker's, and raises ``LeaseLost`` otherwise. A worker that lost its run writes
  nothing more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from research import telemetry
from research.engine.contracts import (
    Budget,
    Evidence,
    Report,
    ResearchPlan,
    RunControls,
    RunSnapshot,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
    SourceQuality,
    SourceRecord,
    StepRecord,
    StepStatus,
    Usage,
    WorkingState,
)
from research.engine.contracts.evidence import SEARCH_RANKS_KEPT
from research.engine.ports import AcquisitionErrorKind, LeaseLost
from research.engine.run.planning import clarification_line
from research.engine.states import RunStatus
from research.engine.steps import StepInput, StepPayload
from research.engine.urls import (
    UnsupportedURLError,
    canonical_url,
    hostname,
    is_document_url,
    url_hash,
)
from research.engine.works import work_identity
from research.lifecycle import steps_cancel_unfinished, transition
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.report_templates import template_sections
from research.sources.documents.addresses import document_url_hash
from research.worker.block_map import decode_blocks, encode_blocks
from research.worker.leases import release_lease, renew_lease
from research.worker.shutdown import SHUTTING_DOWN
from research.worker.snapshots import snapshot_freeze

_SOURCE_KIND = {
    "html": ResearchSource.Kind.WEB,
    "text": ResearchSource.Kind.WEB,
    "pdf": ResearchSource.Kind.PDF,
}


class DjangoStore:
    """Store port over the research tables, optionally bound to a worker's lease."""

    def __init__(self, *, lease_owner: str | None = None) -> None:
        self.lease_owner = lease_owner

    # -- lease -----------------------------------------------------------------------------

    @contextmanager
    def _write(self, run_id: str) -> Iterator[None]:
        with transaction.atomic():
            if self.lease_owner is not None:
                owned = (
                    ResearchRun.objects.select_for_update()
                    .filter(
                        pk=run_id,
                        lease_owner=self.lease_owner,
                        lease_expires_at__gt=timezone.now(),
                    )
                    .exists()
                )
                if not owned:
                    raise LeaseLost(f"This worker no longer holds the lease on run {run_id}.")
            yield

    def heartbeat(self, run_id: str) -> None:
        """Renew the lease at a safe boundary; raises LeaseLost when it is gone."""
        if self.lease_owner is None:
            return
        if SHUTTING_DOWN.is_set():
            release_lease(run_id, self.lease_owner)
            raise LeaseLost("This worker is shutting down; another worker continues the run.")
        if not renew_lease(run_id, self.lease_owner):
            raise LeaseLost(f"This worker no longer holds the lease on run {run_id}.")

    # -- runs ------------------------------------------------------------------------------

    def load_run(self, run_id: str) -> RunSnapshot:
        run = ResearchRun.objects.get(pk=run_id)
        return RunSnapshot(
            id=str(run.pk),
            status=run.status,
            plan_version=run.plan_version,
            plan=ResearchPlan.model_validate(run.plan) if run.plan else None,
            objective=run.question,
            depth=run.depth,
            policy=SourcePolicy.model_validate(run.source_policy),
            budget=Budget.model_validate(run.budget),
            usage=Usage.model_validate(run.usage),
            state=WorkingState.model_validate(run.working_state),
            controls=RunControls(
                pause_requested=run.pause_requested, cancel_requested=run.cancel_requested
            ),
            resume_phase=run.resume_phase or None,
            requested_sections=list(template_sections(run.report_template)),
            clarifications=[
                clarification_line(item["question"], item["answer"])
                for item in run.clarifications or []
            ],
        )

    def transition(
        self,
        run_id: str,
        *,
        expected: RunStatus,
        to: RunStatus,
        plan_version: int | None = None,
        reason: str = "",
        stop_reason: str = "",
        stop_limit: str = "",
    ) -> bool:
        with self._write(run_id):
            # The worker holds the lease while it changes the status; its attempt releases
            # the lease when it returns (research.worker.actors).
            changed = transition(
                run_id,
                expected=expected,
                to=to,
                plan_version=plan_version,
                reason=reason,
                stop_reason=stop_reason,
                stop_limit=stop_limit,
                release_lease=False,
            )
        return changed

    def controls(self, run_id: str) -> RunControls:
        pause, cancel = (
            ResearchRun.objects.filter(pk=run_id)
            .values_list("pause_requested", "cancel_requested")
            .get()
        )
        return RunControls(pause_requested=pause, cancel_requested=cancel)

    def save_checkpoint(self, run_id: str, *, state: WorkingState, usage: Usage) -> None:
        with self._write(run_id):
            ResearchRun.objects.filter(pk=run_id).update(
                working_state=state.model_dump(mode="json"),
                usage=usage.model_dump(mode="json"),
                updated_at=timezone.now(),
            )

    def save_plan(self, run_id: str, *, plan: ResearchPlan, expected_version: int) -> bool:
        """Store a planner's plan as version ``expected_version + 1`` (compare-and-set)."""
        with self._write(run_id):
            updated = ResearchRun.objects.filter(pk=run_id, plan_version=expected_version).update(
                plan=plan.model_dump(mode="json"),
                plan_version=F("plan_version") + 1,
                plan_saved_by=None,  # drafted by the planner
                refinement_instruction="",
                updated_at=timezone.now(),
            )
        return updated == 1

    def mark_out_of_scope(self, run_id: str, *, question_ids_kept: Collection[str]) -> int:
        """Evidence addressing none of ``question_ids_kept`` is kept but marked out of scope."""
        keep = set(question_ids_kept)
        with self._write(run_id):
            outside = [
                pk
                for pk, questions in ResearchEvidence.objects.filter(run_id=run_id).values_list(
                    "pk", "question_ids"
                )
                if not keep.intersection(questions or [])
            ]
            ResearchEvidence.objects.filter(run_id=run_id).update(out_of_scope=False)
            return ResearchEvidence.objects.filter(pk__in=outside).update(out_of_scope=True)

    def save_report(self, run_id: str, *, report: Report) -> None:
        with self._write(run_id):
            ResearchRun.objects.filter(pk=run_id).update(
                report=report.model_dump(mode="json"), updated_at=timezone.now()
            )
            # Every saved report version is frozen with its evidence (research/worker/snapshots.py).
            snapshot_freeze(run_id, report, as_contract=evidence_from_row)

    # -- steps -----------------------------------------------------------------------------

    def begin_step(
        self,
        run_id: str,
        *,
        kind: str,
        dedupe_key: str,
        rationale: str = "",
        payload: StepPayload | None = None,
        iteration: int = 0,
    ) -> StepRecord:
        payload = payload or StepPayload()
        with self._write(run_id):
            step = ResearchStep.objects.filter(run_id=run_id, dedupe_key=dedupe_key[:200]).first()
            if step is None:
                try:
                    with transaction.atomic():
                        step = ResearchStep.objects.create(
                            run_id=run_id,
                            kind=kind,
                            dedupe_key=dedupe_key[:200],
                            iteration=iteration,
                            question_ids=list(payload.question_ids),
                            input=StepInput(rationale=rationale, payload=payload).stored(),
                        )
                except IntegrityError:
                    step = ResearchStep.objects.get(run_id=run_id, dedupe_key=dedupe_key[:200])
        return _step_record(step)

    def start_step(self, step_id: str) -> StepRecord:
        """Mark a step running and count the attempt (attempt n)."""
        step = ResearchStep.objects.get(pk=step_id)
        with self._write(str(step.run_id)):
            ResearchStep.objects.filter(pk=step_id).update(
                status=ResearchStep.Status.RUNNING,
                attempt=F("attempt") + 1,
                started_at=timezone.now(),
            )
        step.refresh_from_db()
        return _step_record(step)

    def finish_step(
        self,
        step_id: str,
        *,
        status: StepStatus,
        summary: str = "",
        usage: Usage | None = None,
        error: str = "",
    ) -> None:
        step = ResearchStep.objects.only("run_id", "kind").get(pk=step_id)
        with self._write(str(step.run_id)):
            self._finish_step(step_id, status=status, summary=summary, usage=usage, error=error)
        telemetry.step_finished(step.kind, status)

    def _finish_step(
        self,
        step_id: str,
        *,
        status: StepStatus,
        summary: str,
        usage: Usage | None,
        error: str = "",
        output: dict[str, object] | None = None,
    ) -> None:
        fields: dict[str, Any] = {
            "status": status,
            "summary": summary[:300],
            "error": error[:2000],
            "completed_at": timezone.now(),
        }
        if usage is not None:
            fields["usage"] = usage.model_dump(mode="json")
        if output is not None:
            fields["output"] = output
        ResearchStep.objects.filter(pk=step_id).update(**fields)

    def list_steps(self, run_id: str) -> list[StepRecord]:
        return [
            _step_record(step)
            for step in ResearchStep.objects.filter(run_id=run_id).order_by("created_at", "pk")
        ]

    def cancel_pending_steps(self, run_id: str) -> int:
        with self._write(run_id):
            return steps_cancel_unfinished(run_id)

    # -- sources ---------------------------------------------------------------------------

    def record_candidates(
        self,
        run_id: str,
        *,
        step_id: str,
        candidates: Sequence[SearchCandidate],
        summary: str = "",
        usage: Usage | None = None,
        output: dict[str, object] | None = None,
    ) -> list[SourceRecord]:
        recorded: list[ResearchSource] = []
        with self._write(run_id):
            for candidate in candidates:
                uploaded = is_document_url(candidate.url)
                try:
                    canonical = candidate.url if uploaded else canonical_url(candidate.url)
                except UnsupportedURLError:
                    continue  # a provider returned something that is not a web page
                digest = document_url_hash(canonical) if uploaded else url_hash(canonical)
                source = ResearchSource.objects.filter(
                    run_id=run_id, canonical_url_hash=digest
                ).first()
                if source is None:
                    source = ResearchSource.objects.create(
                        run_id=run_id,
                        kind=ResearchSource.Kind.UPLOAD if uploaded else ResearchSource.Kind.WEB,
                        url=candidate.url[:2000],
                        canonical_url=canonical[:2000],
                        canonical_url_hash=digest,
                        title=candidate.title[:500],
                        domain="" if uploaded else hostname(candidate.url)[:255],
                        published_at=(candidate.published_at or "")[:40],
                        discovered_by_step_id=step_id,
                        metadata=_candidate_metadata(candidate),
                    )
                else:
                    _add_search_rank(source, candidate.rank, step_id=step_id)
                recorded.append(source)
            self._finish_step(
                step_id,
                status="succeeded",
                summary=summary or f"{len(recorded)} results",
                usage=usage,
                output=output,
            )
        telemetry.step_finished("search", "succeeded")
        return [_source_record(source) for source in recorded]

    def list_sources(self, run_id: str) -> list[SourceRecord]:
        return [_source_record(s) for s in ResearchSource.objects.filter(run_id=run_id)]

    def get_source(self, run_id: str, source_id: str) -> SourceRecord | None:
        try:
            source = ResearchSource.objects.filter(run_id=run_id, pk=source_id).first()
        except ValueError:
            return None
        return _source_record(source) if source is not None else None

    def record_acquisition(
        self,
        run_id: str,
        source_id: str,
        *,
        document: SourceDocument,
        quality: SourceQuality,
        duplicate_of: str | None = None,
    ) -> SourceRecord:
        with self._write(run_id):
            ResearchSource.objects.filter(run_id=run_id, pk=source_id).update(
                status=ResearchSource.Status.DUPLICATE
                if duplicate_of
                else ResearchSource.Status.FETCHED,
                duplicate_of_id=duplicate_of,
                kind=ResearchSource.Kind.UPLOAD
                if is_document_url(document.canonical_url)
                else _SOURCE_KIND[document.kind],
                title=(document.title or "")[:500],
                publisher=(document.publisher or "")[:200],
                author=(document.author or "")[:300],
                published_at=(document.published_at or "")[:40],
                date_source=(document.date_source or "") if document.published_at else "",
                retrieved_at=document.retrieved_at,
                mime_type=document.mime_type[:100],
                source_class=quality.source_class,
                quality=quality.model_dump(mode="json"),
                snapshot_text=document.text,
                snapshot_blocks=encode_blocks(document.blocks),
                content_hash=document.content_hash,
                content_bytes=document.content_bytes,
                truncated=document.truncated,
                last_error="",
                metadata=_merged_metadata(source_id, document),
                updated_at=timezone.now(),
            )
        return _source_record(ResearchSource.objects.get(pk=source_id))

    def record_failure(
        self, run_id: str, source_id: str, *, kind: AcquisitionErrorKind, reason: str
    ) -> SourceRecord:
        with self._write(run_id):
            ResearchSource.objects.filter(run_id=run_id, pk=source_id).update(
                status=kind, last_error=reason[:2000], updated_at=timezone.now()
            )
        return _source_record(ResearchSource.objects.get(pk=source_id))

    def load_snapshot(self, run_id: str, source_id: str) -> SourceDocument | None:
        source = ResearchSource.objects.filter(run_id=run_id, pk=source_id).first()
        if source is None or source.status not in (
            ResearchSource.Status.FETCHED,
            ResearchSource.Status.DUPLICATE,
        ):
            return None
        stored = source.metadata.get("document", {})
        return SourceDocument(
            requested_url=stored.get("requested_url") or source.url,
            final_url=stored.get("final_url") or source.url,
            canonical_url=stored.get("canonical_url") or source.canonical_url or source.url,
            canonical_url_hash=stored.get("canonical_url_hash") or source.canonical_url_hash,
            content_hash=source.content_hash,
            mime_type=source.mime_type,
            kind=stored.get("kind", "html"),
            title=source.title,
            author=source.author or None,
            publisher=source.publisher or None,
            published_at=source.published_at or None,
            date_source=source.date_source or None,
            language=stored.get("language"),
            text=source.snapshot_text,
            headings=stored.get("headings", []),
            pages=stored.get("pages", []),
            blocks=decode_blocks(source.snapshot_blocks),
            truncated=source.truncated,
            content_bytes=source.content_bytes,
            retrieved_at=source.retrieved_at,
            declared_canonical_url=stored.get("declared_canonical_url"),
        )

    # -- evidence --------------------------------------------------------------------------

    def add_evidence(
        self, run_id: str, *, step_id: str, evidence: Sequence[Evidence]
    ) -> list[Evidence]:
        added: list[Evidence] = []
        with self._write(run_id):
            known = set(
                ResearchEvidence.objects.filter(
                    run_id=run_id, evidence_hash__in=[e.evidence_hash for e in evidence]
                ).values_list("evidence_hash", flat=True)
            )
            for item in evidence:
                if item.evidence_hash in known or item.run_id != str(run_id):
                    continue
                known.add(item.evidence_hash)
                write_evidence_row(item, step_id=step_id)
                added.append(item)
        return added

    def list_evidence(self, run_id: str) -> list[Evidence]:
        return [
            evidence_from_row(row)
            for row in ResearchEvidence.objects.filter(run_id=run_id, out_of_scope=False)
        ]


def _merged_metadata(source_id: str, document: SourceDocument) -> dict:
    metadata = dict(
        ResearchSource.objects.values_list("metadata", flat=True).get(pk=source_id) or {}
    )
    metadata["document"] = {
        "requested_url": document.requested_url,
        "final_url": document.final_url,
        "canonical_url": document.canonical_url,
        "canonical_url_hash": document.canonical_url_hash,
        "kind": document.kind,
        "language": document.language,
        "headings": [h.model_dump(mode="json") for h in document.headings],
        "pages": [p.model_dump(mode="json") for p in document.pages],
        "declared_canonical_url": document.declared_canonical_url,
        "abstract_only": document.abstract_only,
    }
    return metadata


def _step_record(step: ResearchStep) -> StepRecord:
    stored = StepInput.read(step.input)
    return StepRecord(
        id=str(step.pk),
        run_id=str(step.run_id),
        kind=step.kind,
        dedupe_key=step.dedupe_key,
        status=step.status,
        rationale=stored.rationale,
        payload=stored.payload.stored(),
        summary=step.summary,
        iteration=step.iteration,
        attempt=step.attempt,
        error=step.error,
        usage=Usage.model_validate(step.usage or {}),
        output=step.output or {},
    )


def _add_search_rank(source: ResearchSource, rank: int, *, step_id: str) -> None:
    """Record that one more search returned ``source``, at ``rank`` (once per search step,
    so a retried search is not counted twice)."""
    metadata = dict(source.metadata or {})
    steps = [str(step) for step in metadata.get("ranked_by_steps", [])]
    ranks = list(metadata.get("search_ranks") or [metadata.get("rank", rank)])
    if str(step_id) in steps or str(source.discovered_by_step_id) == str(step_id):
        return
    if len(ranks) < SEARCH_RANKS_KEPT:
        metadata["search_ranks"] = [*ranks, rank]
        metadata["ranked_by_steps"] = [*steps, str(step_id)]
        source.metadata = metadata
        source.save(update_fields=["metadata", "updated_at"])


def _candidate_metadata(candidate: SearchCandidate) -> dict[str, object]:
    metadata: dict[str, object] = {
        "snippet": candidate.snippet,
        "provider": candidate.provider,
        "rank": candidate.rank,
        "search_ranks": [candidate.rank],
        "provider_ranks": candidate.provider_ranks,
    }
    if candidate.scholarly is not None:
        # Authors, venue, year and identifiers are shown with the source and in the
        # bibliography; the work keys keep copies of one paper in one independence cluster.
        metadata["scholarly"] = candidate.scholarly.model_dump(mode="json", exclude_none=True)
        metadata["work_ids"] = work_identity(candidate).keys()
    if candidate.variants:
        metadata["variants"] = [v.model_dump(mode="json") for v in candidate.variants]
    return metadata


def _source_record(source: ResearchSource) -> SourceRecord:
    metadata = source.metadata or {}
    return SourceRecord(
        id=str(source.pk),
        run_id=str(source.run_id),
        status=source.status,
        url=source.url,
        canonical_url=source.canonical_url,
        canonical_url_hash=source.canonical_url_hash or "",
        content_hash=source.content_hash or None,
        title=source.title,
        publisher=source.publisher or None,
        domain=source.domain,
        snippet=metadata.get("snippet", ""),
        published_at=source.published_at or None,
        quality=SourceQuality.model_validate(source.quality) if source.quality else SourceQuality(),
        duplicate_of=str(source.duplicate_of_id) if source.duplicate_of_id else None,
        status_reason=source.last_error,
        declared_canonical_url=(metadata.get("document") or {}).get("declared_canonical_url"),
        work_ids=[str(key) for key in metadata.get("work_ids", [])],
        scholarly=source.scholarly,
        search_ranks=[int(rank) for rank in metadata.get("search_ranks", [])],
    )


def write_evidence_row(item: Evidence, *, step_id: str | None) -> ResearchEvidence:
    """The one place an evidence row is written: from the engine's contract, for the run
    and source the contract names (``step_id`` is the extraction step, if any)."""
    return ResearchEvidence.objects.create(
        id=item.id,
        run_id=item.run_id,
        source_id=item.source_id,
        extraction_step_id=step_id,
        question_ids=item.question_ids,
        excerpt=item.excerpt,
        locator=item.locator.model_dump(mode="json"),
        claim_key=(item.claim_key or "")[:200],
        stance=item.stance,
        normalized_value=(item.normalized_value or "")[:200],
        scope=item.scope.model_dump(mode="json"),
        relevance_bp=item.relevance_bp,
        confidence_bp=item.confidence_bp,
        evidence_hash=item.evidence_hash,
    )


def evidence_from_row(row: ResearchEvidence) -> Evidence:
    """A stored evidence row as the engine's contract (what citations are checked against)."""
    return Evidence(
        id=row.pk,
        run_id=str(row.run_id),
        source_id=str(row.source_id),
        excerpt=row.excerpt,
        locator=row.locator,
        question_ids=row.question_ids or [],
        stance=row.stance,
        claim_key=row.claim_key or None,
        normalized_value=row.normalized_value or None,
        scope=row.scope or {},
        relevance_bp=row.relevance_bp,
        confidence_bp=row.confidence_bp,
        evidence_hash=row.evidence_hash,
    )
