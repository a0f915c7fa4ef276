"""The one way a run's status changes in the database: a compare-and-set transition.

Services (the controls people use) and the worker's store (the orchestrator) both call
``run_transition``; its side effects — the phase a paused run resumes in, clearing the stop
reason of a run that moves on, releasing the lease and stamping the end of a finished run —
are defined here, next to the legal transitions in ``research.engine.states``.
"""

from __future__ import annotations

from typing import Any

from django.utils import timezone

from research.engine.states import RunStatus, check_transition, is_terminal
from research.models import ResearchRun, ResearchStep

# Statuses whose stop reason is kept: how the run ended.
ENDED = (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED, RunStatus.FAILED)


def run_transition(
    run: ResearchRun,
    *,
    expected: str,
    to: str,
    plan_version: int | None = None,
    **fields: Any,
) -> bool:
    """Compare-and-set the run's status; returns False when it was no longer ``expected``."""
    check_transition(expected, to)
    now = timezone.now()
    rows = ResearchRun.objects.filter(pk=run.pk, status=expected)
    if plan_version is not None:
        rows = rows.filter(plan_version=plan_version)
    if to == RunStatus.PAUSED:
        fields.setdefault("resume_phase", expected)
    if to not in ENDED:
        # A stop reason says how a run ended; one that moves on (retried, given more
        # budget, cancelled) no longer has one.
        fields.setdefault("stop_reason", "")
        fields.setdefault("stop_limit", "")
    if is_terminal(to):
        fields.setdefault("completed_at", now)
        fields.setdefault("lease_owner", "")
        fields.setdefault("lease_expires_at", None)
    changed = rows.update(status=to, updated_at=now, **fields) == 1
    if changed:
        run.refresh_from_db()
    return changed


def steps_cancel_unfinished(run: ResearchRun) -> int:
    return ResearchStep.objects.filter(
        run=run, status__in=[ResearchStep.Status.PENDING, ResearchStep.Status.RUNNING]
    ).update(status=ResearchStep.Status.CANCELLED, completed_at=timezone.now())
