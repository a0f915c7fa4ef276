"""OpenAlex through its works search, ``GET /works?search=…`` (JSON).

OpenAlex answers with a page of Work objects: ``ids`` (DOI, PMID, PMCID as URLs), the
``primary_location`` (the version of record and its venue), ``best_oa_location`` and
``open_access.oa_url`` (an open-access copy), every other ``location`` (an arXiv copy among
them), ``authorships`` and the abstract as an inverted index (word → positions), which we
put back together.
"""

from __future__ import annotations

from typing import Any

from research.engine.contracts import SCHOLARLY_ABSTRACT_MAX_CHARS
from research.engine.identifiers import ids_from_url
from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest
from research.sources.providers.scholarly import (
    build_metadata,
    dig,
    first_present,
    http_url,
    scholarly_hit,
)

# The API's largest page.
MAX_PER_PAGE = 200
# Only the fields we read, which keeps each answer a fraction of a full Work object.
SELECT_FIELDS = (
    "id,doi,display_name,title,publication_year,publication_date,ids,primary_location,"
    "best_oa_location,open_access,locations,authorships,is_authors_truncated,"
    "abstract_inverted_index"
)


class OpenAlexProvider:
    """Sends ``mailto`` (the polite pool) and ``api_key`` when they are configured."""

    name = "openalex"
    label = "OpenAlex"
    supports_site = False

    def __init__(
        self, client: ProviderClient, *, api_url: str, mailto: str = "", api_key: str = ""
    ) -> None:
        self._client = client
        self._endpoint = api_url.rstrip("/") + "/works"
        self._mailto = mailto
        self._api_key = api_key

    def search(self, request: SearchRequest) -> list[SearchHit]:
        params: dict[str, Any] = {
            "search": request.query,
            "per-page": min(request.limit, MAX_PER_PAGE),
            "select": SELECT_FIELDS,
        }
        if self._mailto:
            params["mailto"] = self._mailto
        if self._api_key:
            params["api_key"] = self._api_key
        payload = self._client.get_json(self._endpoint, params=params)
        results = payload.get("results") if isinstance(payload, dict) else None
        if not isinstance(results, list) or not all(isinstance(r, dict) for r in results):
            raise failed("OpenAlex answered with JSON that is not a list of works.")
        hits = []
        for work in results:
            hit = _hit(work)
            if hit is not None:
                hits.append(hit)
            if len(hits) >= request.limit:
                break
        return hits


def _hit(work: dict[str, Any]) -> SearchHit | None:
    primary = work.get("primary_location")
    best_oa = work.get("best_oa_location")
    locations = [loc for loc in (work.get("locations") or []) if isinstance(loc, dict)]
    authorships = [a for a in (work.get("authorships") or []) if isinstance(a, dict)]
    landing = first_present(http_url(dig(primary, "landing_page_url")), http_url(work.get("doi")))
    full_text = first_present(
        http_url(dig(best_oa, "pdf_url")),
        http_url(dig(work, "open_access", "oa_url")),
        http_url(dig(best_oa, "landing_page_url")),
    )
    metadata = build_metadata(
        "OpenAlex",
        doi=first_present(dig(work, "ids", "doi"), work.get("doi")),
        arxiv_id=_arxiv_location(locations),
        pmid=dig(work, "ids", "pmid"),
        pmcid=dig(work, "ids", "pmcid"),
        title=first_present(work.get("display_name"), work.get("title")),
        authors=[
            first_present(dig(a, "author", "display_name"), a.get("raw_author_name"))
            for a in authorships
        ],
        more_authors=work.get("is_authors_truncated") is True,
        venue=dig(primary, "source", "display_name"),
        year=work.get("publication_year"),
        abstract=abstract_from_inverted_index(work.get("abstract_inverted_index")),
        full_text_url=full_text,
        landing_url=landing,
    )
    return scholarly_hit(metadata, url=landing, published=work.get("publication_date"))


def _arxiv_location(locations: list[dict[str, Any]]) -> str | None:
    """The arXiv id of an arXiv copy among the work's locations (arXiv does not appear in
    ``ids``; its copy is a location on arxiv.org)."""
    for location in locations:
        for key in ("landing_page_url", "pdf_url"):
            url = location.get(key)
            if isinstance(url, str) and (arxiv := ids_from_url(url).get("arxiv")):
                return arxiv
    return None


def abstract_from_inverted_index(index: Any) -> str | None:
    """The abstract as text from OpenAlex's ``{word: [positions]}`` form, or ``None``.

    Positions are placed in order; words whose positions are not integers are skipped, and
    the text stops at the contract's abstract bound however many positions a record claims.
    """
    if not isinstance(index, dict) or not index:
        return None
    placed: list[tuple[int, str]] = []
    for word, positions in index.items():
        if not isinstance(word, str) or not isinstance(positions, list):
            continue
        placed.extend(
            (position, word)
            for position in positions
            if isinstance(position, int) and not isinstance(position, bool) and position >= 0
        )
    placed.sort()
    words: list[str] = []
    length = 0
    for _, word in placed:
        length += len(word) + 1
        if length > SCHOLARLY_ABSTRACT_MAX_CHARS:
            break
        words.append(word)
    return " ".join(words) or None
