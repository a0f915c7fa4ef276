"""Fetch time limits on a fake clock: a 1 byte/s page, retries and the total deadline.

The server is a fake network backend that delivers one byte per second of a fake clock and
times a read out the way a socket does, so these tests check the fetcher's deadline logic
exactly and in no wall time.
"""

from __future__ import annotations

import pytest

from research.engine.contracts import SourcePolicy
from research.sources import WebSourceAdapter
from research.sources.config import SourcesConfig
from research.sources.deadlines import FetchLimits
from research.sources.errors import SourceError
from research.sources.safe_fetch import SafeFetcher
from tests.sources.fakes import FakeClock, TricklingServer

PUBLIC = "93.184.216.34"
URL = "http://slow.example.org/page"
LIMITS = {"connect_timeout": 5.0, "read_timeout": 10.0, "total_timeout": 30.0}


def fetcher(clock: FakeClock, server: TricklingServer, **config: object) -> SafeFetcher:
    return SafeFetcher(
        SourcesConfig(**{**LIMITS, **config}),  # type: ignore[arg-type]
        resolver=lambda host, port: [PUBLIC],
        network_backend=server,
        clock=clock,
    )


def adapter(clock: FakeClock, server: TricklingServer, **config: object) -> WebSourceAdapter:
    return WebSourceAdapter(
        SourcesConfig(**{**LIMITS, "domain_interval": 0.0, **config}),  # type: ignore[arg-type]
        resolver=lambda host, port: [PUBLIC],
        network_backend=server,
        clock=clock,
        sleep=clock.sleep,
        rng=lambda: 0.5,
    )


def test_a_one_byte_per_second_page_is_cut_as_stalled_after_one_read_window() -> None:
    clock = FakeClock()
    server = TricklingServer(clock, rate=1.0)

    with pytest.raises(SourceError) as stalled:
        fetcher(clock, server).fetch(URL)

    assert stalled.value.kind == "failed" and stalled.value.retryable
    assert str(stalled.value) == (
        "http://slow.example.org/page sent less than 1,024 bytes in 10 seconds; "
        "the download was stopped as stalled."
    )
    # Nine bytes came in a byte a second; the read that would have brought the tenth was cut
    # exactly when the 10-second progress window closed.
    assert clock.now == pytest.approx(10.0)
    assert server.reads[-1] == (pytest.approx(9.0), pytest.approx(1.0))


def test_every_read_is_bounded_by_the_total_deadline() -> None:
    clock = FakeClock()
    server = TricklingServer(clock, rate=1.0)

    with pytest.raises(SourceError, match="took longer than the 30-second limit; stopped"):
        fetcher(clock, server, min_progress_bytes=0).fetch(URL)

    assert clock.now == pytest.approx(30.0)
    assert all(timeout is not None and at + timeout <= 30.0 + 1e-9 for at, timeout in server.reads)


def test_a_server_trickling_its_headers_is_cut_by_the_same_limits() -> None:
    clock = FakeClock()
    server = TricklingServer(clock, rate=1.0, body_bytes=10, trickle_head=True)

    with pytest.raises(SourceError, match="stopped as stalled"):
        fetcher(clock, server).fetch(URL)

    assert clock.now == pytest.approx(10.0)


def test_a_slow_but_steady_page_is_not_cut() -> None:
    clock = FakeClock()
    # 2 KB a second: slow, but well above 1 KB per 10-second window.
    server = TricklingServer(clock, rate=2048.0, body_bytes=20_000)

    response = fetcher(clock, server).fetch(URL)

    assert len(response.content) == 20_000
    assert clock.now < 10.0


def test_retries_of_a_stalled_page_end_within_the_total_limit() -> None:
    clock = FakeClock()
    server = TricklingServer(clock, rate=1.0)

    with pytest.raises(SourceError) as failure:
        adapter(clock, server).acquire(URL, policy=SourcePolicy(), max_bytes=10_000)

    # Attempt 1 stalls at 10 s, waits 0.375 s; attempt 2 stalls at 20.375 s, waits 0.75 s;
    # attempt 3 starts at 21.125 s with 8.875 s left and is cut by the total deadline.
    assert server.connections == 3
    assert clock.sleeps == [pytest.approx(0.375), pytest.approx(0.75)]
    assert clock.now == pytest.approx(30.0)
    assert "took longer than the 30-second limit" in str(failure.value)
    assert failure.value.counts_as_fetch  # one failed fetch, however many attempts


def test_a_retry_is_not_started_when_the_time_left_cannot_cover_it() -> None:
    clock = FakeClock()
    server = TricklingServer(clock, rate=1.0)

    with pytest.raises(SourceError) as failure:
        adapter(clock, server, total_timeout=25.0).acquire(
            URL, policy=SourcePolicy(), max_bytes=10_000
        )

    # After the second stall (20.375 s) a third attempt would start at 21.125 s with 3.875 s
    # left, less than the 5 s connect timeout an attempt needs: it is not started, and the
    # wait before it is not spent either.
    assert server.connections == 2
    assert clock.sleeps == [pytest.approx(0.375)]
    assert clock.now == pytest.approx(20.375)
    assert str(failure.value).endswith(
        "Fetching the page stopped after 2 attempts: the 25-second limit leaves no time for "
        "another."
    )


def test_limits_name_the_deadline_that_cut_an_operation() -> None:
    clock = FakeClock()
    limits = FetchLimits(
        clock=clock, ends_at=30.0, limit_seconds=30.0, window=10.0, min_progress_bytes=1024
    )

    assert limits.read_bound(10.0) == 10.0
    assert limits.timeout_cause() is None  # the read's own timeout was the shortest
    limits.received(10)
    clock.now = 4.0
    assert limits.read_bound(10.0) == pytest.approx(6.0)
    assert limits.timeout_cause() == "stalled"
    clock.now = 24.0
    limits.received(2000)  # enough progress opens a new window, from 24 s to 34 s
    clock.now = 25.0
    assert limits.read_bound(10.0) == pytest.approx(5.0)
    assert limits.timeout_cause() == "total"
