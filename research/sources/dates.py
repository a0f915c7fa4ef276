"""The publication date a page states about itself, and where it was read.

A date is taken only from what the page says about its own publication, in this order:

1. ``json_ld`` - schema.org ``datePublished`` (else ``dateModified``) of a top-level item or
   ``@graph`` member that is not a comment, review or answer;
2. ``meta`` - publication meta tags (Open Graph ``article:published_time``, Dublin Core,
   Highwire ``citation_publication_date`` and their kin), else modification meta tags;
3. ``time`` - a ``<time datetime>`` marked as the publication date (``itemprop``,
   ``pubdate``) or standing in a byline;
4. ``byline`` - a short dated line such as "Published 2 November 2023" or "Posted on 18 March
   2024" among the first blocks of the main text, before its running text begins.

Everything else is refused, because it dates something other than the text: copyright years
and "Last updated"/"This page last modified" stamps in footers (documentation generators write
the build time there), dates mentioned in the text, the server's ``Last-Modified`` header and
``http-equiv`` copies of it, dates after the moment of retrieval and dates before the web. When
the page does not say, the date is unknown (``None``) rather than guessed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Any

from lxml import etree

from research.engine.contracts import DateSource
from research.engine.text import MONTHS

# Meta tags naming the publication date, most specific first (name, property or itemprop).
_PUBLISHED_META = (
    "article:published_time",
    "og:article:published_time",
    "citation_publication_date",
    "citation_date",
    "citation_online_date",
    "dc.date.issued",
    "dcterms.issued",
    "dcterms.date",
    "dc.date",
    "dcterms.created",
    "dc.date.created",
    "datepublished",
    "article.published",
    "parsely-pub-date",
    "sailthru.date",
    "pubdate",
    "publishdate",
    "publish-date",
    "publication_date",
    "date",
)
# Meta tags naming the last change, used when no publication date is given.
_MODIFIED_META = (
    "article:modified_time",
    "og:updated_time",
    "dcterms.modified",
    "dc.date.modified",
    "datemodified",
    "article.updated",
)
# schema.org types whose dates are not the page's: a comment under an article is dated too.
_NOT_THE_PAGE = frozenset({"comment", "review", "answer", "question", "rating"})
# JSON-LD blocks larger than this are not read: metadata is small, and parsing megabytes of
# embedded data for a date would be waste.
_MAX_JSON_LD_CHARS = 100_000
# A byline is near the top of the text and short; a sentence that merely mentions a date is
# neither.
_BYLINE_BLOCKS = 6
_BYLINE_MAX_CHARS = 160
# The web began in 1991; an earlier "publication date" of a web page is a typo or a date the
# page talks about.
_EARLIEST_YEAR = 1991

_MONTH = r"(?P<month>" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_ISO = re.compile(r"(?<!\d)(?P<year>\d{4})[-/.](?P<mon>\d{1,2})[-/.](?P<day>\d{1,2})(?!\d)")
_DAY_MONTH_YEAR = re.compile(
    rf"(?<!\d)(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\s*,?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
_MONTH_DAY_YEAR = re.compile(
    rf"\b{_MONTH}\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?\s*,?\s+(?P<year>\d{{4}})\b",
    re.IGNORECASE,
)
# "Published 2 November 2023", "Posted on March 18, 2024", "First published: 2024-03-02",
# "By Marta Oyelaran, 6 February 2024": a line that says when this text appeared.
_BYLINE = re.compile(
    r"^(?:(?:first\s+|originally\s+)?published|posted|updated|last\s+updated|date[d]?|issued|"
    r"released|by\s+\S[^,|·•–—\d]{0,60}[,|·•–—])\s*(?:on\s+|:\s*)?",
    re.IGNORECASE,
)
_BYLINE_CLASS = re.compile(
    r"byline|dateline|post-?meta|entry-?meta|article-?meta|published|pubdate|post-?date|"
    r"entry-?date|posted-?on",
    re.IGNORECASE,
)
_COPYRIGHT = re.compile(r"©|&copy;|\bcopyright\b", re.IGNORECASE)


def _valid(year: int, month: int, day: int, latest: date) -> date | None:
    try:
        found = date(year, month, day)
    except ValueError:
        return None
    if found.year < _EARLIEST_YEAR or found > latest:
        return None
    return found


def parse_date(value: str, *, latest: date) -> date | None:
    """The calendar date in ``value`` (ISO ``2024-02-06T07:30:00+00:00``, ``2022/09/15``,
    ``2 November 2023``, ``March 18, 2024``), or ``None`` when it holds no full date or one
    outside [1991, ``latest``]."""
    value = value.strip()
    if not value:
        return None
    match = _ISO.search(value)
    if match:
        return _valid(int(match["year"]), int(match["mon"]), int(match["day"]), latest)
    for pattern in (_DAY_MONTH_YEAR, _MONTH_DAY_YEAR):
        match = pattern.search(value)
        if match:
            month = MONTHS[match["month"].lower()]
            return _valid(int(match["year"]), month, int(match["day"]), latest)
    return None


def publication_date(
    root: etree._Element,
    main_text: Sequence[str],
    *,
    now: datetime | None = None,
) -> tuple[str | None, DateSource | None]:
    """The page's publication date as ``YYYY-MM-DD`` and where it was read, or
    ``(None, None)`` when the page does not state one.

    ``main_text`` is the main content's blocks in reading order (the byline is looked for
    among the first of them); ``now`` is the moment of retrieval, after which no date can be.
    """
    latest = (now or datetime.now(UTC)).date()
    for source, candidates in (
        ("json_ld", _json_ld_dates(root)),
        ("meta", _meta_dates(root)),
        ("time", _time_dates(root)),
        ("byline", _byline_dates(main_text)),
    ):
        for candidate in candidates:
            found = parse_date(candidate, latest=latest)
            if found is not None:
                return found.isoformat(), source  # type: ignore[return-value]
    return None, None


def _json_ld_dates(root: etree._Element) -> Iterator[str]:
    items = []
    for script in root.iter("script"):
        if (script.get("type") or "").strip().lower() != "application/ld+json":
            continue
        text = script.text or ""
        if not text.strip() or len(text) > _MAX_JSON_LD_CHARS:
            continue
        try:
            data = json.loads(text)
        except ValueError:
            continue
        items.extend(_ld_items(data))
    for field in ("datePublished", "dateCreated", "dateModified"):
        for item in items:
            value = item.get(field)
            if isinstance(value, str):
                yield value


def _ld_items(data: Any) -> Iterator[dict[str, Any]]:
    """Top-level JSON-LD items and ``@graph`` members that describe the page itself."""
    if isinstance(data, list):
        for entry in data:
            yield from _ld_items(entry)
        return
    if not isinstance(data, dict):
        return
    graph = data.get("@graph")
    if isinstance(graph, list):
        yield from _ld_items(graph)
    kinds = data.get("@type")
    names = kinds if isinstance(kinds, list) else [kinds]
    if not any(str(name).lower() in _NOT_THE_PAGE for name in names if name):
        yield data


def _meta_dates(root: etree._Element) -> Iterator[str]:
    found: dict[str, str] = {}
    for meta in root.iter("meta"):
        if meta.get("http-equiv") is not None:
            continue  # a copy of an HTTP header (Last-Modified, Date), not the page's word
        content = meta.get("content")
        if not content:
            continue
        for attribute in ("property", "name", "itemprop"):
            key = (meta.get(attribute) or "").strip().lower()
            if key and key not in found:
                found[key] = content
    for key in (*_PUBLISHED_META, *_MODIFIED_META):
        if key in found:
            yield found[key]


def _time_dates(root: etree._Element) -> Iterator[str]:
    for element in root.iter("time"):
        value = element.get("datetime") or ""
        if not value:
            continue
        itemprop = (element.get("itemprop") or "").lower()
        marked = itemprop in ("datepublished", "datecreated") or element.get("pubdate") is not None
        if marked or _in_byline(element):
            yield value


def _in_byline(element: etree._Element) -> bool:
    node = element
    for _ in range(4):  # the time itself and a few wrappers around it
        if node is None:
            return False
        marks = f"{node.get('class') or ''} {node.get('id') or ''}"
        if _BYLINE_CLASS.search(marks):
            return True
        node = node.getparent()
    return False


def _byline_dates(main_text: Sequence[str]) -> Iterator[str]:
    """Dated lines at the top of the text: among its first blocks, before the first block of
    running text, and not its last block (a stamp at the very end is a footer)."""
    for line in main_text[: min(_BYLINE_BLOCKS, len(main_text) - 1)]:
        if len(line) > _BYLINE_MAX_CHARS:
            return
        if _COPYRIGHT.search(line):
            continue
        match = _BYLINE.match(line)
        if match:
            yield line[match.end() :]
