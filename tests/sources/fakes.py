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
