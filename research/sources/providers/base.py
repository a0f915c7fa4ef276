"""What every search provider shares: the interface, the HTTP client and result cleaning."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import datetime
from email.utils import parsedate_to_datetime
from html import unescape
from typing import Any, Protocol

from research.engine.contracts import ScholarlyMetadata
from research.engine.urls import is_http_url
from research.sources.errors import SourceError, failed
from research.sources.responses import JSON_MEDIA_TYPES
from research.sources.safe_fetch import SafeFetcher
from research.sources.snapshot import normalize_inline

MAX_RESPONSE_BYTES = 2 * 1024 * 1024
_TAG = re.compile(r"<[^>]{0,500}>")


@dataclass(frozen=True)
class SearchRequest:
    """One call to one provider.

    ``site`` restricts the call to one domain (providers that cannot do that
    are not asked); ``exclude_domains`` is a hint for providers that accept
    it: results are filtered by the source policy afterwards anyway.
    """

    query: str
    limit: int
    site: str | None = None
    exclude_domains: tuple[str, ...] = ()


@dataclass(frozen=True)
class SearchHit:
    """A cleaned result in the provider's own order; scholarly indexes add ``scholarly``."""

    url: str
    title: str
    snippet: str
    published_at: str | None = None
    scholarly: ScholarlyMetadata | None = None


class SearchProvider(Protocol):
    """A search back end. ``name`` is the setting value that selects it."""

    name: str
    label: str
    supports_site: bool

    def search(self, request: SearchRequest) -> list[SearchHit]:
        """Return hits in rank order; raise ``SourceError`` on failure."""
        ...


class ProviderClient:
    """HTTP for provider APIs, through the same SSRF-safe fetcher as pages.

    Turns transport and HTTP errors into sentences that name the provider
    and, for rejected credentials, the setting to check.
    """

    def __init__(
        self, fetcher: SafeFetcher, *, label: str, timeout: float, key_setting: str | None = None
    ) -> None:
        self._fetcher = fetcher
        self._label = label
        self._timeout = timeout
        self._key_setting = key_setting

    def get_json(
        self, url: str, *, params: dict[str, Any], headers: dict[str, str] | None = None
    ) -> Any:
        return self._json(
            self.request("GET", url, params=params, headers=headers, media_types=JSON_MEDIA_TYPES)
        )

    def post_json(self, url: str, *, body: Any, headers: dict[str, str] | None = None) -> Any:
        return self._json(
            self.request("POST", url, json_body=body, headers=headers, media_types=JSON_MEDIA_TYPES)
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        media_types: frozenset[str],
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        json_body: Any = None,
    ) -> bytes:
        try:
            response = self._fetcher.request(
                method,
                url,
                params=params,
                headers={"Accept": ", ".join(sorted(media_types)), **(headers or {})},
                json=json_body,
                media_types=media_types,
                max_bytes=MAX_RESPONSE_BYTES,
                follow_redirects=False,
                total_timeout=self._timeout,
            )
        except SourceError as error:
            if error.status in (401, 403):
                hint = f"; check {self._key_setting}" if self._key_setting else ""
                raise failed(
                    f"{self._label} rejected the request (HTTP {error.status}){hint}.",
                    status=error.status,
                ) from None
            raise SourceError(
                error.kind,
                f"{self._label}: {error.reason}",
                retryable=error.retryable,
                retry_after=error.retry_after,
                status=error.status,
            ) from None
        if response.truncated:
            raise failed(f"{self._label} sent a response larger than {MAX_RESPONSE_BYTES} bytes.")
        return response.content

    def _json(self, content: bytes) -> Any:
        try:
            return json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise failed(f"{self._label} answered with malformed JSON.") from None


def clean_text(value: Any, limit: int) -> str:
    """Plain text from a provider field that may contain HTML highlighting."""
    if not isinstance(value, str):
        return ""
    text = normalize_inline(unescape(_TAG.sub("", value)))
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def clean_hits(raw: list[tuple[Any, Any, Any, Any]], limit: int) -> list[SearchHit]:
    """Keep http(s) results only (a result may be a javascript: or data: URL) and tidy fields."""
    hits: list[SearchHit] = []
    for url, title, snippet, published in raw:
        if not isinstance(url, str) or not is_http_url(url.strip()):
            continue
        hits.append(
            SearchHit(
                url=url.strip(),
                title=clean_text(title, 300),
                snippet=clean_text(snippet, 600),
                published_at=parse_date(published),
            )
        )
        if len(hits) >= limit:
            break
    return hits


def parse_date(value: Any) -> str | None:
    """An ISO date (YYYY-MM-DD) from the date formats providers use, or None."""
    if not isinstance(value, str) or not value.strip():
        return None
    text = value.strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).date().isoformat()
    except ValueError:
        pass
    try:
        return parsedate_to_datetime(text).date().isoformat()
    except (TypeError, ValueError):
        return None


def with_site(query: str, site: str | None) -> str:
    """Append a ``site:`` operator for engines that understand it."""
    return f"{query} site:{site}" if site else query
