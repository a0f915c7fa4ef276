"""The one way a run's status changes in the database: a compare-and-set transition.

Services (the controls people use) and the worker's store (the orchestrator) both call
``run_transition``; its side effects — the phase a paused run resumes in, clearing the stop
reason of a run that moves on, releasing the lease and stamping the end of a finished run —
are defined here, next to the legal transitions in ``research.engine.states``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from research import telemetry
from research.engine.states import RunStatus, check_transition, is_terminal
from research.models import ResearchRun, ResearchStep

# Statuses whose stop reason is kept: how the run ended.
ENDED = (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED, RunStatus.FAILED)
# Statuses a run stops in (for good or until a person acts); they keep the reason why.
STOPPED = (RunStatus.FAILED, RunStatus.BUDGET_EXHAUSTED, RunStatus.PAUSED)


def transition_fields(
    expected: str,
    to: str,
    *,
    now: datetime,
    reason: str = "",
    stop_reason: str = "",
    stop_limit: str = "",
    release_lease: bool = True,
) -> dict[str, Any]:
    """The columns a transition from ``expected`` to ``to`` writes: its side effects.

    * A stop reason (and the limit hit) says how a run ended; one that moves on (retried,
      given more budget, cancelled) no longer has one.
    * A paused run resumes in the phase it was paused in and has no pause request left;
      a failed run is retried in the phase that failed (``last_error`` says why); research
      that starts again resumes nothing.
    * ``reason`` (the one line a person reads) belongs to a run that stopped or ended.
    * A finished run records when it ended and gives up its lease, unless the caller holds
      the lease itself (the worker's store: its attempt releases it when it returns).
    """
    ends = to in ENDED
    fields: dict[str, Any] = {
        "status": to,
        "updated_at": now,
        "stop_reason": stop_reason if ends else "",
        "stop_limit": stop_limit if ends else "",
        "terminal_reason": reason[:200] if to in STOPPED or is_terminal(to) else "",
    }
    if to == RunStatus.PAUSED:
        fields.update(resume_phase=expected, pause_requested=False)
    elif to == RunStatus.FAILED:
        fields.update(resume_phase=expected, last_error=reason[:2000])
    elif to == RunStatus.RESEARCHING:
        fields["resume_phase"] = ""
    if is_terminal(to):
        fields["completed_at"] = now
        if release_lease:
            fields.update(lease_owner="", lease_expires_at=None)
    return fields


def transition(
    run_id: object,
    *,
    expected: str,
    to: str,
    plan_version: int | None = None,
    reason: str = "",
    stop_reason: str = "",
    stop_limit: str = "",
    release_lease: bool = True,
    **fields: Any,
) -> bool:
    """Compare-and-set the run's status on (status[, plan_version]); returns False when it
    was no longer ``expected``. ``fields`` are written too and win over the side effects
    of ``transition_fields``. Research that starts records when; a cancelled run's
    unfinished steps are cancelled with it."""
    check_transition(expected, to)
    now = timezone.now()
    values = transition_fields(
        expected,
        to,
        now=now,
        reason=reason,
        stop_reason=stop_reason,
        stop_limit=stop_limit,
        release_lease=release_lease,
    )
    values.update(fields)
    rows = ResearchRun.objects.filter(pk=run_id, status=expected)
    if plan_version is not None:
        rows = rows.filter(plan_version=plan_version)
    changed = rows.update(**values) == 1
    if changed and to == RunStatus.RESEARCHING:
        ResearchRun.objects.filter(pk=run_id, started_at__isnull=True).update(started_at=now)
    if changed and to == RunStatus.CANCELLED:
        steps_cancel_unfinished(run_id)
    if changed and telemetry.metrics_on():
        created_at = (
            ResearchRun.objects.filter(pk=run_id).values_list("created_at", flat=True).first()
            if is_terminal(to)
            else None
        )
        telemetry.run_transitioned(
            expected=expected, to=to, stop_reason=stop_reason, created_at=created_at, now=now
        )
    return changed


def run_transition(
    run: ResearchRun,
    *,
    expected: str,
    to: str,
    plan_version: int | None = None,
    reason: str = "",
    **fields: Any,
) -> bool:
    """``transition`` for a loaded run (the controls people use), refreshed when it changed."""
    changed = transition(
        run.pk, expected=expected, to=to, plan_version=plan_version, reason=reason, **fields
    )
    if changed:
        run.refresh_from_db()
    return changed


def steps_cancel_unfinished(run_id: object) -> int:
    """Cancel the run's pending and running steps; returns how many."""
    return ResearchStep.objects.filter(
        run_id=run_id, status__in=[ResearchStep.Status.PENDING, ResearchStep.Status.RUNNING]
    ).update(status=ResearchStep.Status.CANCELLED, completed_at=timezone.now())
