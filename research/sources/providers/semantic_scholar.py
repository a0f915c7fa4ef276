"""Semantic Scholar through the Academic Graph API, ``GET /paper/search`` (JSON).

The API answers ``{"total": n, "offset": 0, "next": 10, "data": [paper…]}`` with the fields we
ask for: ``externalIds`` (``DOI``, ``ArXiv``, ``PubMed``, ``PubMedCentral``…), ``url`` (the
paper's Semantic Scholar page), ``title``, ``abstract``, ``venue``, ``year``, ``authors`` and
``openAccessPdf`` (``{"url": …}``, an empty URL when there is none).
"""

from __future__ import annotations

import re
from typing import Any

from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest
from research.sources.providers.scholarly import (
    build_metadata,
    dig,
    first_present,
    http_url,
    scholarly_hit,
)

# The API's largest page for relevance search.
MAX_LIMIT = 100
FIELDS = "title,abstract,year,venue,journal,authors,externalIds,url,openAccessPdf,publicationDate"
# The search matches hyphenated terms only when the hyphen is a space (the API's own advice).
_HYPHEN = re.compile(r"(?<=\w)-(?=\w)")


class SemanticScholarProvider:
    """Sends the ``x-api-key`` header when a key is configured; works without one in the
    shared, more tightly rate-limited pool."""

    name = "semantic_scholar"
    label = "Semantic Scholar"
    supports_site = False

    def __init__(self, client: ProviderClient, *, api_url: str, api_key: str = "") -> None:
        self._client = client
        self._endpoint = api_url.rstrip("/") + "/paper/search"
        self._api_key = api_key

    def search(self, request: SearchRequest) -> list[SearchHit]:
        payload = self._client.get_json(
            self._endpoint,
            params={
                "query": _HYPHEN.sub(" ", request.query),
                "limit": min(request.limit, MAX_LIMIT),
                "fields": FIELDS,
            },
            headers={"x-api-key": self._api_key} if self._api_key else None,
        )
        if not isinstance(payload, dict) or not isinstance(payload.get("total"), int):
            raise failed("Semantic Scholar answered with JSON that is not a paper list.")
        papers = payload.get("data", [])
        if not isinstance(papers, list) or not all(isinstance(p, dict) for p in papers):
            raise failed("Semantic Scholar answered with JSON that is not a paper list.")
        hits = []
        for paper in papers:
            hit = _hit(paper)
            if hit is not None:
                hits.append(hit)
            if len(hits) >= request.limit:
                break
        return hits


def _hit(paper: dict[str, Any]) -> SearchHit | None:
    ids = paper.get("externalIds") if isinstance(paper.get("externalIds"), dict) else {}
    page = http_url(paper.get("url"))
    metadata = build_metadata(
        "Semantic Scholar",
        doi=ids.get("DOI"),
        arxiv_id=ids.get("ArXiv"),
        pmid=ids.get("PubMed"),
        pmcid=ids.get("PubMedCentral"),
        title=paper.get("title"),
        authors=[a.get("name") for a in paper.get("authors") or [] if isinstance(a, dict)],
        venue=first_present(paper.get("venue"), dig(paper, "journal", "name")),
        year=paper.get("year"),
        abstract=paper.get("abstract"),
        full_text_url=http_url(dig(paper, "openAccessPdf", "url")),
        landing_url=page,
    )
    return scholarly_hit(metadata, url=page, published=paper.get("publicationDate"))
