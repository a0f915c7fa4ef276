"""Leases: which worker owns a run right now.

A worker claims a run with one conditional UPDATE (compare-and-set), renews the lease
with a heartbeat while it works, and releases it when done. A worker whose lease
expired (crash, kill -9, partition) is replaced by the reaper; every write the store
makes checks the lease first, so the old worker cannot write anything more.
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from research.engine.states import RunStatus
from research.models import ResearchRun

# Statuses in which a worker has something to do with a run.
CLAIMABLE = (
    RunStatus.CREATED,
    RunStatus.PLANNING,
    RunStatus.QUEUED,
    RunStatus.RESEARCHING,
    RunStatus.SYNTHESIZING,
    RunStatus.PAUSED,
    RunStatus.AWAITING_APPROVAL,
)
# Statuses that occupy an execution slot (the concurrency limits count these).
EXECUTING = (RunStatus.RESEARCHING, RunStatus.SYNTHESIZING)
_CLAIM_LOCK_ID = 0x5EA4C4  # PostgreSQL advisory lock serialising slot-limited claims


def new_owner_id() -> str:
    """A lease owner name that says which process holds the run (shown to staff)."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def _live_lease() -> Q:
    return Q(lease_expires_at__gt=timezone.now()) & ~Q(lease_owner="")


def _free_or_mine(owner: str) -> Q:
    return Q(lease_owner="") | Q(lease_expires_at__lte=timezone.now()) | Q(lease_owner=owner)


def executing_counts(owner_id: int) -> tuple[int, int]:
    """(this user's, everyone's) runs that hold a live lease and occupy a slot."""
    busy = ResearchRun.objects.filter(_live_lease(), status__in=EXECUTING + (RunStatus.QUEUED,))
    return busy.filter(owner_id=owner_id).count(), busy.count()


def claim_run(run_id: object, owner: str, *, needs_slot: bool) -> bool:
    """Take the lease if nobody holds a live one; True when this worker now owns the run.

    ``needs_slot`` applies the per-user and per-deployment limits on executing runs
    (research and synthesis); planning and plan revision are not limited.
    """
    now = timezone.now()
    expires = now + timedelta(seconds=settings.RESEARCH_LEASE_SECONDS)
    with transaction.atomic():
        if needs_slot:
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_xact_lock(%s)", [_CLAIM_LOCK_ID])
            run = ResearchRun.objects.filter(pk=run_id).only("owner_id").first()
            if run is None:
                return False
            mine, everyone = executing_counts(run.owner_id)
            if (
                mine >= settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER
                or everyone >= settings.RESEARCH_MAX_ACTIVE_RUNS
            ):
                return False
        claimed = (
            ResearchRun.objects.filter(pk=run_id, status__in=CLAIMABLE)
            .filter(_free_or_mine(owner))
            .update(lease_owner=owner, lease_expires_at=expires, heartbeat_at=now)
        )
    return claimed == 1


def renew_lease(run_id: object, owner: str) -> bool:
    """Extend the lease; False when it was lost (expired and taken, or released)."""
    now = timezone.now()
    return (
        ResearchRun.objects.filter(pk=run_id, lease_owner=owner, lease_expires_at__gt=now).update(
            lease_expires_at=now + timedelta(seconds=settings.RESEARCH_LEASE_SECONDS),
            heartbeat_at=now,
        )
        == 1
    )


def release_lease(run_id: object, owner: str) -> None:
    ResearchRun.objects.filter(pk=run_id, lease_owner=owner).update(
        lease_owner="", lease_expires_at=None
    )


class Heartbeat:
    """Renews a lease in the background while a worker thread is busy with a run.

    Every network and model call has its own timeout, so a live worker reaches a
    safe boundary well within a lease period; this thread covers the time in between.
    When a renewal fails the lease is gone and ``lost`` is set.
    """

    def __init__(self, run_id: object, owner: str) -> None:
        self.run_id = run_id
        self.owner = owner
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{run_id}", daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _beat(self) -> None:
        interval = max(1.0, settings.RESEARCH_LEASE_SECONDS / 3)
        try:
            while not self._stop.wait(interval):
                if not renew_lease(self.run_id, self.owner):
                    self.lost.set()
                    return
        finally:
            connection.close()


def stale_runs() -> list[str]:
    """Runs a worker should be doing but nobody holds: their lease expired, or a queued or
    just-created run, or a refinement nobody took up, whose message was lost (the embedded
    broker keeps messages in memory; a Redis broker may have been unreachable when it was
    sent)."""
    now = timezone.now()
    quiet_for = now - timedelta(seconds=settings.RESEARCH_LEASE_SECONDS)
    unheld = Q(lease_owner="") | Q(lease_expires_at__lte=now)
    working = (RunStatus.PLANNING, RunStatus.RESEARCHING, RunStatus.SYNTHESIZING)
    expired = Q(status__in=working) & unheld
    forgotten = (
        Q(status__in=(RunStatus.CREATED, RunStatus.QUEUED)) & unheld & Q(updated_at__lte=quiet_for)
    )
    # A refinement leaves the run paused or awaiting approval until a worker revises the plan.
    refinement = (
        Q(status__in=(RunStatus.PAUSED, RunStatus.AWAITING_APPROVAL))
        & ~Q(refinement_instruction="")
        & unheld
        & Q(updated_at__lte=quiet_for)
    )
    found = ResearchRun.objects.filter(expired | forgotten | refinement)
    return [str(pk) for pk in found.values_list("pk", flat=True)]
