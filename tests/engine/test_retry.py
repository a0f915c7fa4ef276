"""The shared retry policy (research/engine/retry.py): Retry-After parsing and the delays.

The loop itself is exercised through its two users: tests/sources/test_resilience.py
(fetching) and tests/llm/test_openai_compatible.py (the model client)."""

from datetime import UTC, datetime

from research.engine.retry import RetryPolicy, retry_after_seconds


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    now = datetime(2024, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "120"}) == 120.0
    assert retry_after_seconds({"retry-after": "Mon, 01 Jan 2024 12:00:30 GMT"}, now=now) == 30.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds(None) is None


def test_retry_after_accepts_seconds_milliseconds_and_http_dates() -> None:
    now = datetime(2025, 1, 1, 12, 0, 0, tzinfo=UTC)
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250"}) == 0.25
    assert retry_after_seconds({"retry-after": "Wed, 01 Jan 2025 12:00:30 GMT"}, now=now) == 30
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({}) is None


def test_without_jitter_the_server_wait_replaces_the_exact_backoff() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=float("inf"), max_retry_after=60, jitter=False)
    assert [policy.delay(n, None) for n in (1, 2, 3)] == [1.0, 2.0, 4.0]
    assert policy.delay(3, 0.25) == 0.25
    assert policy.delay(1, 61) is None
    assert policy.delay(7, None) is None  # a 64-second backoff is longer than allowed


def test_with_jitter_the_server_wait_is_a_floor() -> None:
    policy = RetryPolicy(base_delay=2.0, max_delay=8.0, max_retry_after=30)
    assert policy.delay(2, None, lambda: 0.5) == 3.0  # 4 s backoff: 2 fixed + 0.5 * 2
    assert policy.delay(2, 0.5, lambda: 0.5) == 3.0
    assert policy.delay(2, 10, lambda: 0.5) == 10
    assert policy.delay(2, 31, lambda: 0.5) is None
