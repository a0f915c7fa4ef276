"""arXiv through its query API, which answers in Atom XML."""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

from lxml import etree

from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest, clean_hits
from research.sources.safe_fetch import XML_MEDIA_TYPES

MAX_RESULTS = 50
MAX_TERMS = 8
_ATOM = "{http://www.w3.org/2005/Atom}"
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
        rows = []
        for entry in feed.iter(f"{_ATOM}entry"):
            link = next(
                (
                    el.get("href")
                    for el in entry.iter(f"{_ATOM}link")
                    if el.get("rel") == "alternate"
                ),
                entry.findtext(f"{_ATOM}id"),
            )
            rows.append(
                (
                    _https_for_arxiv(link or ""),
                    entry.findtext(f"{_ATOM}title"),
                    entry.findtext(f"{_ATOM}summary"),
                    entry.findtext(f"{_ATOM}published"),
                )
            )
        return clean_hits(rows, request.limit)


def _https_for_arxiv(url: str) -> str:
    """arXiv's API still reports http:// links; the site itself is served over https."""
    parts = urlsplit(url.strip())
    if parts.scheme == "http" and parts.hostname in ("arxiv.org", "export.arxiv.org"):
        return urlunsplit(("https", "arxiv.org", parts.path, parts.query, ""))
    return url.strip()
