"""The in-memory Store the engine tests run against: the same contract as the Django store
(research/worker/store.py), kept in a dict per table."""

import threading
from collections.abc import Collection, Sequence

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
    StepKind,
    StepRecord,
    StepStatus,
    Usage,
    WorkingState,
)
from research.engine.contracts.evidence import SEARCH_RANKS_KEPT
from research.engine.ports import (
    AcquisitionErrorKind,
    LeaseLost,
)
from research.engine.states import RunStatus, check_transition, resume_target
from research.engine.steps import StepPayload
from research.engine.urls import (
    canonical_url,
    hostname,
    url_hash,
)
from tests.engine.clock import FakeClock


class MemoryStore:
    """A Store keeping everything in dictionaries, with the same idempotency rules."""

    def __init__(
        self,
        run_id: str,
        *,
        budget: Budget,
        status: RunStatus = RunStatus.QUEUED,
        plan: ResearchPlan | None = None,
        plan_version: int = 1,
        objective: str = "",
        policy: SourcePolicy | None = None,
        clock: FakeClock | None = None,
    ) -> None:
        self.run = RunSnapshot(
            id=run_id,
            status=status,
            plan_version=plan_version,
            plan=plan,
            objective=objective or (plan.objective if plan else ""),
            policy=policy or SourcePolicy(),
            budget=budget,
        )
        self.steps: dict[str, StepRecord] = {}
        self.sources: dict[str, SourceRecord] = {}
        # (source id, search step id): a retried search records its ranks once.
        self.ranked: set[tuple[str, str]] = set()
        self.snapshots: dict[str, SourceDocument] = {}
        self.evidence: dict[str, Evidence] = {}
        self.out_of_scope: set[str] = set()
        self.report: Report | None = None
        self.reports_saved = 0
        self.plans: list[ResearchPlan] = [plan] if plan else []
        self.transitions: list[tuple[str, str, str]] = []
        # (stop reason, stop limit) as the last transition left them
        self.stop: tuple[str, str] = ("", "")
        self.heartbeats = 0
        self.writes: list[str] = []
        self.threads: set[int] = set()
        self.lease_lost = False
        # method name -> (calls to let through first, exception to raise), in order
        self.faults: dict[str, list[tuple[int, BaseException]]] = {}
        self.clock = clock
        # step id -> clock reading each time the step was started
        self.started_at: dict[str, list[float]] = {}

    # -- bookkeeping ---------------------------------------------------------------------

    def _call(self, name: str, *, write: bool) -> None:
        self.threads.add(threading.get_ident())
        if write and self.lease_lost:
            raise LeaseLost(f"{name}: this worker no longer owns the run")
        pending = self.faults.get(name)
        if pending:
            skip, error = pending[0]
            if skip:
                pending[0] = (skip - 1, error)
            else:
                pending.pop(0)
                raise error
        if write:
            self.writes.append(name)

    def fail_once(self, method: str, error: BaseException, *, after: int = 0) -> None:
        """Make a call of ``method`` raise ``error`` (a simulated crash): the next one, or
        the one after ``after`` more calls."""
        self.faults.setdefault(method, []).append((after, error))

    def request_pause(self) -> None:
        self.run = self.run.model_copy(
            update={"controls": self.run.controls.model_copy(update={"pause_requested": True})}
        )

    def request_cancel(self) -> None:
        self.run = self.run.model_copy(
            update={"controls": self.run.controls.model_copy(update={"cancel_requested": True})}
        )

    def resume(self) -> None:
        """What the resume control does: clear the pause flag, go to the resume target."""
        assert self.run.status == RunStatus.PAUSED and self.run.resume_phase is not None
        self.run = self.run.model_copy(
            update={
                "status": resume_target(self.run.resume_phase),
                "resume_phase": None,
                "controls": RunControls(),
            }
        )

    def approve(self) -> None:
        """What the approve control does: awaiting approval → queued."""
        assert self.transition(
            self.run.id, expected=RunStatus.AWAITING_APPROVAL, to=RunStatus.QUEUED
        )

    def steps_of(self, kind: str) -> list[StepRecord]:
        return [step for step in self.steps.values() if step.kind == kind]

    # -- the Store port ------------------------------------------------------------------

    def load_run(self, run_id: str) -> RunSnapshot:
        self._call("load_run", write=False)
        return self.run.model_copy(deep=True)

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
        self._call("transition", write=True)
        if self.run.status != expected or (
            plan_version is not None and plan_version != self.run.plan_version
        ):
            return False
        check_transition(expected, to)
        update: dict[str, object] = {"status": to}
        if to == RunStatus.PAUSED:
            update["resume_phase"] = expected
            update["controls"] = self.run.controls.model_copy(update={"pause_requested": False})
        elif to == RunStatus.FAILED:
            update["resume_phase"] = expected
        self.run = self.run.model_copy(update=update)
        self.transitions.append((str(expected), str(to), reason))
        ends = to in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED, RunStatus.FAILED)
        self.stop = (stop_reason, stop_limit) if ends else ("", "")
        return True

    def controls(self, run_id: str) -> RunControls:
        self._call("controls", write=False)
        return self.run.controls.model_copy()

    def heartbeat(self, run_id: str) -> None:
        self._call("heartbeat", write=False)
        if self.lease_lost:
            raise LeaseLost("heartbeat: this worker no longer owns the run")
        self.heartbeats += 1

    def save_plan(self, run_id: str, *, plan: ResearchPlan, expected_version: int) -> bool:
        self._call("save_plan", write=True)
        if self.run.plan_version != expected_version:
            return False
        self.run = self.run.model_copy(update={"plan": plan, "plan_version": expected_version + 1})
        self.plans.append(plan)
        return True

    def save_checkpoint(self, run_id: str, *, state: WorkingState, usage: Usage) -> None:
        self._call("save_checkpoint", write=True)
        self.run = self.run.model_copy(update={"state": state, "usage": usage})

    def begin_step(
        self,
        run_id: str,
        *,
        kind: StepKind,
        dedupe_key: str,
        rationale: str = "",
        payload: StepPayload | None = None,
        iteration: int = 0,
    ) -> StepRecord:
        self._call("begin_step", write=True)
        existing = next((s for s in self.steps.values() if s.dedupe_key == dedupe_key), None)
        if existing is not None:
            return existing
        step = StepRecord(
            id=f"step-{len(self.steps) + 1}",
            run_id=run_id,
            kind=kind,
            dedupe_key=dedupe_key,
            iteration=iteration,
            rationale=rationale,
            payload=payload.stored() if payload else {},
        )
        self.steps[step.id] = step
        return step

    def start_step(self, step_id: str) -> StepRecord:
        self._call("start_step", write=True)
        step = self.steps[step_id]
        step = step.model_copy(update={"status": "running", "attempt": step.attempt + 1})
        self.steps[step_id] = step
        if self.clock is not None:
            self.started_at.setdefault(step_id, []).append(self.clock.monotonic())
        return step

    def finish_step(
        self,
        step_id: str,
        *,
        status: StepStatus,
        summary: str = "",
        usage: Usage | None = None,
        error: str = "",
    ) -> None:
        self._call("finish_step", write=True)
        self.steps[step_id] = self.steps[step_id].model_copy(
            update={
                "status": status,
                "summary": summary,
                "usage": usage or Usage(),
                "error": error,
            }
        )

    def list_steps(self, run_id: str) -> list[StepRecord]:
        self._call("list_steps", write=False)
        return [step for step in self.steps.values() if step.run_id == run_id]

    def cancel_pending_steps(self, run_id: str) -> int:
        self._call("cancel_pending_steps", write=True)
        changed = 0
        for step_id, step in list(self.steps.items()):
            if step.run_id == run_id and step.status in ("pending", "running"):
                self.steps[step_id] = step.model_copy(update={"status": "cancelled"})
                changed += 1
        return changed

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
        self._call("record_candidates", write=True)
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
                    search_ranks=[candidate.rank],
                )
            elif (existing.id, step_id) not in self.ranked and (
                len(existing.search_ranks) < SEARCH_RANKS_KEPT
            ):
                existing = existing.model_copy(
                    update={"search_ranks": [*existing.search_ranks, candidate.rank]}
                )
            self.ranked.add((existing.id, step_id))
            self.sources[existing.id] = existing
            recorded.append(existing)
        self.steps[step_id] = self.steps[step_id].model_copy(
            update={
                "status": "succeeded",
                "summary": summary or f"{len(recorded)} results",
                "usage": usage or Usage(),
                "output": dict(output or {}),
            }
        )
        return recorded

    def list_sources(self, run_id: str) -> list[SourceRecord]:
        self._call("list_sources", write=False)
        return [s for s in self.sources.values() if s.run_id == run_id]

    def get_source(self, run_id: str, source_id: str) -> SourceRecord | None:
        self._call("get_source", write=False)
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
        self._call("record_acquisition", write=True)
        record = self.sources[source_id].model_copy(
            update={
                "status": "duplicate" if duplicate_of else "fetched",
                "duplicate_of": duplicate_of,
                "content_hash": document.content_hash,
                "title": document.title,
                "publisher": document.publisher,
                "published_at": document.published_at,
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
        self._call("record_failure", write=True)
        record = self.sources[source_id].model_copy(
            update={"status": kind, "status_reason": reason}
        )
        self.sources[source_id] = record
        return record

    def load_snapshot(self, run_id: str, source_id: str) -> SourceDocument | None:
        self._call("load_snapshot", write=False)
        return self.snapshots.get(source_id)

    def add_evidence(
        self, run_id: str, *, step_id: str, evidence: Sequence[Evidence]
    ) -> list[Evidence]:
        self._call("add_evidence", write=True)
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
        self._call("list_evidence", write=False)
        return [
            item
            for item in self.evidence.values()
            if item.run_id == run_id and item.id not in self.out_of_scope
        ]

    def mark_out_of_scope(self, run_id: str, *, question_ids_kept: Collection[str]) -> int:
        self._call("mark_out_of_scope", write=True)
        kept = set(question_ids_kept)
        self.out_of_scope = {
            item.id
            for item in self.evidence.values()
            if item.run_id == run_id and not kept.intersection(item.question_ids)
        }
        return len(self.out_of_scope)

    def save_report(self, run_id: str, *, report: Report) -> None:
        self._call("save_report", write=True)
        self.report = report
        self.reports_saved += 1
