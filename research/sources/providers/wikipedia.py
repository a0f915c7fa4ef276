"""Wikipedia (or any MediaWiki) full-text search through ``api.php?action=query&list=search``."""

from __future__ import annotations

from urllib.parse import quote, urlsplit

from pydantic import BaseModel, ConfigDict, ValidationError

from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest, clean_hits

MAX_LIMIT = 50


class _Page(BaseModel):
    model_config = ConfigDict(extra="ignore")
    title: str
    snippet: str = ""


class _Query(BaseModel):
    model_config = ConfigDict(extra="ignore")
    search: list[_Page] = []


class _Response(BaseModel):
    model_config = ConfigDict(extra="ignore")
    query: _Query | None = None
    error: dict | None = None


class WikipediaProvider:
    """Article URLs are built as ``<scheme>://<api host>/wiki/<Title>``, as on Wikimedia wikis."""

    name = "wikipedia"
    label = "Wikipedia"
    supports_site = False

    def __init__(self, client: ProviderClient, *, api_url: str) -> None:
        self._client = client
        self._api_url = api_url
        parts = urlsplit(api_url)
        self._article_base = f"{parts.scheme}://{parts.netloc}/wiki/"

    def search(self, request: SearchRequest) -> list[SearchHit]:
        payload = self._client.get_json(
            self._api_url,
            params={
                "action": "query",
                "list": "search",
                "srsearch": request.query,
                "srlimit": min(request.limit, MAX_LIMIT),
                "srprop": "snippet",
                "format": "json",
                "formatversion": 2,
                "utf8": 1,
            },
        )
        try:
            response = _Response.model_validate(payload)
        except ValidationError:
            raise failed("Wikipedia answered with JSON that is not a search result list.") from None
        if response.error:
            info = response.error.get("info") or response.error.get("code") or "unknown error"
            raise failed(f"Wikipedia refused the search: {info}.")
        pages = response.query.search if response.query else []
        return clean_hits(
            [
                (
                    self._article_base + quote(p.title.replace(" ", "_"), safe="()_,'-"),
                    p.title,
                    p.snippet,
                    None,
                )
                for p in pages
            ],
            request.limit,
        )
