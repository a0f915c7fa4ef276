"""arXiv through its query API, which answers in Atom XML (with arXiv's own extension
elements for the DOI and journal reference of a published version)."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from lxml import etree

from research.engine.identifiers import arxiv_id_from_path
from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest
from research.sources.providers.scholarly import build_metadata, scholarly_hit
from research.sources.responses import XML_MEDIA_TYPES

MAX_RESULTS = 50
MAX_TERMS = 8
_ATOM = "{http://www.w3.org/2005/Atom}"
_ARXIV = "{http://arxiv.org/schemas/atom}"
_TERM = re.compile(r"[\w-]+", re.UNICODE)
# No DTDs, no entities, no network: the response is untrusted XML.
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)


class ArxivProvider:
    """Searches all fields for every query term (``all:a AND all:b``), by relevance."""

    name = "arxiv"
    label = "arXiv"
    supports_site = False

    def __init__(self, client: ProviderClient, *, api_url: str) -> None:
        self._client = client
        self._api_url = api_url

    def search(self, request: SearchRequest) -> list[SearchHit]:
        terms = _TERM.findall(request.query)[:MAX_TERMS]
        if not terms:
            return []
        content = self._client.request(
            "GET",
            self._api_url,
            params={
                "search_query": " AND ".join(f"all:{term}" for term in terms),
                "start": 0,
                "max_results": min(request.limit, MAX_RESULTS),
                "sortBy": "relevance",
            },
            media_types=XML_MEDIA_TYPES,
        )
        try:
            feed = etree.fromstring(content, parser=_PARSER)  # noqa: S320 - hardened parser above
        except etree.XMLSyntaxError:
            raise failed("arXiv answered with malformed XML.") from None
        hits = []
        for entry in feed.iter(f"{_ATOM}entry"):
            hit = _hit(entry)
            if hit is not None:
                hits.append(hit)
            if len(hits) >= request.limit:
                break
        return hits


def _hit(entry: Any) -> SearchHit | None:
    """A hit for one Atom entry, with the arXiv id (from the entry's ``id``, which is always
    its abs URL), the authors, the PDF link and, when the authors gave them, the DOI and
    journal reference of the published version."""
    entry_id = (entry.findtext(f"{_ATOM}id") or "").strip()
    link = next(
        (el.get("href") for el in entry.iter(f"{_ATOM}link") if el.get("rel") == "alternate"),
        entry_id,
    )
    pdf = next(
        (el.get("href") for el in entry.iter(f"{_ATOM}link") if el.get("title") == "pdf"), None
    )
    arxiv = arxiv_id_from_path(urlsplit(entry_id).path)
    published = entry.findtext(f"{_ATOM}published")
    metadata = build_metadata(
        "arXiv",
        doi=entry.findtext(f"{_ARXIV}doi"),
        arxiv_id=str(arxiv) if arxiv else None,
        title=entry.findtext(f"{_ATOM}title"),
        authors=[el.findtext(f"{_ATOM}name") for el in entry.iter(f"{_ATOM}author")],
        venue=entry.findtext(f"{_ARXIV}journal_ref"),
        year=published,
        abstract=entry.findtext(f"{_ATOM}summary"),
        full_text_url=_https_for_arxiv(pdf) if pdf else None,
        landing_url=_https_for_arxiv(link or ""),
    )
    if not metadata.landing_url:
        return None
    return scholarly_hit(metadata, published=published)


def _https_for_arxiv(url: str) -> str:
    """arXiv's API still reports http:// links; the site itself is served over https."""
    parts = urlsplit(url.strip())
    if parts.scheme == "http" and parts.hostname in ("arxiv.org", "export.arxiv.org"):
        return urlunsplit(("https", "arxiv.org", parts.path, parts.query, ""))
    return url.strip()
