"""Information gain per iteration, diminishing returns and the stop reasons."""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from research.engine.contracts import Evidence, QuestionCoverage, WorkingState
from research.engine.guards.budget import BudgetLedger
from research.engine.guards.coverage import is_relevant

ZERO_GAIN_LIMIT = 3
DUPLICATE_PROPOSAL_LIMIT = 2
SYSTEMIC_FAILURE_LIMIT = 3


@dataclass(frozen=True)
class IterationGain:
    """What one iteration added; an iteration with nothing here is a zero-gain iteration."""

    new_relevant_evidence: int = 0
    new_source_classes: int = 0
    coverage_gain: int = 0
    contradictions_resolved: int = 0

    @property
    def any(self) -> bool:
        """Whether the iteration added anything at all."""
        return bool(
            self.new_relevant_evidence
            or self.new_source_classes
            or self.coverage_gain
            or self.contradictions_resolved
        )


def _coverage_points(coverage: Mapping[str, QuestionCoverage]) -> set[tuple[str, str]]:
    points: set[tuple[str, str]] = set()
    for qid, item in coverage.items():
        if item.covered:
            points.add((qid, "covered"))
        if item.has_primary:
            points.add((qid, "primary"))
        points.update((qid, f"cluster:{cluster}") for cluster in item.clusters)
    return points


def advance_iteration(
    state: WorkingState,
    *,
    coverage: Mapping[str, QuestionCoverage],
    new_evidence: Iterable[Evidence] = (),
    source_classes: Iterable[str] = (),
    resolved_contradictions: Iterable[str] = (),
) -> tuple[WorkingState, IterationGain]:
    """Close an iteration: measure its gain and return the next working state.

    Coverage gain counts questions newly covered, newly backed by a primary source or gaining
    a new independent cluster. The zero-gain streak resets on any gain.
    """
    before = _coverage_points(state.coverage)
    after = _coverage_points(coverage)
    seen_classes = set(state.source_classes_seen)
    classes = [c for c in dict.fromkeys(source_classes) if c not in seen_classes]
    already_resolved = set(state.resolved_contradictions)
    resolved = [k for k in dict.fromkeys(resolved_contradictions) if k not in already_resolved]
    gain = IterationGain(
        new_relevant_evidence=sum(1 for item in new_evidence if is_relevant(item)),
        new_source_classes=len(classes),
        coverage_gain=len(after - before),
        contradictions_resolved=len(resolved),
    )
    next_state = state.model_copy(
        update={
            "iteration": state.iteration + 1,
            "zero_gain_streak": 0 if gain.any else state.zero_gain_streak + 1,
            "coverage": dict(coverage),
            "source_classes_seen": [*state.source_classes_seen, *classes],
            "resolved_contradictions": [*state.resolved_contradictions, *resolved],
        },
        deep=True,
    )
    return next_state, gain


def diminishing_returns(state: WorkingState) -> bool:
    """Three consecutive iterations without any gain."""
    return state.zero_gain_streak >= ZERO_GAIN_LIMIT


class StopReason(StrEnum):
    """Why research stopped, and so why the run ended where it did; stored on the run as
    data (``stop_reason``) so pages, the command line and filters never match on prose."""

    FINISH_GATE_PASSED = "finish_gate_passed"
    BUDGET_EXHAUSTED = "budget_exhausted"
    TIME_EXHAUSTED = "time_exhausted"
    DIMINISHING_RETURNS = "diminishing_returns"
    ONLY_EQUIVALENT_SEARCHES = "only_equivalent_searches"
    # Research stopped for lack of anything new and not one source could be read: the
    # searches found nothing fetchable, or every page was blocked, failed or unsupported.
    NO_READABLE_SOURCES = "no_readable_sources"
    PROVIDER_FAILURES = "provider_failures"
    # The decision model answered with unusable decisions twice in a row.
    INVALID_DECISIONS = "invalid_decisions"
    # The worker hit an unexpected error on several attempts in a row.
    WORKER_ERROR = "worker_error"
    PAUSED = "paused"
    CANCELLED = "cancelled"


STOP_MESSAGES: dict[StopReason, str] = {
    StopReason.FINISH_GATE_PASSED: "Every required question is covered.",
    StopReason.BUDGET_EXHAUSTED: "The research budget is used up.",
    StopReason.TIME_EXHAUSTED: "The research time limit was reached.",
    StopReason.DIMINISHING_RETURNS: "Three rounds of research added nothing new.",
    StopReason.ONLY_EQUIVALENT_SEARCHES: "Only repeats of earlier searches were left to try.",
    StopReason.NO_READABLE_SOURCES: "No source could be read.",
    StopReason.PROVIDER_FAILURES: "Search or fetch providers kept failing.",
    StopReason.INVALID_DECISIONS: "The decision model twice returned decisions that could not "
    "be used.",
    StopReason.WORKER_ERROR: "The worker kept hitting an unexpected error.",
    StopReason.PAUSED: "The run was paused.",
    StopReason.CANCELLED: "The run was cancelled.",
}


def research_stop_reason(ledger: BudgetLedger, state: WorkingState) -> StopReason | None:
    """The deterministic reason research must stop now, or ``None`` to continue.

    Checks time, hard budgets, diminishing returns, repeated equivalent proposals and
    systemic provider failures. Pause and cancel come from the store's controls; the finish
    gate is evaluated when the model asks to finish.
    """
    blocked = ledger.research_blocked()
    if blocked == "elapsed_seconds":
        return StopReason.TIME_EXHAUSTED
    if blocked is not None:
        return StopReason.BUDGET_EXHAUSTED
    if diminishing_returns(state):
        return StopReason.DIMINISHING_RETURNS
    if state.duplicate_proposal_streak >= DUPLICATE_PROPOSAL_LIMIT:
        return StopReason.ONLY_EQUIVALENT_SEARCHES
    if state.systemic_failure_streak >= SYSTEMIC_FAILURE_LIMIT:
        return StopReason.PROVIDER_FAILURES
    return None
