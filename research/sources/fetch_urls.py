"""Parsing and showing the URLs ``SafeFetcher`` is asked for and redirected to.

Parsing refuses non-http(s) schemes, embedded credentials, control characters and
hosts that are not valid; the display helpers shorten URLs and sizes for messages.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from research.sources.addresses import (
    InvalidHostError,
    IPAddress,
    forbidden_address_reason,
    normalize_host,
    parse_ip_host,
)
from research.sources.errors import blocked, failed

# --------------------------------------------------------------------------------------------
# Parsing
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


# --------------------------------------------------------------------------------------------
# Display
# --------------------------------------------------------------------------------------------


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
