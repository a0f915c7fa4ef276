"""What the scholarly providers share: metadata built defensively, hits built from metadata.

An index's record is untrusted input. One record with a malformed DOI or an over-long author
list must not sink a whole result page, so each field is checked on its own: a malformed
identifier or URL is dropped (and logged), text is cleaned and cut to the contract's bounds.
A response of the wrong *shape* is refused by the provider with a sentence naming it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from typing import Any

from research.engine.contracts import (
    SCHOLARLY_ABSTRACT_MAX_CHARS,
    SCHOLARLY_AUTHOR_MAX_CHARS,
    SCHOLARLY_MAX_AUTHORS,
    SCHOLARLY_TITLE_MAX_CHARS,
    SCHOLARLY_VENUE_MAX_CHARS,
    ScholarlyMetadata,
)
from research.engine.identifiers import (
    doi_url,
    ids_from_url,
    normalize_doi,
    normalize_pmcid,
    normalize_pmid,
    parse_arxiv_id,
)
from research.engine.urls import is_http_url
from research.sources.providers.base import SearchHit, clean_text, parse_date

logger = logging.getLogger(__name__)

# A search result's snippet is the abstract's beginning, as long as other providers' snippets.
SNIPPET_CHARS = 600


def text_or_none(value: Any, limit: int) -> str | None:
    """Cleaned text (markup stripped, whitespace collapsed, cut to ``limit``), or ``None``."""
    cleaned = clean_text(value, limit)
    return cleaned or None


def http_url(value: Any) -> str | None:
    """``value`` when it is an http(s) URL, else ``None``."""
    if isinstance(value, str) and is_http_url(value.strip()):
        return value.strip()
    return None


def year_of(value: Any) -> int | None:
    """A four-digit year from an int or the start of a date string, else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 1000 <= value <= 9999 else None
    if isinstance(value, str) and len(value) >= 4 and value[:4].isdigit():
        return year_of(int(value[:4]))
    return None


def _checked(
    label: str, kind: str, value: Any, normalize: Callable[[Any], str | None]
) -> str | None:
    if value is None or value == "":
        return None
    normalized = normalize(value) if isinstance(value, str | int) else None
    if normalized is None:
        logger.warning("%s named a malformed %s (%r); it is ignored.", label, kind, value)
    return normalized


def pmid_of(value: Any) -> str | None:
    """A PMID from digits or a PubMed URL (OpenAlex writes ``https://pubmed…/123``)."""
    if isinstance(value, str) and "://" in value:
        return ids_from_url(value).get("pmid")
    return normalize_pmid(value) if isinstance(value, str | int) else None


def pmcid_of(value: Any) -> str | None:
    """A PMCID from ``PMC123``, digits or a PubMed Central URL."""
    if isinstance(value, str) and "://" in value:
        return ids_from_url(value).get("pmcid")
    return normalize_pmcid(value) if isinstance(value, str | int) else None


def build_metadata(
    label: str,
    *,
    doi: Any = None,
    arxiv_id: Any = None,
    pmid: Any = None,
    pmcid: Any = None,
    title: Any = None,
    authors: Iterable[Any] = (),
    more_authors: bool = False,
    venue: Any = None,
    year: Any = None,
    abstract: Any = None,
    full_text_url: Any = None,
    landing_url: Any = None,
) -> ScholarlyMetadata:
    """``ScholarlyMetadata`` from an index's raw fields, each one checked on its own."""
    names = [name for name in (clean_text(a, SCHOLARLY_AUTHOR_MAX_CHARS) for a in authors) if name]
    return ScholarlyMetadata(
        doi=_checked(label, "DOI", doi, normalize_doi),
        arxiv_id=_checked(
            label, "arXiv id", arxiv_id, lambda v: str(p) if (p := parse_arxiv_id(v)) else None
        ),
        pmid=_checked(label, "PubMed id", pmid, pmid_of),
        pmcid=_checked(label, "PubMed Central id", pmcid, pmcid_of),
        title=clean_text(title, SCHOLARLY_TITLE_MAX_CHARS),
        authors=names[:SCHOLARLY_MAX_AUTHORS],
        more_authors=more_authors or len(names) > SCHOLARLY_MAX_AUTHORS,
        venue=text_or_none(venue, SCHOLARLY_VENUE_MAX_CHARS),
        year=year_of(year),
        abstract=text_or_none(abstract, SCHOLARLY_ABSTRACT_MAX_CHARS),
        full_text_url=http_url(full_text_url),
        landing_url=http_url(landing_url),
    )


def scholarly_hit(
    metadata: ScholarlyMetadata, *, url: str | None = None, published: Any = None
) -> SearchHit | None:
    """A search hit for a record: at ``url`` (the record's own page) or else its landing page,
    its full text or its DOI's resolver address. ``None`` when the record has no address."""
    address = http_url(url) or metadata.landing_url or metadata.full_text_url
    if address is None and metadata.doi:
        address = doi_url(metadata.doi)
    if address is None:
        return None
    return SearchHit(
        url=address,
        title=metadata.title,
        snippet=clean_text(metadata.abstract or "", SNIPPET_CHARS),
        published_at=parse_date(published) if published else None,
        scholarly=metadata,
    )


def first_present(*values: Any) -> Any:
    """The first value that is neither ``None`` nor empty."""
    return next((value for value in values if value not in (None, "", [], {})), None)


def dig(data: Any, *path: str) -> Any:
    """``data[path[0]][path[1]]…`` through dicts, or ``None`` where a step is missing or not a
    dict (an index's JSON may omit or null any object)."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
