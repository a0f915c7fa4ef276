"""How a run ended, as data and in words a person can act on.

A run's status says where it is in the lifecycle; once it has stopped, its stop reason (a
:class:`~research.engine.guards.StopReason` value stored on the run) and, for a budget stop,
the budget counter that ran out say why. :func:`run_outcome` turns the three into an
:class:`Outcome` — a stable key for filters and programs, a short label for the status
badge and a sentence saying what happened and what would help — and :func:`outcome_controls`
into the controls worth offering. The status badge, the workspace and report banners, the
command line, the run document and the dashboard filter all read this module, so a run is
described the same way everywhere and nothing matches on prose.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from research.engine.guards import StopReason
from research.engine.states import Control, RunStatus, allowed_controls

_S = RunStatus

STATUS_LABELS: dict[RunStatus, str] = {
    _S.CREATED: "Created",
    _S.PLANNING: "Planning",
    _S.AWAITING_APPROVAL: "Awaiting approval",
    _S.QUEUED: "Queued",
    _S.RESEARCHING: "Researching",
    _S.SYNTHESIZING: "Writing report",
    _S.COMPLETED: "Completed",
    _S.PAUSED: "Paused",
    _S.CANCELLED: "Cancelled",
    _S.FAILED: "Failed",
    # The status keeps its historical value; what it means is "a partial report was written".
    _S.BUDGET_EXHAUSTED: "Partial report",
}

# Stops a bigger budget can undo: only these offer "Increase the budget".
BUDGET_STOPS: frozenset[StopReason] = frozenset(
    {StopReason.BUDGET_EXHAUSTED, StopReason.TIME_EXHAUSTED}
)
# Stops where research ran dry; more of the same budget would find nothing more.
NOTHING_NEW_STOPS: frozenset[StopReason] = frozenset(
    {StopReason.DIMINISHING_RETURNS, StopReason.ONLY_EQUIVALENT_SEARCHES}
)

# Budget counters that can stop research, named as the budget panel names them.
LIMIT_LABELS: dict[str, str] = {
    "iterations": "rounds",
    "searches": "searches",
    "fetched_sources": "sources read",
    "model_calls": "model calls",
    "bytes_fetched": "source text",
    "input_tokens": "input tokens",
    "output_tokens": "output tokens",
    "elapsed_seconds": "research time",
}
# The budget field that limits each counter (bytes are limited per run).
_LIMIT_FIELDS: dict[str, str] = {
    **{name: name for name in LIMIT_LABELS},
    "bytes_fetched": "bytes_per_run",
}


class OutcomeKey(StrEnum):
    """Where a run stands, for filters and programs; every run has exactly one."""

    ACTIVE = "active"
    AWAITING_APPROVAL = "awaiting_approval"
    PAUSED = "paused"
    COMPLETED = "completed"
    PARTIAL_BUDGET = "partial_budget"
    PARTIAL_NOTHING_NEW = "partial_nothing_new"
    PARTIAL_NO_SOURCES = "partial_no_sources"
    PARTIAL_UNUSABLE_DECISIONS = "partial_unusable_decisions"
    # A partial report whose stop reason was never recorded.
    PARTIAL = "partial"
    FAILED_PROVIDER_OUTAGE = "failed_provider_outage"
    FAILED_WORKER_ERROR = "failed_worker_error"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class Outcome:
    """How a run stands: ``key`` for programs, ``label`` for the badge, ``sentence`` for
    the banner (what happened and what would help; empty while work is in progress) and
    ``detail``, the run's own recorded reason when it says more than the sentence."""

    key: OutcomeKey
    label: str
    sentence: str = ""
    detail: str = ""
    stop_reason: str = ""
    stop_limit: str = ""

    @property
    def partial(self) -> bool:
        """Whether the run ended with a partial report."""
        return self.key.value.startswith("partial")

    @property
    def failed(self) -> bool:
        """Whether the run failed (a retry is offered)."""
        return self.key.value.startswith("failed")

    @property
    def budget_stop(self) -> bool:
        """Whether a budget limit stopped the run (so more budget can continue it)."""
        return self.key is OutcomeKey.PARTIAL_BUDGET

    def as_data(self) -> dict[str, str]:
        """The outcome as plain data (the run document, later the API)."""
        return {
            "key": self.key.value,
            "label": self.label,
            "sentence": self.sentence,
            "detail": self.detail,
            "stop_reason": self.stop_reason,
            "stop_limit": self.stop_limit,
        }


def _stop(value: str | None) -> StopReason | None:
    try:
        return StopReason(value) if value else None
    except ValueError:
        return None


