"""The retry policy: how long to wait between attempts, what a server's Retry-After means,
and the one retry loop that fetching (``research/sources``) and the model client
(``research/llm``) both use.

It takes its sleep and randomness as arguments, so tests run it in zero wall time and check
the exact delays.
"""

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeVar

from research.engine import observe

T = TypeVar("T")

# Why no further attempt follows: the attempts are used up, the wait the policy would need is
# longer than it accepts, or the caller's time window has no room for another attempt.
GiveUp = Literal["attempts", "wait", "window"]


def retry_after_seconds(
    headers: Mapping[str, str] | None, *, now: datetime | None = None
) -> float | None:
    """The wait a response's ``Retry-After`` (or ``retry-after-ms``) header asks for, in
    seconds: a number of seconds or an HTTP date. ``None`` when there is no usable header."""
    if headers is None:
        return None
    milliseconds = headers.get("retry-after-ms")
    if milliseconds:
        try:
            return max(0.0, float(milliseconds) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


@dataclass(frozen=True)
class RetryPolicy:
    """At most ``max_attempts`` tries, with exponential backoff between them (``base_delay``
    doubling per attempt, at most ``max_delay``).

    With ``jitter`` (the default, for many workers hitting the same sites) the backoff is
    "equal jitter" — half fixed, half random — and a server's Retry-After is a floor: the wait
    is the longer of the two. Without it the backoff is exact and a server's Retry-After
    replaces it. Either way a wait longer than ``max_retry_after`` is not worth blocking a run
    for: the policy gives up instead.
    """

    max_attempts: int = 3
    base_delay: float = 0.5
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    jitter: bool = True

    def backoff(self, attempt: int) -> float:
        """The backoff after failed attempt number ``attempt`` (1-based), before jitter."""
        return min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))

    def delay(
        self,
        attempt: int,
        retry_after: float | None,
        rng: Callable[[], float] = random.random,
    ) -> float | None:
        """Seconds to wait after failed attempt number ``attempt`` (1-based), or ``None`` to
        give up because the wait would be too long."""
        backoff = self.backoff(attempt)
        if self.jitter:
            jittered = backoff / 2 + rng() * backoff / 2
            if retry_after is None:
                return jittered
            if retry_after > self.max_retry_after:
                return None
            return max(retry_after, jittered)
        wait = backoff if retry_after is None else retry_after
        return None if wait > self.max_retry_after else wait


@dataclass(frozen=True)
class AttemptWindow:
    """The time a retried operation has in all: it must be over by ``ends_at`` (a reading of
    ``clock``), and a retry is only started when, after its backoff wait, at least
    ``min_attempt_seconds`` are left, the least an attempt needs to have a chance (for a
    fetch, its connect timeout: less than that and it cannot even connect in time).
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
    retryable: Callable[[Exception], bool],
    retry_after: Callable[[Exception], float | None],
    give_up: Callable[[Exception, int, GiveUp], Exception],
    sleep: Callable[[float], None] = time.sleep,
    rng: Callable[[], float] = random.random,
    window: AttemptWindow | None = None,
    operation_name: str = "",
) -> T:
    """Run ``operation``, retrying the errors ``retryable`` accepts as ``policy`` says.

    ``operation_name`` (search, fetch, model) names each retry for telemetry.

    Other errors are raised at once. ``retry_after(error)`` is the server's wait hint, if it
    gave one. When no retry follows, ``give_up(error, attempt, why)`` says what to raise:
    the error itself (raised as it is) or another exception (raised from it).
    """
    attempt = 1
    while True:
        try:
            return operation()
        except Exception as error:
            if not retryable(error):
                raise
            why: GiveUp | None = None
            wait: float | None = None
            if attempt >= policy.max_attempts:
                why = "attempts"
            else:
                wait = policy.delay(attempt, retry_after(error), rng)
                if wait is None:
                    why = "wait"
                elif window is not None and not window.leaves_room(wait):
                    why = "window"
            if why is not None:
                failure = give_up(error, attempt, why)
                if failure is error:
                    raise
                raise failure from error
            assert wait is not None
            if operation_name:
                observe.observer().retried(operation_name)
            sleep(wait)
            attempt += 1
