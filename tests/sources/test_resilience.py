"""Rate limits and retries, run on a fake clock so delays are exact and instant."""

from __future__ import annotations

import pytest

from research.sources.errors import SourceError, blocked, failed, unsupported
from research.sources.resilience import (
    AttemptWindow,
    RateLimiter,
    RetryPolicy,
    call_with_retries,
    classify_error,
)


class Clock:
    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Flaky:
    """Raises the given errors in turn, then returns "ok"."""

    def __init__(self, *errors: SourceError) -> None:
        self.errors = list(errors)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "ok"


def test_rate_limiter_spaces_calls_per_key() -> None:
    clock = Clock()
    limiter = RateLimiter(2.0, clock=clock, sleep=clock.sleep)

    limiter.wait("a.example")
    limiter.wait("b.example")  # another key is not delayed
    limiter.wait("a.example")
    clock.now += 5
    limiter.wait("a.example")  # enough time has passed

    assert clock.sleeps == [2.0]


def test_rate_limiter_with_zero_interval_never_sleeps() -> None:
    clock = Clock()
    limiter = RateLimiter(0, clock=clock, sleep=clock.sleep)
    for _ in range(3):
        limiter.wait("k")
    assert clock.sleeps == []


def test_retryable_failures_are_retried_with_growing_jittered_backoff() -> None:
    clock = Clock()
    operation = Flaky(failed("timeout", retryable=True), failed("502", retryable=True))

    result = call_with_retries(
        operation,
        policy=RetryPolicy(base_delay=1.0, max_delay=8.0),
        sleep=clock.sleep,
        rng=lambda: 0.5,
    )

    assert result == "ok"
    assert operation.calls == 3
    assert clock.sleeps == [0.75, 1.5]  # half fixed plus half of the random share, doubling


@pytest.mark.parametrize("rng", [0.0, 0.999])
def test_jitter_stays_between_half_and_all_of_the_backoff(rng: float) -> None:
    delay = RetryPolicy(base_delay=2.0).delay(2, None, lambda: rng)
    assert delay is not None and 2.0 <= delay <= 4.0


@pytest.mark.parametrize(
    "error",
    [
        failed("not found", retryable=False),
        blocked("private address"),
        unsupported("CAPTCHA"),
    ],
)
def test_non_retryable_errors_are_raised_at_once(error: SourceError) -> None:
    clock = Clock()
    operation = Flaky(error)

    with pytest.raises(SourceError) as raised:
        call_with_retries(operation, policy=RetryPolicy(), sleep=clock.sleep)

    assert raised.value is error
    assert operation.calls == 1
    assert clock.sleeps == []


def test_at_most_three_attempts_then_the_last_error_says_so() -> None:
    clock = Clock()
    operation = Flaky(*[failed("The site is down (HTTP 503).", retryable=True)] * 5)

    with pytest.raises(
        SourceError, match=r"HTTP 503\)\. Fetching gave up after 3 attempts"
    ) as raised:
        call_with_retries(operation, policy=RetryPolicy(), sleep=clock.sleep, describe="Fetching")

    assert operation.calls == 3
    assert len(clock.sleeps) == 2
    assert raised.value.retryable is True


def test_retry_after_is_honoured_when_reasonable() -> None:
    clock = Clock()
    operation = Flaky(failed("429", retryable=True, retry_after=5.0))

    call_with_retries(
        operation, policy=RetryPolicy(base_delay=0.5), sleep=clock.sleep, rng=lambda: 0.0
    )

    assert clock.sleeps == [5.0]


def test_retry_after_longer_than_we_wait_gives_up_at_once() -> None:
    clock = Clock()
    operation = Flaky(failed("429", retryable=True, retry_after=3600.0))

    with pytest.raises(SourceError, match="asked us to wait 3600 seconds"):
        call_with_retries(operation, policy=RetryPolicy(max_retry_after=30.0), sleep=clock.sleep)

    assert operation.calls == 1
    assert clock.sleeps == []


def test_errors_fall_into_four_classes() -> None:
    assert classify_error(failed("x", retryable=True)) == "retryable"
    assert classify_error(failed("x")) == "permanent"
    assert classify_error(blocked("x")) == "blocked"
    assert classify_error(unsupported("x")) == "unsupported"


def test_a_retry_that_the_time_left_cannot_cover_is_not_started() -> None:
    clock = Clock()
    operation = Flaky(*[failed("The site is down (HTTP 503).", retryable=True)] * 5)
    window = AttemptWindow(clock=clock, ends_at=4.0, min_attempt_seconds=2.0, limit_seconds=4.0)

    with pytest.raises(SourceError) as raised:
        call_with_retries(
            operation,
            policy=RetryPolicy(base_delay=1.0),
            sleep=clock.sleep,
            rng=lambda: 0.5,
            describe="Fetching",
            window=window,
        )

    # The first wait (0.75 s) leaves 3.25 s, enough for an attempt; the second (1.5 s) would
    # leave 1.75 s, less than the 2 s an attempt needs, so the third attempt never starts.
    assert operation.calls == 2
    assert clock.sleeps == [0.75]
    assert str(raised.value).endswith(
        "Fetching stopped after 2 attempts: the 4-second limit leaves no time for another."
    )
    assert raised.value.retryable is True
