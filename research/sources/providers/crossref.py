"""Crossref through its REST API, ``GET /works?query=…`` (JSON).

Crossref answers ``{"status": "ok", "message-type": "work-list", "message": {"items": […]}}``.
Each item is the metadata a publisher deposited: ``DOI``, ``URL`` (its doi.org address),
``title`` and ``container-title`` as lists, ``author`` with ``given``/``family`` (or ``name``
for an organisation), dates as ``date-parts``, an optional JATS ``abstract`` and, in
``relation.has-preprint``, the preprint of the same work. Crossref does not say whether a full
text is open access, so its records name none.
"""

from __future__ import annotations

import re
from typing import Any

from research.engine.identifiers import arxiv_id_from_doi
from research.sources.errors import failed
from research.sources.providers.base import ProviderClient, SearchHit, SearchRequest
from research.sources.providers.scholarly import (
    build_metadata,
    dig,
    first_present,
    http_url,
    scholarly_hit,
)

# The API allows up to 1,000 rows; a search never asks for more than a few dozen.
MAX_ROWS = 1000
SELECT_FIELDS = (
    "DOI,URL,title,author,container-title,published,issued,abstract,relation,resource,type"
)
# A JATS abstract often opens with its own heading, <jats:title>Abstract</jats:title>, which
# is dropped; the headings of a structured abstract's sections become "Methods: " labels.
_JATS_ABSTRACT_HEADING = re.compile(r"^\s*<jats:title>\s*abstract\s*</jats:title>", re.IGNORECASE)
_JATS_SECTION_HEADING = re.compile(r"<jats:title>(.{0,200}?)</jats:title>", re.DOTALL)
_DATE_FIELDS = ("published", "published-print", "published-online", "issued")


class CrossrefProvider:
    """Sends ``mailto`` when configured, which puts requests in Crossref's polite pool."""

    name = "crossref"
    label = "Crossref"
    supports_site = False

    def __init__(self, client: ProviderClient, *, api_url: str, mailto: str = "") -> None:
        self._client = client
        self._endpoint = api_url.rstrip("/") + "/works"
        self._mailto = mailto

    def search(self, request: SearchRequest) -> list[SearchHit]:
        params: dict[str, Any] = {
            "query": request.query,
            "rows": min(request.limit, MAX_ROWS),
            "select": SELECT_FIELDS,
        }
        if self._mailto:
            params["mailto"] = self._mailto
        payload = self._client.get_json(self._endpoint, params=params)
        if not isinstance(payload, dict) or payload.get("status") != "ok":
            raise failed("Crossref answered with JSON that is not a work list.")
        items = dig(payload, "message", "items")
        if payload.get("message-type") != "work-list" or not isinstance(items, list):
            raise failed("Crossref answered with JSON that is not a work list.")
        hits = []
        for item in items:
            if not isinstance(item, dict):
                raise failed("Crossref answered with JSON that is not a work list.")
            hit = _hit(item)
            if hit is not None:
                hits.append(hit)
            if len(hits) >= request.limit:
                break
        return hits


def _hit(item: dict[str, Any]) -> SearchHit | None:
    date = _date_parts(item)
    abstract = item.get("abstract")
    metadata = build_metadata(
        "Crossref",
        doi=item.get("DOI"),
        arxiv_id=_preprint_arxiv_id(item),
        title=_first(item.get("title")),
        authors=[_author(a) for a in item.get("author") or [] if isinstance(a, dict)],
        venue=_first(item.get("container-title")),
        year=date[0] if date else None,
        abstract=_jats_abstract(abstract) if isinstance(abstract, str) else None,
        landing_url=first_present(
            http_url(dig(item, "resource", "primary", "URL")), http_url(item.get("URL"))
        ),
    )
    published = "-".join(f"{part:02d}" for part in date) if date and len(date) == 3 else None
    return scholarly_hit(metadata, url=item.get("URL"), published=published)


def _jats_abstract(abstract: str) -> str:
    """The abstract's JATS markup reduced to labelled text (tags are stripped later)."""
    abstract = _JATS_ABSTRACT_HEADING.sub("", abstract)
    return _JATS_SECTION_HEADING.sub(lambda m: f" {m.group(1).strip()}: ", abstract)


def _first(value: Any) -> Any:
    """Crossref writes titles and venues as lists; the first entry is the main one."""
    if isinstance(value, list):
        return next((entry for entry in value if isinstance(entry, str) and entry.strip()), None)
    return value


def _author(author: dict[str, Any]) -> str | None:
    given, family = author.get("given"), author.get("family")
    if isinstance(family, str) and family.strip():
        return f"{given} {family}" if isinstance(given, str) and given.strip() else family
    name = author.get("name")
    return name if isinstance(name, str) else None


def _date_parts(item: dict[str, Any]) -> list[int] | None:
    """``[year, month, day]`` (or a prefix) of the earliest publication date Crossref names."""
    for key in _DATE_FIELDS:
        parts = dig(item, key, "date-parts")
        if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
            values = parts[0][:3]
            if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
                return values
    return None


def _preprint_arxiv_id(item: dict[str, Any]) -> str | None:
    """The arXiv id of the preprint Crossref links in ``relation.has-preprint``, if any."""
    for relation in dig(item, "relation", "has-preprint") or []:
        if not isinstance(relation, dict) or not isinstance(relation.get("id"), str):
            continue
        kind, value = relation.get("id-type"), relation["id"]
        if kind == "arxiv":
            return value
        if kind == "doi" and (arxiv := arxiv_id_from_doi(value)):
            return str(arxiv)
    return None
