"""The per-run working state one ``advance()`` call works with, and what every phase shares.

:class:`RunContext` is the run being worked on (snapshot, plan, ledger, working state);
:class:`View` is its sources and evidence as the rules see them; :class:`Fetch` and
:class:`Batch` track the steps of one iteration; :class:`Halt` says why the research loop
left. :class:`Phase` is the base of the phase classes the orchestrator is composed of: it
declares the collaborators they share and the plumbing every phase uses.
"""

from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Literal

from research.engine.contracts import (
    ContradictionCandidate,
    CountsUpdated,
    Evidence,
    QuestionCoverage,
    ResearchPlan,
    RunSnapshot,
    SourceDocument,
    SourcePolicy,
    SourceRecord,
    StepRecord,
    Usage,
    WorkingState,
)
from research.engine.guards import (
    STOP_MESSAGES,
    BudgetLedger,
    BudgetRefused,
    FinishGateResult,
    StopReason,
    central_contradictions,
    compute_coverage,
    evaluate_finish_gate,
)
from research.engine.ledger import assign_independence_clusters, find_contradictions
from research.engine.ports import Clock, ModelClient, ModelError, SourceAdapter, Store, Verifier
from research.engine.quality import SourceClassifier
from research.engine.run.metering import Meter
from research.engine.run.progress import Progress
from research.engine.steps import StepPayload

# The follow-up key of the program's gap search for a question ("question:q1", see
# ``Deciding._gap_search``). Kept with the contradictions followed up, it records that the
# question had its search; a contradiction's key begins with "claim:" instead.
GAP_KEY_PREFIX = "question:"


@dataclass
class RunContext:
    """What one phase of one run works with; the working state is checkpointed from here."""

    id: str
    snapshot: RunSnapshot
    plan: ResearchPlan
    ledger: BudgetLedger
    state: WorkingState

    @property
    def policy(self) -> SourcePolicy:
        return self.snapshot.policy


@dataclass
class View:
    """The run's sources and evidence as the rules see them right now."""

    sources: list[SourceRecord]
    by_id: dict[str, SourceRecord]
    evidence: list[Evidence]
    coverage: dict[str, QuestionCoverage]
    contradictions: list[ContradictionCandidate]
    central: list[ContradictionCandidate]
    gate: FinishGateResult


@dataclass
class Fetch:
    """One read step in flight: the source, the pending fetch or the stored snapshot."""

    step: StepRecord
    source: SourceRecord
    max_bytes: int
    future: "Future[SourceDocument] | None" = None
    document: SourceDocument | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass
class Batch:
    """The steps of one iteration still to run, and what happened to those that ran."""

    searches: list[StepRecord] = field(default_factory=list)
    reads: list[StepRecord] = field(default_factory=list)
    queued_sources: set[str] = field(default_factory=set)
    successes: int = 0
    systemic_failures: int = 0

    def add_read(self, step: StepRecord) -> None:
        self.reads.append(step)
        self.queued_sources.add(StepPayload.of(step).source_id)


@dataclass(frozen=True)
class Halt:
    """Why the research loop left: a stop (go to synthesis), a control, or a failure.

    ``stop`` is the :class:`StopReason` value (for a failure too, when it has one) and
    ``limit`` the budget counter that ran out, for a budget stop."""

    kind: Literal["stop", "pause", "cancel", "fail"]
    reason: str = ""
    stop: str | None = None
    limit: str | None = None


PAUSE = Halt("pause")
CANCEL = Halt("cancel")


def budget_halt(refusal: BudgetRefused) -> Halt:
    """A budget stop from a refused reservation, naming the counter that ran out."""
    if refusal.counter == "elapsed_seconds":
        return Halt("stop", stop=StopReason.TIME_EXHAUSTED.value, limit=refusal.counter)
    return Halt("stop", stop=StopReason.BUDGET_EXHAUSTED.value, limit=refusal.counter)


def outage_stop(error: ModelError) -> str | None:
    """A model call that failed on a retryable error (endpoint down, rate limited, timed
    out) is a provider outage: the stop reason of the failure it causes."""
    return StopReason.PROVIDER_FAILURES.value if error.retryable else None


def as_stop(stop: str | None) -> StopReason | None:
    try:
        return StopReason(stop) if stop else None
    except ValueError:
        return None


def stop_message(stop: str | None) -> str:
    known = as_stop(stop)
    return STOP_MESSAGES[known] if known is not None else "Research stopped."


class Phase:
    """The base of the orchestrator's phase classes (planning, deciding, execution,
    iterations, synthesis). :class:`~research.engine.run.orchestrator.Orchestrator` sets
    these attributes; a phase may call the methods of the others through ``self``."""

    _store: Store
    _model: ModelClient
    _verifier: Verifier | None
    _sources: SourceAdapter
    _clock: Clock
    _progress: Progress
    _meter: Meter
    _max_searches: int
    _max_fetches: int
    _max_extractions: int
    _search_results: int
    _extraction_max_items: int
    _calls: int
    _classify: SourceClassifier

    def _context(self, snapshot: RunSnapshot, ledger: BudgetLedger) -> RunContext:
        assert snapshot.plan is not None
        state = snapshot.state.model_copy(
            update={"synthesis_reserve": ledger.synthesis_reserve()}, deep=True
        )
        return RunContext(
            id=snapshot.id, snapshot=snapshot, plan=snapshot.plan, ledger=ledger, state=state
        )

    def _checkpoint(self, run: RunContext) -> None:
        run.state = run.state.model_copy(
            update={"settled_action_keys": sorted(run.ledger.settled_keys)}
        )
        self._store.save_checkpoint(run.id, state=run.state, usage=run.ledger.usage())

    def _view(self, run: RunContext) -> View:
        raw = self._store.list_sources(run.id)
        clusters = assign_independence_clusters(
            [s for s in raw if s.status in ("fetched", "duplicate")]
        )
        sources = [
            s.model_copy(
                update={
                    "quality": s.quality.model_copy(update={"independence_cluster": clusters[s.id]})
                }
            )
            if s.id in clusters
            else s
            for s in raw
        ]
        by_id = {s.id: s for s in sources}
        evidence = self._store.list_evidence(run.id)
        coverage = compute_coverage(run.plan, evidence, by_id)
        contradictions = find_contradictions(evidence)
        central = central_contradictions(run.plan, contradictions)
        gate = evaluate_finish_gate(
            run.plan,
            coverage,
            contradictions,
            followed_up=run.state.followed_up_contradictions,
            resolved=run.state.resolved_contradictions,
        )
        return View(
            sources=sources,
            by_id=by_id,
            evidence=evidence,
            coverage=coverage,
            contradictions=contradictions,
            central=central,
            gate=gate,
        )

    def _emit_counts(self, run: RunContext, view: View | None = None) -> None:
        view = view or self._view(run)
        usage = run.ledger.usage()
        self._progress.emit(
            CountsUpdated(
                run_id=run.id,
                searches=usage.searches,
                fetched_sources=usage.fetched_sources,
                evidence_items=len(view.evidence),
                covered_questions=sum(1 for item in view.coverage.values() if item.covered),
                total_questions=len(run.plan.questions),
            )
        )
