import pytest

from research.engine.states import (
    TRANSITIONS,
    Control,
    IllegalTransition,
    RunStatus,
    allowed_controls,
    can_pause,
    check_transition,
    is_legal_transition,
    is_terminal,
    resume_target,
    retry_target,
)

S = RunStatus

HAPPY_PATH = [
    S.CREATED,
    S.PLANNING,
    S.AWAITING_APPROVAL,
    S.QUEUED,
    S.RESEARCHING,
    S.SYNTHESIZING,
    S.COMPLETED,
]


def test_happy_path_is_legal_step_by_step() -> None:
    for current, target in zip(HAPPY_PATH, HAPPY_PATH[1:], strict=False):
        check_transition(current, target)


@pytest.mark.parametrize("status", [s for s in S if s not in (S.COMPLETED, S.CANCELLED)])
def test_every_non_terminal_run_can_be_cancelled(status: RunStatus) -> None:
    check_transition(status, S.CANCELLED)


@pytest.mark.parametrize(
    "status",
    [S.CREATED, S.PLANNING, S.AWAITING_APPROVAL, S.QUEUED, S.RESEARCHING, S.SYNTHESIZING],
)
def test_working_and_waiting_runs_can_be_paused(status: RunStatus) -> None:
    assert can_pause(status)
    check_transition(status, S.PAUSED)


@pytest.mark.parametrize("status", [S.PAUSED, S.FAILED, S.BUDGET_EXHAUSTED, S.COMPLETED])
def test_stopped_runs_cannot_be_paused(status: RunStatus) -> None:
    assert not can_pause(status)
    with pytest.raises(IllegalTransition):
        check_transition(status, S.PAUSED)


@pytest.mark.parametrize("status", [S.PLANNING, S.RESEARCHING, S.SYNTHESIZING])
def test_working_phases_can_fail(status: RunStatus) -> None:
    check_transition(status, S.FAILED)


@pytest.mark.parametrize("status", [S.CREATED, S.AWAITING_APPROVAL, S.QUEUED, S.PAUSED])
def test_idle_phases_cannot_fail(status: RunStatus) -> None:
    assert not is_legal_transition(status, S.FAILED)


def test_only_research_and_synthesis_can_exhaust_the_budget() -> None:
    sources = {s for s in S if S.BUDGET_EXHAUSTED in TRANSITIONS[s]}
    assert sources == {S.RESEARCHING, S.SYNTHESIZING}


def test_budget_exhausted_run_is_requeued_after_a_budget_increase() -> None:
    check_transition(S.BUDGET_EXHAUSTED, S.QUEUED)
    assert Control.INCREASE_BUDGET in allowed_controls(S.BUDGET_EXHAUSTED)


@pytest.mark.parametrize("status", [S.COMPLETED, S.CANCELLED])
def test_terminal_runs_never_change(status: RunStatus) -> None:
    assert is_terminal(status)
    for target in S:
        assert not is_legal_transition(status, target)


def test_illegal_transition_message_is_a_sentence() -> None:
    with pytest.raises(IllegalTransition) as caught:
        check_transition(S.QUEUED, S.COMPLETED)
    assert str(caught.value) == "A run that is queued cannot become completed."
    assert caught.value.current is S.QUEUED
    assert caught.value.target is S.COMPLETED


def test_illegal_transition_from_terminal_state_says_it_is_final() -> None:
    with pytest.raises(IllegalTransition, match="can no longer change"):
        check_transition("completed", "researching")


def test_unknown_status_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="'exploded' is not a run status"):
        check_transition("exploded", "queued")


@pytest.mark.parametrize(
    ("paused_in", "resumes_to"),
    [
        (S.RESEARCHING, S.QUEUED),
        (S.QUEUED, S.QUEUED),
        (S.SYNTHESIZING, S.SYNTHESIZING),
        (S.PLANNING, S.PLANNING),
        (S.AWAITING_APPROVAL, S.AWAITING_APPROVAL),
    ],
)
def test_paused_run_resumes_into_its_phase(paused_in: RunStatus, resumes_to: RunStatus) -> None:
    assert resume_target(paused_in) is resumes_to
    check_transition(S.PAUSED, resumes_to)


@pytest.mark.parametrize(
    ("failed_in", "retries_in"),
    [(S.PLANNING, S.PLANNING), (S.RESEARCHING, S.QUEUED), (S.SYNTHESIZING, S.SYNTHESIZING)],
)
def test_retry_restarts_the_failed_phase(failed_in: RunStatus, retries_in: RunStatus) -> None:
    assert retry_target(failed_in) is retries_in
    check_transition(S.FAILED, retries_in)


def test_a_run_cannot_have_failed_while_queued() -> None:
    with pytest.raises(ValueError, match="cannot fail while queued"):
        retry_target(S.QUEUED)


def test_refinement_returns_a_paused_run_to_planning() -> None:
    assert Control.REFINE in allowed_controls(S.PAUSED)
    check_transition(S.PAUSED, S.PLANNING)
    check_transition(S.PLANNING, S.AWAITING_APPROVAL)


def test_controls_follow_the_status() -> None:
    assert allowed_controls(S.AWAITING_APPROVAL) >= {Control.APPROVE, Control.EDIT_PLAN}
    assert Control.PAUSE in allowed_controls(S.RESEARCHING)
    assert Control.RESUME in allowed_controls(S.PAUSED)
    assert Control.RETRY in allowed_controls(S.FAILED)
    assert allowed_controls(S.CANCELLED) == frozenset()
    assert Control.PAUSE not in allowed_controls(S.COMPLETED)


def test_every_status_has_a_transition_table_entry() -> None:
    assert set(TRANSITIONS) == set(S)
