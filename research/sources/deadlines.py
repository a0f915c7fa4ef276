"""Time limits of one fetch, applied to every socket operation.

A fetch works under two limits:

* the **total deadline**, a clock reading by which the whole fetch must be
  over: DNS, connecting, TLS, sending, waiting for the headers and reading the
  body of every hop, and, when the adapter retries, every attempt and every
  backoff wait between them (``RESEARCH_FETCH_TOTAL_TIMEOUT``);
* the **read-progress deadline**: the response must bring at least
  ``min_progress_bytes`` in every ``window`` seconds (the read timeout,
  ``RESEARCH_FETCH_READ_TIMEOUT``). A per-read timeout alone is defeated by a
  server that sends one byte just before it would fire; counting progress in
  useful amounts is not.

``DeadlineNetworkBackend`` wraps the streams a connection pool reads from, so
each read, write, connect and TLS handshake gets the shorter of its own
timeout and the time these limits leave: no single blocking call can outlast
them. Everything takes its clock as an argument, so tests run a 1 byte/s page
on a fake clock in no time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Literal

import httpcore

Expiry = Literal["total", "stalled"]


class FetchLimits:
    """The limits one request runs under: the fetch's total deadline and its read progress.

    ``ends_at`` is a reading of ``clock``; ``limit_seconds`` is the total limit as
    configured, for messages. With ``min_progress_bytes`` 0 only the total deadline applies.
    """

    def __init__(
        self,
        *,
        clock: Callable[[], float],
        ends_at: float,
        limit_seconds: float,
        window: float,
        min_progress_bytes: int,
    ) -> None:
        self._clock = clock
        self.ends_at = ends_at
        self.limit_seconds = limit_seconds
        self.window = window
        self.min_progress_bytes = min_progress_bytes
        self._mark_time = clock()
        self._since_mark = 0
        # Which limit bounded the latest operation, to explain a timeout it ends with.
        self._last_limit: Expiry | None = None

    def time_left(self) -> float:
        """Seconds until the total deadline (negative once it has passed)."""
        return self.ends_at - self._clock()

    def _progress_left(self, now: float) -> float:
        if self.min_progress_bytes <= 0:
            return float("inf")
        return self._mark_time + self.window - now

    def bound(self, timeout: float | None, expired: type[Exception]) -> float:
        """``timeout`` shortened to what the total deadline leaves; raises ``expired`` when
        nothing is left. Used for connecting, TLS and sending."""
        left = self.time_left()
        self._last_limit = "total" if timeout is None or left <= timeout else None
        if left <= 0:
            raise expired("The time limit of the fetch has passed.")
        return left if timeout is None else min(timeout, left)

    def read_bound(self, timeout: float | None) -> float:
        """The timeout of the next read: the read's own, the total deadline's and the
        progress deadline's, whichever is shortest. Raises ``httpcore.ReadTimeout`` when
        one of the deadlines has passed already."""
        now = self._clock()
        total, progress = self.ends_at - now, self._progress_left(now)
        left = min(total, progress)
        if timeout is not None and timeout < left:
            self._last_limit = None
            return timeout
        if total <= progress:
            self._last_limit = "total"
        else:
            # Nothing at all since the last progress is silence, which the read timeout
            # names; a few bytes that are not enough are a stall.
            self._last_limit = "stalled" if self._since_mark else None
        if left <= 0:
            raise httpcore.ReadTimeout("The time limit of the fetch has passed.")
        return left

    def sent(self) -> None:
        """A request went out: the server's time to answer starts now."""
        self._mark_time = self._clock()
        self._since_mark = 0

    def received(self, count: int) -> None:
        """Note ``count`` bytes read; enough of them since the last mark count as progress."""
        self._since_mark += count
        if self._since_mark >= self.min_progress_bytes:
            self._mark_time = self._clock()
            self._since_mark = 0

    def expired(self) -> bool:
        """Whether the total deadline has passed."""
        return self._clock() >= self.ends_at

    def timeout_cause(self) -> Expiry | None:
        """Why the operation that just timed out was cut: the total deadline, missing read
        progress, or ``None`` when its own timeout (connect, read) fired first."""
        if self.expired():
            return "total"
        return self._last_limit


class _DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every operation is bounded by the fetch's limits."""

    def __init__(self, inner: httpcore.NetworkStream, limits: FetchLimits) -> None:
        self._inner = inner
        self._limits = limits

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data = self._inner.read(max_bytes, self._limits.read_bound(timeout))
        self._limits.received(len(data))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, self._limits.bound(timeout, httpcore.WriteTimeout))
        self._limits.sent()

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self,
        ssl_context: Any,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        bounded = self._limits.bound(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(
            self._inner.start_tls(ssl_context, server_hostname, bounded), self._limits
        )

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineNetworkBackend(httpcore.NetworkBackend):
    """Bounds every connection of ``inner`` by ``limits`` (see the module docstring)."""

    def __init__(self, inner: httpcore.NetworkBackend, limits: FetchLimits) -> None:
        self._inner = inner
        self._limits = limits

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host,
            port,
            timeout=self._limits.bound(timeout, httpcore.ConnectTimeout),
            local_address=local_address,
            socket_options=socket_options,
        )
        return _DeadlineStream(stream, self._limits)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("Unix sockets are never used for fetching.")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)
