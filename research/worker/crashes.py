"""Unexpected errors in a worker: recorded on the run, counted, and finally a failed run.

Without this, an attempt that raised anything but ``LeaseLost`` left the run in a working
status with no lease, and the reaper sent it again every interval, forever, with nothing
to show for it. Now each such attempt is counted on the run (``worker_attempts``) with a
short, safe description of the error (``worker_error``: the exception's class and the
first line of its message, credentials removed, never a traceback — the traceback goes to
the log, once per attempt). After ``RESEARCH_WORKER_MAX_ATTEMPTS`` attempts in a row the
run becomes ``failed`` with the stop reason ``worker_error``, which the reaper never
re-sends and the person can retry. An attempt that ends normally clears the count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from research.engine.guards import StopReason
from research.engine.orchestrator import display_text
from research.engine.states import RunStatus, is_legal_transition
from research.lifecycle import run_transition
from research.models import ResearchRun

# Long enough for a class name and a useful first line, short enough for a notice.
SUMMARY_CHARS = 200

# Things an exception message may carry that must not reach a page: credentials in URLs,
# key=value secrets (connection strings, query strings, headers), bearer tokens and API
# keys in the common "sk-…" form.
_SECRETS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"://[^\s/@]+@"), "://…@"),
    (
        re.compile(
            r"(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
            r"authorization|cookie)([\"']?\s*[=:]\s*)(\"[^\"]*\"|'[^']*'|[^\s,;&)\]}]+)"
        ),
        r"\1\2…",
    ),
    (re.compile(r"(?i)\bbearer\s+[^\s\"',;)\]}]+"), "Bearer …"),
    (re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_-]{12,}"), "…"),
)

# A crash before the first transition of a phase (while created or queued) fails the run
# in the phase the worker was starting, so that a retry starts that phase again.
_PHASE_STARTED = {RunStatus.CREATED: RunStatus.PLANNING, RunStatus.QUEUED: RunStatus.RESEARCHING}


def crash_summary(error: BaseException) -> str:
    """The error's class and the first line of its message, shortened and with anything
    that looks like a credential removed: safe to store on the run and show its owner."""
    lines = str(error).strip().splitlines()
    message = lines[0] if lines else ""
    for pattern, replacement in _SECRETS:
        message = pattern.sub(replacement, message)
    name = type(error).__name__
    return display_text(f"{name}: {message}" if message else name, SUMMARY_CHARS)


@dataclass(frozen=True)
class CrashRecord:
    """What recording one crashed attempt did."""

    attempts: int
    limit: int
    failed: bool
    summary: str


def record_crash(run_id: object, owner: str, error: BaseException) -> CrashRecord | None:
    """Count an attempt of ``run_id`` by lease owner ``owner`` that ended in ``error``, and
    fail the run once ``RESEARCH_WORKER_MAX_ATTEMPTS`` attempts in a row have. Returns
    ``None`` (and changes nothing) when the run is gone or another worker holds it now.
    Call while still holding the lease."""
    summary = crash_summary(error)
    limit = settings.RESEARCH_WORKER_MAX_ATTEMPTS
    with transaction.atomic():
        run = ResearchRun.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.lease_owner != owner:
            return None
        attempts = run.worker_attempts + 1
        ResearchRun.objects.filter(pk=run.pk).update(
            worker_attempts=attempts, worker_error=summary, updated_at=timezone.now()
        )
        failed = attempts >= limit and _fail(run, attempts, summary)
    return CrashRecord(attempts=attempts, limit=limit, failed=failed, summary=summary)


def _fail(run: ResearchRun, attempts: int, summary: str) -> bool:
    phase = _PHASE_STARTED.get(RunStatus(run.status), RunStatus(run.status))
    if not is_legal_transition(phase, RunStatus.FAILED):
        # Paused or waiting for approval: nobody re-sends it, so it cannot loop; the count
        # and the error stay on the run for the person to see.
        return False
    if phase != run.status and not run_transition(run, expected=run.status, to=phase):
        return False
    reason = f"The worker hit an unexpected error {attempts} times in a row: {summary}"
    return run_transition(
        run,
        expected=phase,
        to=RunStatus.FAILED,
        resume_phase=phase,
        last_error=reason,
        terminal_reason=display_text(reason, 200),
        stop_reason=StopReason.WORKER_ERROR.value,
        stop_limit="",
    )


def clear_crashes(run_id: object) -> None:
    """An attempt ended normally: earlier crashes no longer count against the run."""
    ResearchRun.objects.filter(pk=run_id, worker_attempts__gt=0).update(
        worker_attempts=0, worker_error=""
    )
