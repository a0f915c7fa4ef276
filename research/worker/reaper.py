"""The reaper: every worker process re-sends runs whose worker died or whose message was lost.

It is a Dramatiq middleware so it runs wherever workers run — ``rundramatiq`` processes
and the embedded worker alike — and it starts a graceful hand-over on shutdown.
"""

from __future__ import annotations

import logging
import threading
import uuid

import dramatiq
from django.conf import settings
from django.db import close_old_connections

from research.worker.shutdown import SHUTTING_DOWN

logger = logging.getLogger(__name__)


class ReaperMiddleware(dramatiq.Middleware):
    """Starts the reaper thread after worker boot; releases leases on shutdown."""

    def __init__(self) -> None:
        self._stop = threading.Event()

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        SHUTTING_DOWN.clear()
        self._stop.clear()
        threading.Thread(target=self._loop, name="research-reaper", daemon=True).start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        # Heartbeats now give the lease up at the next safe point, so another worker (or
        # this one after a restart) continues the run from its last checkpoint.
        SHUTTING_DOWN.set()
        self._stop.set()

    def _loop(self) -> None:
        while not self._stop.wait(settings.RESEARCH_REAPER_INTERVAL_SECONDS):
            try:
                close_old_connections()
                reap_once()
            except Exception:  # the reaper must outlive a database hiccup
                logger.warning("The run reaper failed once; it will try again.", exc_info=True)
            finally:
                close_old_connections()


def reap_once() -> list[str]:
    """Re-send every run whose worker died, whose message was lost or whose last attempt
    ended in an error (one not yet counted out); returns their ids."""
    # Imported here: actors pull in the whole research stack (and the models), which must not
    # load while Dramatiq is still building the broker this middleware belongs to.
    from research import telemetry
    from research.models import ResearchRun
    from research.worker.actors import advance_run, answer_question
    from research.worker.answers import stale_turns
    from research.worker.leases import stale_runs

    found = stale_runs()
    telemetry.reaped(len(found))
    crashed = dict(
        ResearchRun.objects.filter(pk__in=found, worker_attempts__gt=0).values_list(
            "pk", "worker_attempts"
        )
    )
    for run_id in found:
        attempts = crashed.get(uuid.UUID(run_id))
        if attempts:
            logger.info(
                "Re-sending run %s: worker attempt %d of %d ended in an error.",
                run_id,
                attempts,
                settings.RESEARCH_WORKER_MAX_ATTEMPTS,
            )
        else:
            logger.info("Re-enqueueing run %s: its worker is gone.", run_id)
        advance_run.send(run_id)
    for turn_id in stale_turns():
        logger.info("Re-sending question %s: its answer was never finished.", turn_id)
        answer_question.send(turn_id)
    return found
