"""The reaper: every worker process re-sends runs whose worker died or whose message was lost.

It is a Dramatiq middleware so it runs wherever workers run — ``rundramatiq`` processes
and the embedded worker alike — and it starts a graceful hand-over on shutdown.
"""

from __future__ import annotations

import logging
import threading

import dramatiq
from django.conf import settings
from django.db import close_old_connections

logger = logging.getLogger(__name__)

# Set when this worker process begins a graceful shutdown: heartbeats then release leases
# at the next safe point instead of renewing them. (Kept here, free of model imports,
# because Dramatiq loads this middleware before Django's models are ready.)
SHUTTING_DOWN = threading.Event()


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
        # Imported here: actors pull in the whole research stack, which must not load
        # while Dramatiq is still building the broker this middleware belongs to.
        from research.actors import reap_once

        while not self._stop.wait(settings.RESEARCH_REAPER_INTERVAL_SECONDS):
            try:
                close_old_connections()
                reap_once()
            except Exception:  # the reaper must outlive a database hiccup
                logger.warning("The run reaper failed once; it will try again.", exc_info=True)
            finally:
                close_old_connections()
