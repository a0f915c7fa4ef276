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
Beside it: ``pinning`` (DNS, pinned connections), ``fetch_urls`` (parsing URLs) and
``responses`` (statuses, media types, bounded bodies).
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import certifi
import httpcore
import httpx

from research.engine.ports import CandidateDrop
from research.sources.addresses import (
    METADATA_HOSTNAMES,
    HostAllowList,
    IPAddress,
    forbidden_address_reason,
    forbidden_hostname_reason,
    forbidden_port_reason,
    is_metadata_address,
)
from research.sources.config import SourcesConfig
from research.sources.deadlines import FetchLimits
from research.sources.errors import SourceError, blocked, failed, unsupported
from research.sources.fetch_urls import (
    _display_host,
    _display_url,
    _ip_literal,
    _megabytes,
    _parse_url,
    _redirect_target,
    _url_host,
    parsed_host_text,
)
from research.sources.pinning import (
    _DNS_POOL,
    Destination,
    PinnedTransport,
    Resolver,
    _is_certificate_error,
    static_hosts_resolver,
    system_resolver,
)
from research.sources.responses import (
    _SNIFF_BYTES,
    _UNTYPED,
    PAGE_MEDIA_TYPES,
    FetchResponse,
    _content_length,
    _content_type,
    _Decoder,
    _raise_for_status,
    _sniff,
)

RedirectGuard = Callable[[str], None]
"""Called with every URL before it is requested; raises ``SourceError`` to refuse it."""

_REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


class _Refused(SourceError):
    """A refusal of the address as written, with the phrase a search step counts it by."""

    def __init__(self, drop: CandidateDrop, reason: str) -> None:
        super().__init__("blocked", reason)
        self.drop = drop


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
