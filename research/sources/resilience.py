"""Politeness and persistence: rate limits per key, and retries of acquisition errors.

The retry policy and loop are :mod:`research.engine.retry` (shared with the model client);
this module decides which acquisition errors are retried and what the final error says.
Everything takes its clock, sleep and randomness as arguments so tests run it in zero wall
time and check the exact delays.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Literal, TypeVar

from research.engine.ports import AcquisitionError
from research.engine.retry import AttemptWindow, GiveUp, RetryPolicy
from research.engine.retry import call_with_retries as retry_loop
from research.sources.errors import SourceError

T = TypeVar("T")

__all__ = ["AttemptWindow", "RateLimiter", "RetryPolicy", "call_with_retries", "classify_error"]

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


def call_with_retries(
    operation: Callable[[], T],
    *,
    policy: RetryPolicy,
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    describe: str = "The request",
    window: AttemptWindow | None = None,
    operation_name: str = "",
) -> T:
    """Run ``operation``; retry only retryable ``AcquisitionError``s, at most ``policy.max_attempts`` times.

    Blocked, unsupported and permanent failures are raised at once. With a
    ``window``, a retry whose backoff wait would leave less than the window's
    minimum attempt time is not started. When no retry follows, the last error
    is raised with a note saying why.
    """

    def retryable(error: Exception) -> bool:
        return isinstance(error, AcquisitionError) and classify_error(error) == "retryable"

    def retry_after(error: Exception) -> float | None:
        return getattr(error, "retry_after", None)

    def give_up(error: Exception, attempt: int, why: GiveUp) -> Exception:
        assert isinstance(error, AcquisitionError)
        asked = retry_after(error)
        if why == "window":
            assert window is not None
            note = (
                f" {describe} stopped after {attempt} "
                f"{'attempt' if attempt == 1 else 'attempts'}: the "
                f"{window.limit_seconds:g}-second limit leaves no time for another."
            )
        elif attempt >= policy.max_attempts and policy.max_attempts > 1:
            note = f" {describe} gave up after {attempt} attempts."
        elif asked is not None and asked > policy.max_retry_after:
            note = f" The server asked us to wait {asked:.0f} seconds, longer than we wait."
        else:
            note = ""
        return SourceError(
            error.kind,
            error.reason + note,
            retryable=True,
            retry_after=asked,
            status=getattr(error, "status", None),
            counts_as_fetch=error.counts_as_fetch,
        )

    return retry_loop(
        operation,
        policy=policy,
        retryable=retryable,
        retry_after=retry_after,
        give_up=give_up,
        sleep=sleep,
        rng=rng,
        window=window,
        operation_name=operation_name,
    )
