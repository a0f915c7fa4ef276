"""Fakes at the network edge: a scripted DNS resolver and a connection-recording backend."""

from __future__ import annotations

import socket
from collections.abc import Iterable, Sequence
from typing import Any

import httpcore


class ScriptedResolver:
    """Answers host names from a script; each name may have a sequence of answers.

    With a sequence, the n-th lookup gets the n-th answer (the last repeats),
    which is how a rebinding DNS server behaves. Every lookup is recorded.
    """

    def __init__(self, answers: dict[str, Sequence[str] | Sequence[Sequence[str]]]) -> None:
        self._answers = answers
        self.lookups: list[str] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.lookups.append(host)
        if host not in self._answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        answer = self._answers[host]
        if answer and not isinstance(answer[0], str):
            index = min(self.lookups.count(host) - 1, len(answer) - 1)
            return list(answer[index])
        return list(answer)  # type: ignore[arg-type]


class RecordingBackend(httpcore.NetworkBackend):
    """Records every connection attempt; ``routes`` sends an address to a local server instead.

    Routing a made-up public address (say 93.184.216.34) to the frozen web
    lets tests act out "the public internet" without leaving 127.0.0.1.
    """

    def __init__(self, routes: dict[tuple[str, int], tuple[str, int]] | None = None) -> None:
        self.attempts: list[tuple[str, int]] = []
        self.routes = routes or {}
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.attempts.append((host, port))
        host, port = self.routes.get((host, port), (host, port))
        return self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise AssertionError("unix sockets are never used")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class FakeClock:
    """A monotonic clock that moves only when something waits on it."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class TricklingServer(httpcore.NetworkBackend):
    """A server that answers at ``rate`` bytes per second, on a fake clock.

    Every connection gets ``head`` at once (unless ``trickle_head``), then the body one byte
    per ``1 / rate`` seconds for ``body_bytes`` bytes. A read whose timeout is shorter than
    the next byte's arrival waits out the timeout on the clock and times out, as a socket
    would. Each read's timeout is recorded with the clock reading it was asked at.
    """

    def __init__(
        self,
        clock: FakeClock,
        *,
        rate: float = 1.0,
        body_bytes: int = 100_000,
        trickle_head: bool = False,
    ) -> None:
        self.clock = clock
        self.interval = 1.0 / rate
        self.head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
            b"Content-Length: " + str(body_bytes).encode() + b"\r\n\r\n"
        )
        self.body_bytes = body_bytes
        self.trickle_head = trickle_head
        self.connections = 0
        self.reads: list[tuple[float, float | None]] = []

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        self.connections += 1
        return _TrickleStream(self)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise AssertionError("unix sockets are never used")

    def sleep(self, seconds: float) -> None:
        self.clock.sleep(seconds)


class _TrickleStream(httpcore.NetworkStream):
    def __init__(self, server: TricklingServer) -> None:
        self.server = server
        self.pending = server.head + b"x" * server.body_bytes
        self.head_sent = False

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        server = self.server
        server.reads.append((server.clock.now, timeout))
        if not self.pending:
            return b""
        if not self.head_sent and not server.trickle_head:
            self.head_sent = True
            head, self.pending = self.pending[: len(server.head)], self.pending[len(server.head) :]
            return head
        if timeout is not None and timeout < server.interval:
            server.clock.now += timeout
            raise httpcore.ReadTimeout("timed out")
        server.clock.now += server.interval
        byte, self.pending = self.pending[:1], self.pending[1:]
        return byte

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        return None

    def close(self) -> None:
        return None

    def get_extra_info(self, info: str) -> Any:
        return None
