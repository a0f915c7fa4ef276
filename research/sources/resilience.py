"""Politeness and persistence: rate limits per key and retries with backoff.

Both take their clock, sleep and randomness as arguments so tests run them
in zero wall time and check the exact delays.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeVar

from research.engine.ports import AcquisitionError
from research.sources.errors import SourceError

T = TypeVar("T")

ErrorClass = Literal["retryable", "permanent", "blocked", "unsupported"]


def classify_error(error: AcquisitionError) -> ErrorClass:
    """Sort an acquisition error into the four classes the retry policy distinguishes."""
    if error.kind == "blocked":
        return "blocked"
    if error.kind == "unsupported":
        return "unsupported"
    return "retryable" if error.retryable else "permanent"


class RateLimiter:
    """Keeps at least ``interval`` seconds between calls with the same key.

    Callers reserve the next free slot under a lock and sleep outside it, so
    concurrent threads hitting one domain queue up instead of bursting.
    """

    def __init__(
        self,
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.interval = interval
        self._clock = clock
        self._sleep = sleep
        self._next: dict[str, float] = {}
        self._lock = threading.Lock()

    def wait(self, key: str) -> float:
        """Block until ``key`` may be used again; return the seconds waited."""
        if self.interval <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            slot = max(now, self._next.get(key, now))
            self._next[key] = slot + self.interval
        delay = slot - now
        if delay > 0:
            self._sleep(delay)
        return delay


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``max_attempts`` tries; exponential backoff with jitter between them.

    A server's Retry-After is honoured when it asks for no more than
    ``max_retry_after`` seconds; a longer wait is not worth blocking a run for,
    so the error is returned at once.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0

    def delay(
        self, attempt: int, retry_after: float | None, rng: Callable[[], float]
    ) -> float | None:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), or None to give up."""
        backoff = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        # "Equal jitter": half fixed, half random, so retries from many workers spread out
        # without ever retrying immediately.
        jittered = backoff / 2 + rng() * backoff / 2
        if retry_after is None:
            return jittered
        if retry_after > self.max_retry_after:
            return None
        return max(retry_after, jittered)


@dataclass(frozen=True)
class AttemptWindow:
    """The time a retried operation has in all: it must be over by ``ends_at`` (a reading of
    ``clock``), and a retry is only started when, after its backoff wait, at least
    ``min_attempt_seconds`` are left, the least an attempt needs to have a chance (the
    fetcher's connect timeout: less than that and it cannot even connect in time).
    ``limit_seconds`` is the configured limit, for the message."""

    clock: Callable[[], float]
    ends_at: float
    min_attempt_seconds: float
    limit_seconds: float

    def leaves_room(self, wait: float) -> bool:
        """Whether an attempt started after waiting ``wait`` seconds still has its minimum."""
        return self.clock() + wait + self.min_attempt_seconds <= self.ends_at


def call_with_retries(
    operation: Callable[[], T],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    describe: str = "The request",
    window: AttemptWindow | None = None,
) -> T:
    """Run ``operation``; retry only retryable ``AcquisitionError``s, at most ``policy.max_attempts`` times.

    Blocked, unsupported and permanent failures are raised at once. With a
    ``window``, a retry whose backoff wait would leave less than the window's
    minimum attempt time is not started. When no retry follows, the last error
    is raised with a note saying why.
    """
    attempt = 1
    while True:
        try:
            return operation()
        except AcquisitionError as error:
            if classify_error(error) != "retryable":
                raise
            retry_after = getattr(error, "retry_after", None)
            wait = (
                policy.delay(attempt, retry_after, rng) if attempt < policy.max_attempts else None
            )
            out_of_time = wait is not None and window is not None and not window.leaves_room(wait)
            if wait is None or out_of_time:
                if out_of_time:
                    assert window is not None
                    note = (
                        f" {describe} stopped after {attempt} "
                        f"{'attempt' if attempt == 1 else 'attempts'}: the "
                        f"{window.limit_seconds:g}-second limit leaves no time for another."
                    )
                elif attempt >= policy.max_attempts and policy.max_attempts > 1:
                    note = f" {describe} gave up after {attempt} attempts."
                elif retry_after is not None and retry_after > policy.max_retry_after:
                    note = f" The server asked us to wait {retry_after:.0f} seconds, longer than we wait."
                else:
                    note = ""
                raise SourceError(
                    error.kind,
                    error.reason + note,
                    retryable=True,
                    retry_after=retry_after,
                    status=getattr(error, "status", None),
                    counts_as_fetch=error.counts_as_fetch,
                ) from error
            sleep(wait)
            attempt += 1
