"""What ``SafeFetcher`` accepts from a server: media types, statuses and bounded bodies.

``FetchResponse`` is a successful response; the helpers turn an HTTP status into
a ``SourceError`` with a sentence, parse the declared content type, check the first
bytes against it, and decode a compressed body without producing more than the cap.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx

from research.engine.retry import retry_after_seconds
from research.sources.errors import SourceError, failed, unsupported

PAGE_MEDIA_TYPES: frozenset[str] = frozenset(
    {"text/html", "application/xhtml+xml", "text/plain", "application/pdf"}
)
JSON_MEDIA_TYPES: frozenset[str] = frozenset({"application/json"})
XML_MEDIA_TYPES: frozenset[str] = frozenset({"application/atom+xml", "application/xml", "text/xml"})

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
