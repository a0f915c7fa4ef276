"""DNS resolution and pinned connections for ``SafeFetcher``.

A resolver answers ``(host, port)`` with addresses; the fetcher checks them and
``PinnedTransport`` then connects only to those checked addresses, never asking DNS
again, while TLS still sends the host name for SNI and verifies the certificate
against it.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from research.sources.addresses import IPAddress
from research.sources.deadlines import DeadlineNetworkBackend, FetchLimits

Resolver = Callable[[str, int], Sequence[str]]
"""Resolve ``(host, port)`` to IP address strings. Raise ``socket.gaierror`` when it fails."""


@dataclass(frozen=True)
class Destination:
    """A URL that passed every check, with the addresses its connection is pinned to."""

    url: httpx.URL
    host: str
    port: int
    addresses: tuple[IPAddress, ...]
    allow_listed: bool


# --------------------------------------------------------------------------------------------
# DNS
# --------------------------------------------------------------------------------------------

_DNS_POOL = ThreadPoolExecutor(max_workers=4, thread_name_prefix="dns")


def system_resolver() -> Resolver:
    """A resolver backed by ``getaddrinfo``.

    ``getaddrinfo`` cannot be interrupted, so the fetcher runs every resolver
    on a small thread pool and stops waiting when its time limit is up.
    """

    def resolve(host: str, port: int) -> list[str]:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        addresses: dict[str, None] = {}
        for _family, _type, _proto, _canon, sockaddr in infos:
            addresses[str(sockaddr[0])] = None
        return list(addresses)

    return resolve


def static_hosts_resolver(static_hosts: Mapping[str, str], fallback: Resolver) -> Resolver:
    """Answer listed names (``name`` or ``*.suffix``) from a fixed map, others via ``fallback``."""
    exact = {name: address for name, address in static_hosts.items() if not name.startswith("*.")}
    suffixes = [
        (name[1:], address) for name, address in static_hosts.items() if name.startswith("*.")
    ]

    def resolve(host: str, port: int) -> Sequence[str]:
        if host in exact:
            return [exact[host]]
        for suffix, address in suffixes:
            if host.endswith(suffix):
                return [address]
        return fallback(host, port)

    return resolve


# --------------------------------------------------------------------------------------------
# Pinned connections
# --------------------------------------------------------------------------------------------


class PinnedNetworkBackend(httpcore.NetworkBackend):
    """Connects to the checked addresses of a host instead of resolving it again.

    httpcore asks for ``connect_tcp(host_name, port)`` and later wraps the socket
    in TLS with ``server_hostname=host_name``; this backend swaps only the
    address, so SNI and certificate verification still use the name. A host
    without pinned addresses cannot be connected to at all.
    """

    def __init__(self, pins: Mapping[str, Sequence[str]], inner: httpcore.NetworkBackend) -> None:
        self._pins = pins
        self._inner = inner

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._pins.get(host)
        if not addresses:
            raise httpcore.ConnectError(f"{host} has no checked address to connect to.")
        last_error: Exception | None = None
        for address in addresses:
            try:
                return self._inner.connect_tcp(
                    address,
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                last_error = exc
        assert last_error is not None  # the loop ran at least once
        raise last_error

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("Unix sockets are never used for fetching.")

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


_HTTPCORE_TO_HTTPX: tuple[tuple[type[Exception], type[httpx.TransportError]], ...] = (
    (httpcore.ConnectTimeout, httpx.ConnectTimeout),
    (httpcore.ReadTimeout, httpx.ReadTimeout),
    (httpcore.WriteTimeout, httpx.WriteTimeout),
    (httpcore.PoolTimeout, httpx.PoolTimeout),
    (httpcore.TimeoutException, httpx.TimeoutException),
    (httpcore.ConnectError, httpx.ConnectError),
    (httpcore.ReadError, httpx.ReadError),
    (httpcore.WriteError, httpx.WriteError),
    (httpcore.NetworkError, httpx.NetworkError),
    (httpcore.RemoteProtocolError, httpx.RemoteProtocolError),
    (httpcore.LocalProtocolError, httpx.LocalProtocolError),
    (httpcore.UnsupportedProtocol, httpx.UnsupportedProtocol),
    (httpcore.ProtocolError, httpx.ProtocolError),
)


@contextlib.contextmanager
def _httpx_errors() -> Iterator[None]:
    try:
        yield
    except httpx.TransportError:
        raise
    except Exception as exc:
        for source, target in _HTTPCORE_TO_HTTPX:
            if isinstance(exc, source):
                raise target(str(exc)) from exc
        raise


class _PinnedResponseStream(httpx.SyncByteStream):
    def __init__(self, stream: Iterable[bytes]) -> None:
        self._stream = stream

    def __iter__(self) -> Iterator[bytes]:
        with _httpx_errors():
            yield from self._stream

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class PinnedTransport(httpx.BaseTransport):
    """An httpx transport whose connections go only to pre-checked addresses.

    ``pins`` maps a host name (exactly as it appears in request URLs) to the
    addresses that passed the checks; it may grow while the transport lives,
    as redirects reach new hosts. ``limits`` bounds every socket operation.
    """

    def __init__(
        self,
        pins: Mapping[str, Sequence[str]],
        *,
        ssl_context: ssl.SSLContext,
        network_backend: httpcore.NetworkBackend | None = None,
        limits: FetchLimits | None = None,
    ) -> None:
        backend = network_backend or httpcore.SyncBackend()
        if limits is not None:
            backend = DeadlineNetworkBackend(backend, limits)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=4,
            http1=True,
            http2=False,
            retries=0,
            network_backend=PinnedNetworkBackend(pins, backend),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(
                scheme=request.url.raw_scheme,
                host=request.url.raw_host,
                port=request.url.port,
                target=request.url.raw_path,
            ),
            headers=request.headers.raw,
            content=request.stream,  # type: ignore[arg-type]
            extensions=request.extensions,
        )
        with _httpx_errors():
            response = self._pool.handle_request(core_request)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_PinnedResponseStream(response.stream),  # type: ignore[arg-type]
            extensions=response.extensions,
        )

    def close(self) -> None:
        self._pool.close()


# --------------------------------------------------------------------------------------------
# Certificate errors
# --------------------------------------------------------------------------------------------


def _is_certificate_error(exc: BaseException) -> bool:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(
            current
        ):
            return True
        current = current.__cause__ or current.__context__
    return False
