"""A worker whose broker stays unreachable exits, so its supervisor restarts it.

Left alone, a Dramatiq consumer that loses Redis logs a CRITICAL line every few seconds and
retries forever: the process looks alive to a supervisor while it does nothing. This
middleware pings the broker from each worker process and, once it has been unreachable for
``WORKER_BROKER_UNREACHABLE_SECONDS``, stops the worker gracefully (leases are released at
the next safe point, as on any shutdown) and exits with ``EXIT_BROKER_UNREACHABLE``. The
``rundramatiq`` parent then stops its other processes and exits with the same status.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time

import dramatiq
from django.conf import settings
from dramatiq.brokers.redis import RedisBroker

logger = logging.getLogger(__name__)

# Dramatiq's own status for "broker connection failed" (dramatiq.cli.RET_CONNECT), so one
# code means the broker whether it failed at start-up or later; docs/deployment.md lists it.
EXIT_BROKER_UNREACHABLE = 3
# How often the broker is pinged: often enough to exit within seconds of the limit, rarely
# enough to cost nothing (one PING). Shorter limits are checked three times within the limit.
CHECK_INTERVAL_SECONDS = 5.0


def broker_reachable(broker: dramatiq.Broker) -> bool:
    """Whether a Redis broker answers a PING now (other brokers are not checked)."""
    if not isinstance(broker, RedisBroker):
        return True
    try:
        return bool(broker.client.ping())
    except Exception:  # any failure to get an answer means unreachable, whatever its type
        return False


class BrokerWatchdog(dramatiq.Middleware):
    """Exits the worker process when its Redis broker stays unreachable (see the module)."""

    def __init__(self) -> None:
        self._stop = threading.Event()

    def after_worker_boot(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        # The embedded mode's stub broker lives in this process and cannot be lost.
        if not isinstance(broker, RedisBroker):
            return
        self._stop.clear()
        threading.Thread(
            target=self._watch, args=(broker, worker), name="broker-watchdog", daemon=True
        ).start()

    def before_worker_shutdown(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        self._stop.set()

    def _watch(self, broker: dramatiq.Broker, worker: dramatiq.Worker) -> None:
        limit = settings.WORKER_BROKER_UNREACHABLE_SECONDS
        interval = min(CHECK_INTERVAL_SECONDS, limit / 3)
        down_since: float | None = None
        while not self._stop.wait(interval):
            if broker_reachable(broker):
                down_since = None
                continue
            now = time.monotonic()
            down_since = down_since if down_since is not None else now
            if now - down_since >= limit:
                self._exit(worker, round(now - down_since))
                return

    def _exit(self, worker: dramatiq.Worker, seconds: int) -> None:
        logger.critical(
            "The broker has been unreachable for %d s (WORKER_BROKER_UNREACHABLE_SECONDS is "
            "%d); this worker exits with status %d so that its supervisor restarts it.",
            seconds,
            settings.WORKER_BROKER_UNREACHABLE_SECONDS,
            EXIT_BROKER_UNREACHABLE,
        )
        try:
            # A run in progress stops at its next safe point and releases its lease; waiting
            # longer than a lease is pointless, as the lease would have expired by then.
            worker.stop(timeout=settings.RESEARCH_LEASE_SECONDS * 1000)
        except Exception:
            logger.warning("The worker did not stop cleanly; exiting anyway.", exc_info=True)
        finally:
            logging.shutdown()
            sys.stderr.flush()
            os._exit(EXIT_BROKER_UNREACHABLE)
