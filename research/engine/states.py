"""The run lifecycle as data: statuses, legal transitions, resume and retry targets.

The database layer performs every transition as a compare-and-set on (status, plan_version);
this module only answers whether a transition is legal and where a paused or failed run goes
next, so the same rules hold for the worker, the views and the admin.
"""

from enum import StrEnum


class RunStatus(StrEnum):
    """Every status a research run can be in."""

    CREATED = "created"
    PLANNING = "planning"
    AWAITING_APPROVAL = "awaiting_approval"
    QUEUED = "queued"
    RESEARCHING = "researching"
    SYNTHESIZING = "synthesizing"
    COMPLETED = "completed"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    FAILED = "failed"
    BUDGET_EXHAUSTED = "budget_exhausted"


class Control(StrEnum):
    """User controls a run page can offer."""

    APPROVE = "approve"
    EDIT_PLAN = "edit_plan"
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    REFINE = "refine"
    RETRY = "retry"
    INCREASE_BUDGET = "increase_budget"


_S = RunStatus

TERMINAL_STATUSES: frozenset[RunStatus] = frozenset({_S.COMPLETED, _S.CANCELLED})

# Statuses in which a worker is (or is about to be) doing something that a pause can interrupt.
# Pausing a run that is already stopped (paused, failed, budget_exhausted) would mean nothing.
PAUSABLE_STATUSES: frozenset[RunStatus] = frozenset(
    {_S.CREATED, _S.PLANNING, _S.AWAITING_APPROVAL, _S.QUEUED, _S.RESEARCHING, _S.SYNTHESIZING}
)

TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    _S.CREATED: frozenset({_S.PLANNING, _S.PAUSED, _S.CANCELLED}),
    # awaiting_approval -> planning is a refinement requested before approval.
    _S.PLANNING: frozenset({_S.AWAITING_APPROVAL, _S.PAUSED, _S.CANCELLED, _S.FAILED}),
    _S.AWAITING_APPROVAL: frozenset({_S.QUEUED, _S.PLANNING, _S.PAUSED, _S.CANCELLED}),
    _S.QUEUED: frozenset({_S.RESEARCHING, _S.PAUSED, _S.CANCELLED}),
    _S.RESEARCHING: frozenset(
        {_S.SYNTHESIZING, _S.PAUSED, _S.CANCELLED, _S.FAILED, _S.BUDGET_EXHAUSTED}
    ),
    _S.SYNTHESIZING: frozenset(
        {_S.COMPLETED, _S.BUDGET_EXHAUSTED, _S.PAUSED, _S.CANCELLED, _S.FAILED}
    ),
    # paused -> planning is a refinement (or a resume of a paused planning phase);
    # paused -> awaiting_approval resumes a run paused while waiting for approval.
    _S.PAUSED: frozenset(
        {_S.QUEUED, _S.SYNTHESIZING, _S.PLANNING, _S.AWAITING_APPROVAL, _S.CANCELLED}
    ),
    _S.FAILED: frozenset({_S.PLANNING, _S.QUEUED, _S.SYNTHESIZING, _S.CANCELLED}),
    _S.BUDGET_EXHAUSTED: frozenset({_S.QUEUED, _S.CANCELLED}),
    _S.COMPLETED: frozenset(),
    _S.CANCELLED: frozenset(),
}

# Where a run paused in a given status resumes. Research resumes through the queue so that a
# worker claims it again; synthesis resumes directly because it needs no research slot.
RESUME_TARGETS: dict[RunStatus, RunStatus] = {
    _S.CREATED: _S.PLANNING,
    _S.PLANNING: _S.PLANNING,
    _S.AWAITING_APPROVAL: _S.AWAITING_APPROVAL,
    _S.QUEUED: _S.QUEUED,
    _S.RESEARCHING: _S.QUEUED,
    _S.SYNTHESIZING: _S.SYNTHESIZING,
}

