"""Tavily search API: a JSON POST with a bearer key; domain filters are native parameters."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, ValidationError

from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest, clean_hits

MAX_RESULTS = 20


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")
    url: object = None
    title: object = None
    content: object = None
    published_date: object = None


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Result] = []


class TavilyProvider:
    """Needs ``TAVILY_API_KEY``; restricts to a site with ``include_domains``."""

    name = "tavily"
    label = "Tavily"
    supports_site = True

    def __init__(self, client: ProviderClient, *, api_url: str, api_key: str) -> None:
        self._client = client
        self._api_url = api_url
        self._api_key = api_key

    def search(self, request: SearchRequest) -> list[SearchHit]:
        if not self._api_key:
            raise failed("Tavily is selected but TAVILY_API_KEY is not set.")
        body = {
            "query": request.query,
            "max_results": min(request.limit, MAX_RESULTS),
            "search_depth": "basic",
            "topic": "general",
            "include_answer": False,
            "include_raw_content": False,
            "include_domains": [request.site] if request.site else [],
            "exclude_domains": list(request.exclude_domains),
        }
        payload = self._client.post_json(
            self._api_url, body=body, headers={"Authorization": f"Bearer {self._api_key}"}
        )
        try:
            response = _Response.model_validate(payload)
        except ValidationError:
            raise failed("Tavily answered with JSON that is not a search result list.") from None
        return clean_hits(
            [(r.url, r.title, r.content, r.published_date) for r in response.results], request.limit
        )
