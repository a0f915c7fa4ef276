"""Handing work to the background: the message that asks a worker to advance a run.

Services call ``enqueue_advance`` inside their transaction; the message is sent only after
commit, so a worker never sees a change that was rolled back.
"""

from __future__ import annotations

import logging

import dramatiq.errors
import redis.exceptions
from django.db import transaction

from research.worker.actors import advance_run, answer_question

logger = logging.getLogger(__name__)

# What a broker client raises when the broker cannot be reached: Dramatiq's own connection
# errors (RabbitMQ), redis-py's (the Redis broker does not wrap them) and socket errors.
BROKER_ERRORS = (
    dramatiq.errors.BrokerConnectionError,
    redis.exceptions.ConnectionError,
    redis.exceptions.TimeoutError,
    OSError,
)


class QueueUnavailable(Exception):
    """The change is saved but the message that starts the work could not be queued: the
    broker is unreachable. Nothing is lost: the reaper of any worker re-sends runs whose
    message never arrived once the broker is back (``research.worker.leases.stale_runs``)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        super().__init__(
            "Saved; the work queue cannot be reached right now, so it will start when the "
            "queue is back."
        )


def enqueue_advance(run_id: object) -> None:
    """Send the run to a worker after commit. When the broker refuses the message,
    ``QueueUnavailable`` is raised from the commit (the transaction is committed by then), so
    the caller can say the work starts later instead of failing."""
    transaction.on_commit(lambda: send_advance(str(run_id)))


def send_advance(run_id: str) -> None:
    try:
        advance_run.send(run_id)
    except BROKER_ERRORS as exc:
        logger.warning(
            "Could not queue run %s (%s: %s); the reaper sends it when the broker is back.",
            run_id,
            type(exc).__name__,
            exc,
        )
        raise QueueUnavailable(run_id) from None


def enqueue_answer(turn_id: object) -> None:
    """Send a waiting question to a worker after commit. A broker that refuses the message is
    logged, not raised: the question is saved and the reaper sends it once the broker is back
    (``research.worker.answers.stale_turns``)."""
    transaction.on_commit(lambda: send_answer(str(turn_id)))


def send_answer(turn_id: str) -> None:
    try:
        answer_question.send(turn_id)
    except BROKER_ERRORS as exc:
        logger.warning(
            "Could not queue question %s (%s); the reaper sends it when the broker is back.",
            turn_id,
            exc,
        )
