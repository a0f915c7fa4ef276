"""The one outbound HTTP primitive: SSRF-safe, bounded, honest.

Every page fetch and every call to a search provider goes through
``SafeFetcher``. For each hop it:

1. parses the URL with the same parser that sends the request (httpx), refuses
   non-http(s) schemes, embedded credentials and numeric-host tricks;
2. resolves the host once (through an injectable resolver) and refuses the
   whole name if any address is loopback, private, link-local, metadata,
   multicast, reserved or otherwise not public, unless the operator listed it;
3. pins the connection to the checked addresses: the network backend maps the
   host name to those addresses and never asks DNS again, while TLS still sends
   the host name for SNI and verifies the certificate against it;
4. follows redirects itself (at most ``max_redirects``), repeating all checks
   and the caller's domain policy for every target;
5. streams the body under connect / read / total time limits (every socket
   operation is bounded by what the total deadline and the read-progress
   deadline leave, see ``deadlines``) and a byte cap applied both to the bytes
   on the wire and after decompression.

Refusals and failures are ``SourceError``s with a sentence a user can act on.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import certifi
import httpcore
import httpx

from research.engine.ports import CandidateDrop
from research.engine.retry import retry_after_seconds
from research.sources.addresses import (
    METADATA_HOSTNAMES,
    HostAllowList,
    InvalidHostError,
    IPAddress,
    forbidden_address_reason,
    forbidden_hostname_reason,
    forbidden_port_reason,
    is_metadata_address,
    normalize_host,
    parse_ip_host,
)
from research.sources.config import SourcesConfig
from research.sources.deadlines import DeadlineNetworkBackend, FetchLimits
from research.sources.errors import SourceError, blocked, failed, unsupported

Resolver = Callable[[str, int], Sequence[str]]
"""Resolve ``(host, port)`` to IP address strings. Raise ``socket.gaierror`` when it fails."""

RedirectGuard = Callable[[str], None]
"""Called with every URL before it is requested; raises ``SourceError`` to refuse it."""

PAGE_MEDIA_TYPES: frozenset[str] = frozenset(
    {"text/html", "application/xhtml+xml", "text/plain", "application/pdf"}
)
JSON_MEDIA_TYPES: frozenset[str] = frozenset({"application/json"})
XML_MEDIA_TYPES: frozenset[str] = frozenset({"application/atom+xml", "application/xml", "text/xml"})

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
_RETRYABLE_STATUSES = frozenset({408, 429, 502, 503, 504})
_SNIFF_BYTES = 1024
_UNTYPED = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/unknown"})
_BINARY_MAGIC = (
    b"\x89PNG",
    b"GIF8",
    b"\xff\xd8\xff",
    b"PK\x03\x04",
    b"\x1f\x8b",
    b"BZh",
    b"7z\xbc\xaf",
    b"Rar!",
    b"\x7fELF",
    b"MZ",
    b"RIFF",
    b"OggS",
    b"ID3",
    b"\x00\x00\x01\x00",
    b"wOFF",
)


@dataclass(frozen=True)
class FetchResponse:
    """A successful response with a bounded body.

    ``content`` is the decoded (decompressed) body, at most the byte cap long;
    ``truncated`` says the cap cut it short. ``media_type`` is the declared type
    (or the sniffed one when the server sent none) without parameters.
    """

    requested_url: str
    final_url: str
    status_code: int
    headers: httpx.Headers
    media_type: str
    charset: str | None
    content: bytes
    truncated: bool
    wire_bytes: int
    redirects: tuple[str, ...] = ()
    retrieved_at: datetime = field(default_factory=lambda: datetime.now(UTC))


class _Refused(SourceError):
    """A refusal of the address as written, with the phrase a search step counts it by."""

    def __init__(self, drop: CandidateDrop, reason: str) -> None:
        super().__init__("blocked", reason)
        self.drop = drop


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
# The fetcher
# --------------------------------------------------------------------------------------------


class SafeFetcher:
    """Fetch public web resources safely; one instance serves many threads.

    ``resolver`` and ``network_backend`` are the seams tests use to fake DNS
    and to record connection attempts. ``extra_allowed_hosts`` adds
    allow-list entries for this fetcher only (the search providers' own
    configured endpoints, for instance), never for page fetches.
    """

    def __init__(
        self,
        config: SourcesConfig,
        *,
        resolver: Resolver | None = None,
        network_backend: httpcore.NetworkBackend | None = None,
        extra_allowed_hosts: Iterable[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.config = config
        base_resolver = resolver or system_resolver()
        self._resolver = (
            static_hosts_resolver(config.static_hosts, base_resolver)
            if config.static_hosts
            else base_resolver
        )
        self._network_backend = network_backend
        self._allow_list = HostAllowList([*config.allowed_hosts, *extra_allowed_hosts])
        self._clock = clock
        self._ssl_context: ssl.SSLContext | None = None
        self._ssl_lock = threading.Lock()

    # -- checks ---------------------------------------------------------------------------

    def screen_url(self, url: str) -> CandidateDrop | None:
        """Why ``url`` would be refused before any DNS lookup, as a short fixed phrase, or
        ``None`` when it passes every check that needs no lookup.

        These are exactly the checks ``check_url`` makes first (scheme and form, host names,
        ports, literal addresses, the allow-list), so a search result this passes is one
        the fetcher will at least try; a host name may still resolve to a refused address.
        """
        try:
            self._check_written(url)
        except _Refused as refusal:
            return refusal.drop
        except SourceError:
            return "not a web address"
        return None

    def check_url(
        self,
        url: str | httpx.URL,
        *,
        resolved: dict[tuple[str, int], tuple[IPAddress, ...]] | None = None,
        limits: FetchLimits | None = None,
    ) -> Destination:
        """Validate ``url`` and resolve its host, without connecting anywhere.

        ``resolved`` caches answers per (host, port) within one fetch, so a
        redirect back to the same host reuses the first answer instead of giving
        a rebinding DNS server a second chance; ``limits`` bounds the lookup by
        the fetch's deadline. Raises ``SourceError``.
        """
        parsed, host, port, ip_literal, allow_listed = self._check_written(url)
        if ip_literal is not None:
            return Destination(
                url=parsed,
                host=host,
                port=port,
                addresses=(ip_literal,),
                allow_listed=allow_listed,
            )
        cache = resolved if resolved is not None else {}
        key = (host, port)
        if key not in cache:
            cache[key] = self._resolve(host, port, limits)
        addresses = cache[key]
        shown = _display_host(host, port)
        for address in addresses:
            where = f"{shown} resolves to {address},"
            if is_metadata_address(address):
                raise blocked(f"{where} a cloud metadata address, which is never fetched.")
            if not allow_listed and (reason := forbidden_address_reason(address)):
                raise blocked(
                    f"{where} {reason}; only public addresses can be fetched "
                    "(an operator can allow intranet hosts with RESEARCH_FETCH_ALLOWED_HOSTS)."
                )
        return Destination(
            url=parsed, host=host, port=port, addresses=addresses, allow_listed=allow_listed
        )

    def _check_written(
        self, url: str | httpx.URL
    ) -> tuple[httpx.URL, str, int, IPAddress | None, bool]:
        """The checks that need no DNS lookup; returns the parsed URL, its normalised host,
        port and IP literal (if it is one) and whether the allow-list names it."""
        parsed = _parse_url(url)
        host = _url_host(parsed)
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        ip_literal = _ip_literal(host)
        if ip_literal is not None:
            host = str(ip_literal)
            parsed = parsed.copy_with(host=host)
        allow_listed = self._allow_list.permits(host, port)
        shown = _display_host(host, port)
        if not allow_listed:
            if ip_literal is None and (reason := forbidden_hostname_reason(host)):
                drop: CandidateDrop = (
                    "cloud metadata address"
                    if host in METADATA_HOSTNAMES
                    else "local host name not allowed"
                )
                raise _Refused(drop, f"{shown} is {reason}; only public web sites can be fetched.")
            if reason := forbidden_port_reason(port):
                raise _Refused(
                    "non-web port", f"{shown} uses {reason}; only web ports can be fetched."
                )
        if ip_literal is not None:
            # Name the address as written and, if different, what it really is.
            written = parsed_host_text(url).rstrip(".")
            if ip_literal.version == 6 or written == host:
                where = f"{_display_host(written, port)} is"
            else:
                where = f"{written} means {ip_literal} and is"
            if is_metadata_address(ip_literal):
                raise _Refused(
                    "cloud metadata address",
                    f"{where} a cloud metadata address, which is never fetched.",
                )
            if not allow_listed and (reason := forbidden_address_reason(ip_literal)):
                raise _Refused(
                    "private address not allowed",
                    f"{where} {reason}; only public addresses can be fetched "
                    "(an operator can allow intranet hosts with RESEARCH_FETCH_ALLOWED_HOSTS).",
                )
        return parsed, host, port, ip_literal, allow_listed

    def _resolve(
        self, host: str, port: int, limits: FetchLimits | None = None
    ) -> tuple[IPAddress, ...]:
        timeout = self.config.connect_timeout
        if limits is not None:
            if limits.expired():
                raise failed(self._total_limit_reason(limits, host), retryable=True)
            timeout = min(timeout, limits.time_left())
        future = _DNS_POOL.submit(self._resolver, host, port)
        try:
            answers = future.result(timeout=timeout)
        except FutureTimeout:
            if limits is not None and limits.expired():
                raise failed(self._total_limit_reason(limits, host), retryable=True) from None
            raise failed(
                f"Looking up {host} did not finish in time; try again later.", retryable=True
            ) from None
        except socket.gaierror as exc:
            if exc.errno in (socket.EAI_AGAIN,):
                raise failed(
                    f"Looking up {host} did not finish in time; try again later.", retryable=True
                ) from None
            raise failed(f"The host {host} could not be found (DNS lookup failed).") from None
        except OSError as exc:
            raise failed(f"Looking up {host} failed: {exc}.", retryable=True) from None
        addresses: list[IPAddress] = []
        for answer in answers:
            try:
                addresses.append(ipaddress.ip_address(str(answer).split("%", 1)[0]))
            except ValueError:
                raise blocked(
                    f"DNS for {host} returned {answer!r}, which is not an IP address."
                ) from None
        if not addresses:
            raise failed(f"The host {host} has no address records.")
        return tuple(dict.fromkeys(addresses))

    # -- requests -------------------------------------------------------------------------

    def fetch(
        self,
        url: str,
        *,
        redirect_guard: RedirectGuard | None = None,
        max_bytes: int | None = None,
        ends_at: float | None = None,
    ) -> FetchResponse:
        """GET a page (HTML, XHTML, plain text or PDF) with no cookies and no credentials.

        ``max_bytes`` overrides the configured download cap; by default PDFs get
        ``max_pdf_bytes`` and everything else ``max_page_bytes``. ``ends_at`` (a
        reading of the fetcher's clock) is the deadline of the whole fetch when
        the caller retries it; by default it is ``total_timeout`` from now.
        """
        return self.request(
            "GET",
            url,
            media_types=PAGE_MEDIA_TYPES,
            redirect_guard=redirect_guard,
            max_bytes=max_bytes,
            sniff=True,
            ends_at=ends_at,
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        json: Any = None,
        content: bytes | None = None,
        media_types: frozenset[str] = PAGE_MEDIA_TYPES,
        redirect_guard: RedirectGuard | None = None,
        max_bytes: int | None = None,
        follow_redirects: bool = True,
        total_timeout: float | None = None,
        sniff: bool = False,
        ends_at: float | None = None,
    ) -> FetchResponse:
        """Send one request (following GET redirects) and return the bounded body.

        ``headers`` are sent only to the first host: a redirect to another host
        drops them, so an API key never leaks to a third party. Everything,
        redirects included, ends by ``ends_at`` (a reading of the fetcher's
        clock; by default ``total_timeout`` or the configured total from now),
        and the response must keep bringing ``min_progress_bytes`` per read
        timeout. Raises ``SourceError`` for every refusal and failure.
        """
        limit = total_timeout or self.config.total_timeout
        limits = FetchLimits(
            clock=self._clock,
            ends_at=self._clock() + limit if ends_at is None else ends_at,
            limit_seconds=limit,
            window=self.config.read_timeout,
            min_progress_bytes=self.config.min_progress_bytes,
        )
        resolved: dict[tuple[str, int], tuple[IPAddress, ...]] = {}
        pins: dict[str, list[str]] = {}
        requested = str(url)
        current = httpx.URL(requested).copy_merge_params(params) if params else requested
        redirects: list[str] = []
        method = method.upper()
        with PinnedTransport(
            pins,
            ssl_context=self._tls_context(),
            network_backend=self._network_backend,
            limits=limits,
        ) as transport:
            first_host: str | None = None
            while True:
                self._check_deadline(limits, requested)
                try:
                    if redirect_guard is not None:
                        redirect_guard(str(current))
                    destination = self.check_url(current, resolved=resolved, limits=limits)
                except SourceError as exc:
                    if not redirects:
                        raise
                    raise SourceError(
                        exc.kind,
                        f"{_display_url(requested)} redirected to {_display_url(current)}, "
                        f"which was refused: {exc.reason}",
                        retryable=exc.retryable,
                        retry_after=exc.retry_after,
                        counts_as_fetch=exc.counts_as_fetch,
                    ) from None
                pins[destination.url.raw_host.decode("ascii")] = [
                    str(a) for a in destination.addresses
                ]
                if first_host is None:
                    first_host = destination.host
                same_host = destination.host == first_host
                request = self._build_request(
                    method,
                    destination.url,
                    headers=headers if same_host else None,
                    json=json if not redirects else None,
                    content=content if not redirects else None,
                    limits=limits,
                )
                response = self._send(transport, request, destination, limits, requested)
                status = response.status_code
                if status in _REDIRECT_STATUSES and "location" in response.headers:
                    response.close()
                    if not follow_redirects or method not in ("GET", "HEAD"):
                        raise failed(
                            f"{_display_url(destination.url)} answered with a redirect (HTTP {status}), "
                            "which this request does not follow.",
                            status=status,
                        )
                    if len(redirects) >= self.config.max_redirects:
                        raise failed(
                            f"{_display_url(requested)} redirected more than "
                            f"{self.config.max_redirects} times; stopped following it."
                        )
                    target = _redirect_target(destination.url, response.headers["location"])
                    redirects.append(str(target))
                    current = target
                    continue
                try:
                    return self._finish(
                        response,
                        destination=destination,
                        requested=requested,
                        redirects=tuple(redirects),
                        media_types=media_types,
                        max_bytes=max_bytes,
                        limits=limits,
                        sniff=sniff,
                    )
                finally:
                    response.close()

    def _build_request(
        self,
        method: str,
        url: httpx.URL,
        *,
        headers: Mapping[str, str] | None,
        json: Any,
        limits: FetchLimits,
        content: bytes | None = None,
    ) -> httpx.Request:
        # The network backend shortens every operation to what the deadlines leave; these
        # are the per-operation limits httpcore starts from.
        remaining = max(0.05, limits.time_left())
        read = min(self.config.read_timeout, remaining)
        # Only these headers are ever sent to a page: no cookies, no credentials.
        base = {
            "User-Agent": self.config.user_agent,
            "Accept": "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.1",
            "Accept-Encoding": "gzip, deflate",
            "Accept-Language": "en;q=0.9, *;q=0.5",
        }
        if headers:
            base.update(headers)
        request = httpx.Request(method, url, headers=base, json=json, content=content)
        request.extensions["timeout"] = {
            "connect": min(self.config.connect_timeout, remaining),
            "read": read,
            "write": read,
            "pool": min(self.config.connect_timeout, remaining),
        }
        return request

    def _send(
        self,
        transport: PinnedTransport,
        request: httpx.Request,
        destination: Destination,
        limits: FetchLimits,
        requested: str,
    ) -> httpx.Response:
        shown = _display_url(destination.url)
        try:
            return transport.handle_request(request)
        except httpx.TimeoutException:
            raise self._timed_out(
                limits,
                requested,
                shown,
                f"{shown} did not answer within the time limit; the site may be slow or down.",
            ) from None
        except httpx.ConnectError as exc:
            if _is_certificate_error(exc):
                raise failed(
                    f"{shown} presented a TLS certificate that is not valid for "
                    f"{destination.host}; the page was not fetched."
                ) from None
            raise failed(f"Could not connect to {shown}: {exc}.", retryable=True) from None
        except httpx.TransportError as exc:
            raise failed(f"The connection to {shown} failed: {exc}.", retryable=True) from None

    def _finish(
        self,
        response: httpx.Response,
        *,
        destination: Destination,
        requested: str,
        redirects: tuple[str, ...],
        media_types: frozenset[str],
        max_bytes: int | None,
        limits: FetchLimits,
        sniff: bool,
    ) -> FetchResponse:
        shown = _display_url(destination.url)
        _raise_for_status(response, shown)
        media_type, charset = _content_type(response.headers.get("content-type", ""))
        if media_type not in media_types and not (sniff and media_type in _UNTYPED):
            raise unsupported(
                f"{shown} is {media_type or 'of an undeclared type'}, which cannot be read as "
                f"a source (readable types: {', '.join(sorted(media_types))})."
            )
        limit = max_bytes or (
            self.config.max_pdf_bytes
            if media_type == "application/pdf"
            else self.config.max_page_bytes
        )
        declared_length = _content_length(response.headers)
        if media_type == "application/pdf" and declared_length and declared_length > limit:
            raise unsupported(
                f"{shown} is a PDF of {_megabytes(declared_length)}, more than the "
                f"{_megabytes(limit)} download limit."
            )
        decoder = _Decoder(response.headers.get("content-encoding", ""), shown)
        body = bytearray()
        wire = 0
        truncated = False
        sniffed = not sniff
        try:
            for chunk in response.stream:
                wire += len(chunk)
                if wire > limit:
                    # Past the cap even before decompression: keep what fits.
                    chunk = chunk[: len(chunk) - (wire - limit)]
                    truncated = True
                room = limit - len(body)
                piece, over = decoder.feed(chunk, room)
                body += piece
                if not sniffed and (len(body) >= _SNIFF_BYTES or over or truncated):
                    media_type = _sniff(media_type, bytes(body[:_SNIFF_BYTES]), shown, media_types)
                    sniffed = True
                if over or truncated:
                    truncated = True
                    break
                self._check_deadline(limits, requested)
            else:
                if not truncated:
                    body += decoder.flush(limit - len(body))
        except httpx.TimeoutException:
            raise self._timed_out(
                limits,
                requested,
                shown,
                f"{shown} stopped sending data before the page was complete.",
            ) from None
        except httpx.TransportError as exc:
            raise failed(f"The download from {shown} broke off: {exc}.", retryable=True) from None
        if not sniffed:
            media_type = _sniff(media_type, bytes(body[:_SNIFF_BYTES]), shown, media_types)
        return FetchResponse(
            requested_url=requested,
            final_url=str(destination.url),
            status_code=response.status_code,
            headers=response.headers,
            media_type=media_type,
            charset=charset,
            content=bytes(body),
            truncated=truncated,
            wire_bytes=wire,
            redirects=redirects,
        )

    def _check_deadline(self, limits: FetchLimits, requested: str) -> None:
        if limits.expired():
            raise failed(self._total_limit_reason(limits, requested), retryable=True)

    @staticmethod
    def _total_limit_reason(limits: FetchLimits, requested: str) -> str:
        return (
            f"Fetching {_display_url(requested)} took longer than the "
            f"{limits.limit_seconds:g}-second limit; stopped."
        )

    def _timed_out(
        self, limits: FetchLimits, requested: str, shown: str, otherwise: str
    ) -> SourceError:
        """The error for an operation that timed out, naming the limit that cut it."""
        cause = limits.timeout_cause()
        if cause == "total":
            return failed(self._total_limit_reason(limits, requested), retryable=True)
        if cause == "stalled":
            return failed(
                f"{shown} sent less than {limits.min_progress_bytes:,} bytes in "
                f"{limits.window:g} seconds; the download was stopped as stalled.",
                retryable=True,
            )
        return failed(otherwise, retryable=True)

    def _tls_context(self) -> ssl.SSLContext:
        with self._ssl_lock:
            if self._ssl_context is None:
                self._ssl_context = ssl.create_default_context(
                    cafile=self.config.ca_bundle or certifi.where()
                )
            return self._ssl_context


def safe_fetch(
    url: str,
    config: SourcesConfig,
    *,
    resolver: Resolver | None = None,
    redirect_guard: RedirectGuard | None = None,
) -> FetchResponse:
    """Fetch one page with a throw-away ``SafeFetcher`` (see ``SafeFetcher.fetch``)."""
    return SafeFetcher(config, resolver=resolver).fetch(url, redirect_guard=redirect_guard)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _parse_url(url: str | httpx.URL) -> httpx.URL:
    if isinstance(url, httpx.URL):
        parsed = url
    else:
        text = str(url).strip()
        if any(ord(char) < 0x20 or ord(char) == 0x7F for char in text):
            raise blocked("The address contains control characters and was not fetched.")
        try:
            parsed = httpx.URL(text)
        except (httpx.InvalidURL, ValueError, TypeError):
            raise blocked(_invalid_url_reason(text)) from None
    if parsed.scheme not in ("http", "https"):
        scheme = parsed.scheme or "a relative address"
        raise blocked(f"Only public http(s) pages can be fetched, not {scheme}: addresses.")
    if parsed.userinfo:
        raise blocked(
            "The address contains a user name or password; such addresses are never fetched."
        )
    if not parsed.raw_host:
        raise blocked("The address has no host name.")
    return parsed


def _invalid_url_reason(text: str) -> str:
    """Explain an address httpx cannot parse, naming the real target when it is a disguised IP."""
    generic = f"{_clip(text)} is not a valid web address."
    try:
        host = urlsplit(text).hostname
        if not host:
            return generic
        ip = parse_ip_host(normalize_host(host))
    except (InvalidHostError, ValueError):
        return generic
    reason = forbidden_address_reason(ip) if ip is not None else None
    return f"{generic[:-1]}: its host means {ip}, {reason}." if reason else generic


def parsed_host_text(url: str | httpx.URL) -> str:
    """The host of ``url`` as written (without brackets), for messages."""
    try:
        parsed = url if isinstance(url, httpx.URL) else httpx.URL(str(url).strip())
        return parsed.raw_host.decode("ascii", "replace")
    except (httpx.InvalidURL, ValueError, TypeError):
        return str(url)


def _url_host(parsed: httpx.URL) -> str:
    try:
        return normalize_host(parsed.raw_host.decode("ascii"))
    except (InvalidHostError, UnicodeDecodeError) as exc:
        raise blocked(f"The address has an invalid host name: {exc}") from None


def _ip_literal(host: str) -> IPAddress | None:
    try:
        return parse_ip_host(host)
    except InvalidHostError as exc:
        raise blocked(f"{exc} Such addresses are never fetched.") from None


def _redirect_target(base: httpx.URL, location: str) -> httpx.URL:
    try:
        return base.join(location.strip())
    except (httpx.InvalidURL, ValueError):
        raise failed(f"{_display_url(base)} redirected to an invalid address.") from None


def _raise_for_status(response: httpx.Response, shown: str) -> None:
    status = response.status_code
    if response.headers.get("cf-mitigated", "").lower() == "challenge":
        raise unsupported(
            f"{shown} answered with an access challenge (CAPTCHA) instead of the page; "
            "it cannot be read automatically."
        )
    if 200 <= status < 300:
        if status == 204:
            raise failed(f"{shown} returned no content (HTTP 204).", status=status)
        return
    if status in _RETRYABLE_STATUSES:
        retry_after = retry_after_seconds(response.headers)
        what = "is rate limiting requests" if status == 429 else "is temporarily unavailable"
        raise failed(
            f"{shown} {what} (HTTP {status}).",
            retryable=True,
            retry_after=retry_after,
            status=status,
        )
    if status in (401, 403, 407, 451):
        raise SourceError(
            "blocked",
            f"{shown} refused access (HTTP {status}); it may need a login or block automated readers.",
            status=status,
        )
    if status in (404, 410):
        raise failed(f"{shown} was not found (HTTP {status}).", status=status)
    raise failed(f"{shown} answered with HTTP {status}.", status=status)


def _content_type(header: str) -> tuple[str, str | None]:
    media_type, _, params = header.partition(";")
    charset = None
    for param in params.split(";"):
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip().strip('"').lower()
    return media_type.strip().lower(), charset


def _content_length(headers: httpx.Headers) -> int | None:
    value = headers.get("content-length", "")
    return int(value) if value.isdigit() else None


def _sniff(declared: str, head: bytes, shown: str, media_types: frozenset[str]) -> str:
    """Check the first bytes against the declared type; return the type to use."""
    is_pdf = head.startswith(b"%PDF-")
    binary = not is_pdf and (
        head.startswith(_BINARY_MAGIC)
        or (b"\x00" in head and not head.startswith((b"\xff\xfe", b"\xfe\xff")))
    )
    if declared == "application/pdf":
        if not is_pdf:
            raise unsupported(f"{shown} claims to be a PDF but its content is not one.")
        return declared
    if is_pdf and "application/pdf" in media_types:
        return "application/pdf"
    if binary:
        raise unsupported(
            f"{shown} sent binary data (declared as {declared or 'nothing'}), which cannot be read as text."
        )
    if declared in _UNTYPED:
        stripped = head.lstrip()[:200].lower()
        return "text/html" if stripped.startswith((b"<!doctype", b"<html", b"<")) else "text/plain"
    return declared


class _Decoder:
    """Content-Encoding decoder that never produces more than it is asked for.

    zlib's ``max_length`` bounds the output of every call, so a small
    compressed body that would expand to gigabytes stops at the cap.
    """

    def __init__(self, encoding: str, shown: str) -> None:
        self._shown = shown
        name = encoding.strip().lower()
        if name in ("", "identity"):
            self._zlib = None
        elif name in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif name == "deflate":
            # Servers send both zlib-wrapped and raw deflate under this name.
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 32)
            self._raw_fallback = True
        else:
            raise unsupported(
                f"{shown} compressed its response with {name!r}, which is not supported."
            )
        self._first = True

    def feed(self, data: bytes, room: int) -> tuple[bytes, bool]:
        """Decode ``data``; return at most ``room`` bytes and whether more was left over."""
        if self._zlib is None:
            return data[:room], len(data) > room
        try:
            out = self._zlib.decompress(data, room + 1)
        except zlib.error:
            if self._first and getattr(self, "_raw_fallback", False):
                self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
                self._first = False
                return self.feed(data, room)
            raise failed(f"{self._shown} sent corrupt compressed data.") from None
        self._first = False
        over = len(out) > room or bool(self._zlib.unconsumed_tail)
        return out[:room], over

    def flush(self, room: int) -> bytes:
        if self._zlib is None:
            return b""
        try:
            return self._zlib.flush()[:room]
        except zlib.error:
            raise failed(f"{self._shown} sent corrupt compressed data.") from None


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


def _display_host(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return shown if port in (80, 443) else f"{shown}:{port}"


def _display_url(url: str | httpx.URL) -> str:
    text = str(url)
    if isinstance(url, httpx.URL):
        text = str(url.copy_with(query=None, fragment=None))
    return _clip(text)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _megabytes(count: int) -> str:
    return f"{count / (1024 * 1024):.1f} MB"
