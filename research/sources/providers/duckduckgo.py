"""DuckDuckGo (and the other engines ddgs can reach) through the ``ddgs`` package.

ddgs does its own HTTP with a browser-like client, so these calls do not go
through ``SafeFetcher``; they only ever reach the public search engines ddgs
knows. The result URLs are fetched later through ``SafeFetcher`` like any
other. The client is created by an injectable factory so tests can hand in a
fake with the same ``text()`` method.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from research.sources.errors import failed
from research.sources.providers.base import SearchHit, SearchRequest, clean_hits, with_site

DdgsFactory = Callable[[], Any]


def default_ddgs_factory(timeout: float) -> DdgsFactory:
    """A factory for real ``ddgs.DDGS`` clients; fails with a clear sentence when ddgs is missing."""

    def create() -> Any:
        try:
            from ddgs import DDGS
        except ImportError:
            raise failed(
                "DuckDuckGo search needs the 'ddgs' package, which is not installed."
            ) from None
        return DDGS(timeout=max(1, int(timeout)))

    return create


class DuckDuckGoProvider:
    """Text search through ``DDGS().text()``; ``backend`` picks ddgs's engine (default duckduckgo)."""

    name = "duckduckgo"
    label = "DuckDuckGo"
    supports_site = True

    def __init__(self, factory: DdgsFactory, *, backend: str = "duckduckgo") -> None:
        self._factory = factory
        self._backend = backend

    def search(self, request: SearchRequest) -> list[SearchHit]:
        client = self._factory()
        try:
            raw = client.text(
                with_site(request.query, request.site),
                max_results=request.limit,
                safesearch="moderate",
                backend=self._backend,
            )
        except Exception as error:  # ddgs raises its own hierarchy; classify it by name
            if _is_empty_result(error):
                return []
            raise _classify(error) from None
        rows = [
            (r.get("href"), r.get("title"), r.get("body"), r.get("date"))
            for r in raw or []
            if isinstance(r, dict)
        ]
        return clean_hits(rows, request.limit)


def _is_empty_result(error: Exception) -> bool:
    # ddgs reports an empty result page as an exception; it is not a failure.
    return type(error).__name__ == "DDGSException" and "no results" in str(error).lower()


def _classify(error: Exception) -> Exception:
    name = type(error).__name__
    message = str(error) or name
    if name == "RatelimitException":
        return failed(
            "DuckDuckGo is rate limiting our searches; try again shortly.", retryable=True
        )
    if name == "TimeoutException" or "timed out" in message.lower():
        return failed("DuckDuckGo did not answer in time.", retryable=True)
    if name == "DDGSException":
        return failed(f"DuckDuckGo search failed: {message}", retryable=True)
    return failed(f"DuckDuckGo search failed unexpectedly ({name}: {message}).")
