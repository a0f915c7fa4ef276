"""The in-process Dramatiq worker of the embedded (no Redis) mode."""

from __future__ import annotations

import atexit
import logging
import threading

import dramatiq
from django.conf import settings
from django.utils.module_loading import autodiscover_modules

logger = logging.getLogger(__name__)
_lock = threading.Lock()
_worker: dramatiq.Worker | None = None


def start_embedded_worker() -> dramatiq.Worker | None:
    """Start worker threads on the stub broker once per process, if configured.

    With Redis configured, work is done by separate ``rundramatiq`` processes and
    this does nothing.
    """
    global _worker
    if not settings.EMBEDDED_WORKER:
        return None
    with _lock:
        if _worker is None:
            autodiscover_modules(*settings.DRAMATIQ_AUTODISCOVER_MODULES)
            _worker = dramatiq.Worker(
                dramatiq.get_broker(), worker_threads=settings.EMBEDDED_WORKER_THREADS
            )
            _worker.start()
            atexit.register(stop_embedded_worker)
            logger.info(
                "Started the in-process worker with %d thread(s).", settings.EMBEDDED_WORKER_THREADS
            )
    return _worker


def stop_embedded_worker() -> None:
    """Stop the embedded worker, letting running actors finish their current message."""
    global _worker
    with _lock:
        if _worker is not None:
            _worker.stop()
            _worker = None
