"""SearXNG, a self-hosted metasearch engine, through its JSON API (``/search?format=json``)."""

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


class _Result(BaseModel):
    model_config = ConfigDict(extra="ignore")
    url: object = None
    title: object = None
    content: object = None
    publishedDate: object = None  # noqa: N815 - SearXNG's field name


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")
    results: list[_Result] = []


class SearxngProvider:
    """Queries ``{SEARXNG_URL}/search``; the instance must have the JSON format enabled."""

    name = "searxng"
    label = "SearXNG"
    supports_site = True

    def __init__(self, client: ProviderClient, base_url: str) -> None:
        self._client = client
        self._endpoint = base_url.rstrip("/") + "/search" if base_url else ""

    def search(self, request: SearchRequest) -> list[SearchHit]:
        if not self._endpoint:
            raise failed("SearXNG is selected but SEARXNG_URL is not set.")
        payload = self._client.get_json(
            self._endpoint,
            params={
                "q": with_site(request.query, request.site),
                "format": "json",
                "pageno": 1,
                "safesearch": 1,
            },
        )
        try:
            response = _Response.model_validate(payload)
        except ValidationError:
            raise failed("SearXNG answered with JSON that is not a search result list.") from None
        return clean_hits(
            [(r.url, r.title, r.content, r.publishedDate) for r in response.results], request.limit
        )
