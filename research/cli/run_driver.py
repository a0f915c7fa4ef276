"""Running one research run inside the current process, under a lease like any worker.

The command line and the evaluation harness drive runs themselves instead of waiting for a
background worker. They take the same lease a worker takes (``research.worker.leases``), so a worker
that receives the run's message at the same moment finds it held and leaves it alone; when a
worker got there first, the driver follows the run in the database until the worker is done.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from django.db import connection, transaction

from research.engine.orchestrator import Orchestrator
from research.engine.ports import LeaseLost
from research.engine.states import RunStatus
from research.models import ResearchRun
from research.services import QueueUnavailable
from research.worker.crashes import record_crash
from research.worker.leases import Heartbeat, claim_run, new_owner_id, release_lease

logger = logging.getLogger(__name__)

OrchestratorFactory = Callable[[str], Orchestrator]

# Statuses in which there is work for a worker; in any other the run waits for a person or
# is finished.
ACTIVE_STATUSES = frozenset(
    {
        RunStatus.CREATED,
        RunStatus.PLANNING,
        RunStatus.QUEUED,
        RunStatus.RESEARCHING,
        RunStatus.SYNTHESIZING,
    }
)
# Work that occupies an execution slot (the per-user and per-deployment limits).
SLOT_STATUSES = frozenset({RunStatus.QUEUED, RunStatus.RESEARCHING, RunStatus.SYNTHESIZING})


def default_orchestrator(lease_owner: str) -> Orchestrator:
    """The orchestrator a background worker would use: database, configured model, web."""
    from research.worker.actors import build_orchestrator

    return build_orchestrator(lease_owner=lease_owner)


class RunDriver:
    """Advances one run in this process until it needs a person or is finished.

    Start or change the run through :meth:`take`, which applies a service (create, approve,
    resume) and takes the lease in the same transaction, so a background worker woken by
    that commit finds the run held. ``poll_seconds`` is how often the driver looks again
    while someone else holds the run or no execution slot is free.
    """

    def __init__(
        self,
        *,
        factory: OrchestratorFactory = default_orchestrator,
        poll_seconds: float = 0.5,
        run_id: str | None = None,
    ) -> None:
        self.factory = factory
        self.owner = new_owner_id()
        self.poll_seconds = poll_seconds
        self.run_id = str(run_id) if run_id else ""
        self.waiting_for_slot = threading.Event()
        self.followed_another_worker = threading.Event()
        self._stop = threading.Event()

    def take(self, change: Callable[[], ResearchRun]) -> ResearchRun:
        """Apply ``change`` (a service that may enqueue work on commit) and claim the run it
        returns in the same transaction; the driver then drives that run."""
        try:
            with transaction.atomic():
                run = change()
                claim_run(run.pk, self.owner, needs_slot=run.status in SLOT_STATUSES)
        except QueueUnavailable:
            pass  # committed; this process drives the run itself, the message was a spare
        self.run_id = str(run.pk)
        if run.status not in ACTIVE_STATUSES:
            # The run now waits for a person; nobody should hold it meanwhile.
            release_lease(self.run_id, self.owner)
        run.refresh_from_db()
        return run

    def status(self) -> str:
        return ResearchRun.objects.values_list("status", flat=True).get(pk=self.run_id)

    def stop(self) -> None:
        """Stop following a run another worker holds (the run itself is not touched)."""
        self._stop.set()

    def run(self) -> str:
        """Advance the run; returns the status it stops in (waiting for a person, stopped or
        finished). Safe to call from a thread: it closes its database connection on return."""
        try:
            return self._loop()
        finally:
            if threading.current_thread() is not threading.main_thread():
                connection.close()

    def _loop(self) -> str:
        last: str | None = None
        while True:
            status = self.status()
            if status not in ACTIVE_STATUSES or self._stop.is_set():
                return status
            if claim_run(self.run_id, self.owner, needs_slot=status in SLOT_STATUSES):
                self.waiting_for_slot.clear()
                try:
                    with Heartbeat(self.run_id, self.owner):
                        reached = str(self.factory(self.owner).advance(self.run_id))
                except LeaseLost as exc:
                    logger.info("Another worker took over run %s: %s", self.run_id, exc)
                    self.followed_another_worker.set()
                    reached = self.status()
                except Exception as exc:
                    # Counted like a worker's crash, so the run shows it and a worker that
                    # picks the run up later fails it after too many in a row.
                    record_crash(self.run_id, self.owner, exc)
                    raise
                finally:
                    release_lease(self.run_id, self.owner)
                if reached == last and reached in ACTIVE_STATUSES:
                    # Nothing moved (a control raced with us); look again after a pause.
                    self._stop.wait(self.poll_seconds)
                last = reached
                continue
            if status in SLOT_STATUSES and not _held_by_someone(self.run_id):
                self.waiting_for_slot.set()
            else:
                self.followed_another_worker.set()
            self._stop.wait(self.poll_seconds)


def _held_by_someone(run_id: str) -> bool:
    from django.utils import timezone

    return (
        ResearchRun.objects.filter(pk=run_id, lease_expires_at__gt=timezone.now())
        .exclude(lease_owner="")
        .exists()
    )
