"""Brave Search API (web search), authenticated with ``X-Subscription-Token``."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from research.sources.errors import failed
from research.sources.providers.base import (
    ProviderClient,
    SearchHit,
    SearchRequest,
    clean_hits,
    with_site,
)

MAX_COUNT = 20  # the API's upper bound for one page


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")
    url: object = None
    title: object = None
    description: object = None
    page_age: object = None


class _Web(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Result] = []


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")
    web: _Web | None = None


class BraveProvider:
    """Needs ``BRAVE_API_KEY``; understands the ``site:`` operator."""

    name = "brave"
    label = "Brave Search"
    supports_site = True

    def __init__(self, client: ProviderClient, *, api_url: str, api_key: str) -> None:
        self._client = client
        self._api_url = api_url
        self._api_key = api_key

    def search(self, request: SearchRequest) -> list[SearchHit]:
        if not self._api_key:
            raise failed("Brave Search is selected but BRAVE_API_KEY is not set.")
        payload = self._client.get_json(
            self._api_url,
            params={
                "q": with_site(request.query, request.site),
                "count": min(request.limit, MAX_COUNT),
            },
            headers={"X-Subscription-Token": self._api_key},
        )
        try:
            response = _Response.model_validate(payload)
        except ValidationError:
            raise failed(
                "Brave Search answered with JSON that is not a search result list."
            ) from None
        results = response.web.results if response.web else []
        return clean_hits(
            [(r.url, r.title, r.description, r.page_age) for r in results], request.limit
        )