# Where a retry of a failed phase starts.
RETRY_TARGETS: dict[RunStatus, RunStatus] = {
    _S.PLANNING: _S.PLANNING,
    _S.RESEARCHING: _S.QUEUED,
    _S.SYNTHESIZING: _S.SYNTHESIZING,
}

_CONTROLS: dict[RunStatus, frozenset[Control]] = {
    _S.CREATED: frozenset({Control.PAUSE, Control.CANCEL}),
    _S.PLANNING: frozenset({Control.PAUSE, Control.CANCEL}),
    _S.AWAITING_APPROVAL: frozenset(
        {Control.APPROVE, Control.EDIT_PLAN, Control.REFINE, Control.CANCEL}
    ),
    _S.QUEUED: frozenset({Control.PAUSE, Control.CANCEL}),
    _S.RESEARCHING: frozenset({Control.PAUSE, Control.REFINE, Control.CANCEL}),
    _S.SYNTHESIZING: frozenset({Control.PAUSE, Control.CANCEL}),
    _S.PAUSED: frozenset({Control.RESUME, Control.REFINE, Control.CANCEL}),
    _S.FAILED: frozenset({Control.RETRY, Control.CANCEL}),
    _S.BUDGET_EXHAUSTED: frozenset({Control.INCREASE_BUDGET, Control.CANCEL}),
    # Refining a completed run starts a new run that references it; the report is never mutated.
    _S.COMPLETED: frozenset({Control.REFINE}),
    _S.CANCELLED: frozenset(),
}


class IllegalTransition(Exception):
    """A status change the lifecycle does not allow; the message is a readable sentence."""

    def __init__(self, current: RunStatus, target: RunStatus) -> None:
        self.current = current
        self.target = target
        if current in TERMINAL_STATUSES:
            message = (
                f"The run is {_label(current)} and can no longer change; "
                f"it cannot become {_label(target)}."
            )
        else:
            message = f"A run that is {_label(current)} cannot become {_label(target)}."
        super().__init__(message)


def _label(status: RunStatus) -> str:
    return status.value.replace("_", " ")


def _status(value: RunStatus | str) -> RunStatus:
    try:
        return RunStatus(value)
    except ValueError:
        raise ValueError(f"{value!r} is not a run status.") from None


def is_legal_transition(current: RunStatus | str, target: RunStatus | str) -> bool:
    """Return whether the lifecycle allows moving from ``current`` to ``target``."""
    return _status(target) in TRANSITIONS[_status(current)]


def check_transition(current: RunStatus | str, target: RunStatus | str) -> None:
    """Raise :class:`IllegalTransition` unless ``current`` → ``target`` is legal."""
    source, destination = _status(current), _status(target)
    if destination not in TRANSITIONS[source]:
        raise IllegalTransition(source, destination)


def is_terminal(status: RunStatus | str) -> bool:
    """Completed and cancelled runs never change again."""
    return _status(status) in TERMINAL_STATUSES


def can_pause(status: RunStatus | str) -> bool:
    """Whether a pause request makes sense for a run in ``status``."""
    return _status(status) in PAUSABLE_STATUSES


def resume_target(paused_from: RunStatus | str) -> RunStatus:
    """The status a paused run returns to, given the status it was paused in (its resume phase)."""
    phase = _status(paused_from)
    try:
        return RESUME_TARGETS[phase]
    except KeyError:
        raise ValueError(f"A run cannot have been paused while {_label(phase)}.") from None


def retry_target(failed_in: RunStatus | str) -> RunStatus:
    """The status a failed run restarts in, given the phase that failed."""
    phase = _status(failed_in)
    try:
        return RETRY_TARGETS[phase]
    except KeyError:
        raise ValueError(f"A run cannot fail while {_label(phase)}.") from None


def allowed_controls(status: RunStatus | str) -> frozenset[Control]:
    """The controls a user may use on a run in ``status``."""
    return _CONTROLS[_status(status)]