def _status(value: RunStatus | str) -> RunStatus:
    try:
        return RunStatus(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a run status.") from None


def _amount(limit: str, budget: Mapping[str, Any]) -> str:
    value = budget.get(_LIMIT_FIELDS[limit])
    if not isinstance(value, int | float):
        return ""
    if limit == "elapsed_seconds":
        minutes = value / 60
        return f"{minutes:g} min" if minutes >= 1 else f"{value:g} s"
    if limit == "bytes_fetched":
        return f"{int(value):,} bytes"
    return f"{int(value):,}"


def limit_phrase(limit: str, budget: Mapping[str, Any] | None = None) -> str:
    """The limit a budget stop hit, in the budget panel's words: "rounds (12)"."""
    label = LIMIT_LABELS.get(limit)
    if label is None:
        return ""
    amount = _amount(limit, budget or {})
    phrase = f"{label} ({amount})" if amount else label
    if limit == "searches":
        # Research stops on searches only when no source can be read within budget either.
        fetched = _amount("fetched_sources", budget or {})
        phrase += f" and sources read ({fetched})" if fetched else " and sources read"
    return phrase


_NOT_MORE_BUDGET = "More budget would not help"


def _partial(
    stop: StopReason | None, limit: str, budget: Mapping[str, Any]
) -> tuple[OutcomeKey, str, str]:
    if stop in BUDGET_STOPS:
        phrase = limit_phrase(
            limit or ("elapsed_seconds" if stop is StopReason.TIME_EXHAUSTED else ""), budget
        )
        where = f"the run's limit on {phrase}" if phrase else "one of the run's budget limits"
        return (
            OutcomeKey.PARTIAL_BUDGET,
            "Partial: budget limit reached",
            f"Research stopped at {where}, so a partial report was written. Increase the "
            "budget to continue from where it stopped.",
        )
    if stop in NOTHING_NEW_STOPS:
        why = (
            "three rounds in a row found nothing new"
            if stop is StopReason.DIMINISHING_RETURNS
            else "only repeats of earlier searches were left to try"
        )
        return (
            OutcomeKey.PARTIAL_NOTHING_NEW,
            "Partial: nothing new found",
            f"Research stopped because {why}, so a partial report was written. "
            f"{_NOT_MORE_BUDGET}; a new run with a narrower or differently worded question "
            "might.",
        )
    if stop is StopReason.NO_READABLE_SOURCES:
        return (
            OutcomeKey.PARTIAL_NO_SOURCES,
            "Partial: no readable sources",
            "Research stopped because no source could be read: the searches found nothing "
            "that could be fetched, or every page found was blocked, failed or in a format "
            f"that cannot be read. {_NOT_MORE_BUDGET}; allow more sites in the source policy "
            "or word the question differently in a new run.",
        )
    if stop is StopReason.INVALID_DECISIONS:
        return (
            OutcomeKey.PARTIAL_UNUSABLE_DECISIONS,
            "Partial: unusable decisions",
            "Research stopped because the decision model twice answered with decisions that "
            "could not be used; the report was written from the evidence gathered so far. "
            f"{_NOT_MORE_BUDGET}; check the model configuration.",
        )
    return (
        OutcomeKey.PARTIAL,
        "Partial report",
        "Research stopped before every planned question was covered, so a partial report "
        "was written.",
    )


def _failed(stop: StopReason | None) -> tuple[OutcomeKey, str, str]:
    if stop is StopReason.PROVIDER_FAILURES:
        return (
            OutcomeKey.FAILED_PROVIDER_OUTAGE,
            "Failed: provider outage",
            "A search, fetch or model provider kept failing, so the run stopped. Retry once "
            "it answers again; the run continues from its last completed step.",
        )
    if stop is StopReason.WORKER_ERROR:
        return (
            OutcomeKey.FAILED_WORKER_ERROR,
            "Failed: internal error",
            "The worker hit an unexpected error on several attempts in a row, so the run was "
            "stopped instead of being tried again and again. Retry to continue from the last "
            "completed step; if it fails again, tell whoever runs this server (the error is "
            "in its log).",
        )
    return OutcomeKey.FAILED, "Failed", "The run failed. Retry to run the failed phase again."


def run_outcome(
    status: RunStatus | str,
    stop_reason: str | None = None,
    stop_limit: str | None = None,
    *,
    budget: Mapping[str, Any] | None = None,
    detail: str = "",
) -> Outcome:
    """Describe a run from its status, stop reason and stop limit (a budget counter).

    ``budget`` (the run's budget as a mapping) lets a budget stop name the limit's size;
    ``detail`` is the run's own recorded reason (its failure or stop sentence), kept when
    it says more than the outcome's sentence. A stop reason that does not belong to the
    status (a cancelled run that had stopped before) is ignored.
    """
    current = _status(status)
    stop = _stop(stop_reason)
    limit = stop_limit if stop_limit in LIMIT_LABELS else ""
    detail = " ".join((detail or "").split())
    facts = {"stop_reason": stop.value if stop else "", "stop_limit": limit}
    if current is _S.BUDGET_EXHAUSTED:
        key, label, sentence = _partial(stop, limit, budget or {})
        # A known stop reason says it all; without one the run's own sentence is the best
        # explanation there is.
        if key is OutcomeKey.PARTIAL and detail:
            sentence = detail
        return Outcome(key, label, sentence, "", **facts)
    if current is _S.FAILED:
        key, label, sentence = _failed(stop)
        return Outcome(key, label, sentence, detail, **facts)
    if current is _S.COMPLETED:
        return Outcome(
            OutcomeKey.COMPLETED, STATUS_LABELS[current], "The report is ready.", "", **facts
        )
    if current is _S.CANCELLED:
        return Outcome(OutcomeKey.CANCELLED, STATUS_LABELS[current], detail)
    if current is _S.PAUSED:
        return Outcome(OutcomeKey.PAUSED, STATUS_LABELS[current])
    if current is _S.AWAITING_APPROVAL:
        return Outcome(
            OutcomeKey.AWAITING_APPROVAL, STATUS_LABELS[current], "The plan is ready for review."
        )
    return Outcome(OutcomeKey.ACTIVE, STATUS_LABELS[current])


def outcome_controls(status: RunStatus | str, stop_reason: str | None = None) -> frozenset[Control]:
    """The controls worth offering: those legal in ``status``, except that a run that ended
    is never offered Cancel and a partial run is offered more budget only when a budget limit
    stopped it. (A partial run whose stop
    reason was never recorded keeps the offer: nothing says more budget would not help.)"""
    controls = allowed_controls(status)
    if _status(status) in (_S.BUDGET_EXHAUSTED, _S.FAILED):
        # The run has ended (with a partial report, or failed): cancelling it would only
        # relabel a finished run, so the pages offer the way forward instead.
        controls = controls - {Control.CANCEL}
    stop = _stop(stop_reason)
    if _status(status) is _S.BUDGET_EXHAUSTED and stop is not None and stop not in BUDGET_STOPS:
        controls = controls - {Control.INCREASE_BUDGET}
    return controls


@dataclass(frozen=True)
class OutcomeFilter:
    """One choice of the dashboard's outcome filter: runs in ``statuses`` whose stop reason
    is one of ``stop_reasons`` (any stop reason when ``None``)."""

    key: str
    label: str
    statuses: frozenset[RunStatus]
    stop_reasons: frozenset[StopReason] | None = None


OUTCOME_FILTERS: tuple[OutcomeFilter, ...] = (
    OutcomeFilter(
        OutcomeKey.ACTIVE.value,
        "In progress",
        frozenset({_S.CREATED, _S.PLANNING, _S.QUEUED, _S.RESEARCHING, _S.SYNTHESIZING}),
    ),
    OutcomeFilter(
        OutcomeKey.AWAITING_APPROVAL.value, "Awaiting approval", frozenset({_S.AWAITING_APPROVAL})
    ),
    OutcomeFilter(OutcomeKey.PAUSED.value, "Paused", frozenset({_S.PAUSED})),
    OutcomeFilter(OutcomeKey.COMPLETED.value, "Completed", frozenset({_S.COMPLETED})),
    OutcomeFilter(
        OutcomeKey.PARTIAL.value, "Partial report (any reason)", frozenset({_S.BUDGET_EXHAUSTED})
    ),
    OutcomeFilter(
        OutcomeKey.PARTIAL_BUDGET.value,
        "Partial: budget limit reached",
        frozenset({_S.BUDGET_EXHAUSTED}),
        BUDGET_STOPS,
    ),
    OutcomeFilter(
        OutcomeKey.PARTIAL_NOTHING_NEW.value,
        "Partial: nothing new found",
        frozenset({_S.BUDGET_EXHAUSTED}),
        NOTHING_NEW_STOPS,
    ),
    OutcomeFilter(
        OutcomeKey.PARTIAL_NO_SOURCES.value,
        "Partial: no readable sources",
        frozenset({_S.BUDGET_EXHAUSTED}),
        frozenset({StopReason.NO_READABLE_SOURCES}),
    ),
    OutcomeFilter(
        OutcomeKey.PARTIAL_UNUSABLE_DECISIONS.value,
        "Partial: unusable decisions",
        frozenset({_S.BUDGET_EXHAUSTED}),
        frozenset({StopReason.INVALID_DECISIONS}),
    ),
    OutcomeFilter(OutcomeKey.FAILED.value, "Failed (any reason)", frozenset({_S.FAILED})),
    OutcomeFilter(
        OutcomeKey.FAILED_PROVIDER_OUTAGE.value,
        "Failed: provider outage",
        frozenset({_S.FAILED}),
        frozenset({StopReason.PROVIDER_FAILURES}),
    ),
    OutcomeFilter(
        OutcomeKey.FAILED_WORKER_ERROR.value,
        "Failed: internal error",
        frozenset({_S.FAILED}),
        frozenset({StopReason.WORKER_ERROR}),
    ),
    OutcomeFilter(OutcomeKey.CANCELLED.value, "Cancelled", frozenset({_S.CANCELLED})),
)
