"""Ranking passages of uploaded documents for a query, with BM25 (``bm25s``).

A document is cut into passages that a reader would quote from: its blocks (headings,
paragraphs, list items, table cells) gathered up to ``PASSAGE_CHARS``, never across a PDF page
boundary, or, for PDFs and plain text (no block map), its paragraphs within each page. Every
passage is indexed with its document's title and nearest heading, so "the 2023 results" finds
the table cell under the heading "Results 2023". The ranking is the same on SQLite and
PostgreSQL, because it never asks the database to rank.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

import bm25s

from research.engine.contracts import SearchCandidate, SourceDocument
from research.engine.text import content_terms

# About two paragraphs: long enough to carry a claim and its context, short enough that a
# passage's score says something about that claim and not about the whole chapter.
PASSAGE_CHARS = 1200
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


def terms(text: str) -> list[str]:
    """The terms of ``text`` that carry meaning, as the engine matches them (folded, stop words
    left out, Snowball-stemmed: engine/text.py), so "costs" finds a passage about the cost."""
    return content_terms(text)


@dataclass(frozen=True)
class Passage:
    """The characters ``[start, end)`` of one document's snapshot text."""

    document: int  # index into the index's documents
    start: int
    end: int
    page: int | None
    heading: str


@dataclass(frozen=True)
class PassageHit:
    """A ranked passage: its document, where it is, and its text."""

    url: str
    title: str
    start: int
    end: int
    page: int | None
    heading: str
    text: str
    score: float


def _spans(document: SourceDocument) -> list[tuple[int, int]]:
    """Raw units in text order: blocks when the snapshot has a block map, else paragraphs."""
    if document.blocks:
        return [(block.start, block.end) for block in document.blocks]
    spans = []
    position = 0
    for match in _PARAGRAPH_BREAK.finditer(document.text):
        spans.append((position, match.start()))
        position = match.end()
    spans.append((position, len(document.text)))
    return [(start, end) for start, end in spans if document.text[start:end].strip()]


def _page_at(document: SourceDocument, offset: int) -> int | None:
    for span in document.pages:
        if span.start <= offset < span.end:
            return span.page
    return None


def passages_of(document: SourceDocument, index: int = 0) -> list[Passage]:
    """``document`` cut into passages (see the module's docstring)."""
    offsets = [heading.offset for heading in document.headings]

    def heading_at(offset: int) -> str:
        position = bisect_right(offsets, offset) - 1
        return document.headings[position].text if position >= 0 else ""

    passages: list[Passage] = []
    start = end = -1
    page: int | None = None
    for unit_start, unit_end in _spans(document):
        unit_page = _page_at(document, unit_start)
        if start >= 0 and (unit_page != page or unit_end - start > PASSAGE_CHARS):
            passages.append(Passage(index, start, end, page, heading_at(start)))
            start = -1
        if start < 0:
            start, page = unit_start, unit_page
        end = unit_end
        while end - start > PASSAGE_CHARS:
            # One unit longer than a passage (a PDF page without paragraph breaks): cut at
            # the last space before the limit.
            cut = document.text.rfind(" ", start, start + PASSAGE_CHARS)
            cut = cut if cut > start else start + PASSAGE_CHARS
            passages.append(Passage(index, start, cut, page, heading_at(start)))
            start = cut + 1
    if start >= 0 and end > start:
        passages.append(Passage(index, start, end, page, heading_at(start)))
    return passages


class DocumentIndex:
    """A BM25 index over the passages of some documents; build once, query many times."""

    def __init__(self, documents: Sequence[SourceDocument]) -> None:
        self.documents = list(documents)
        self.passages = [
            passage
            for position, document in enumerate(self.documents)
            for passage in passages_of(document, position)
        ]
        self._retriever = bm25s.BM25()
        if self.passages:
            self._retriever.index(
                [self._passage_terms(p) or ["\x00"] for p in self.passages], show_progress=False
            )

    def _passage_terms(self, passage: Passage) -> list[str]:
        document = self.documents[passage.document]
        text = document.text[passage.start : passage.end]
        return terms(f"{document.title} {passage.heading} {text}")

    def search(self, query: str, *, limit: int) -> list[PassageHit]:
        """The ``limit`` best passages for ``query`` (those sharing at least one term), best
        first; ties keep document and text order."""
        words = terms(query)
        if not self.passages or not words:
            return []
        scores = self._retriever.get_scores(words)
        ranked = sorted(
            (i for i in range(len(self.passages)) if scores[i] > 0),
            key=lambda i: (-float(scores[i]), i),
        )
        hits = []
        for i in ranked[:limit]:
            passage = self.passages[i]
            document = self.documents[passage.document]
            hits.append(
                PassageHit(
                    url=document.canonical_url,
                    title=document.title,
                    start=passage.start,
                    end=passage.end,
                    page=passage.page,
                    heading=passage.heading,
                    text=document.text[passage.start : passage.end],
                    score=float(scores[i]),
                )
            )
        return hits


# A candidate's snippet is as long as a web search result's (providers/scholarly.py).
SNIPPET_CHARS = 600


def document_candidates(hits: Sequence[PassageHit], *, limit: int) -> list[SearchCandidate]:
    """One search candidate per document, ranked by its best passage (the snippet)."""
    candidates: dict[str, SearchCandidate] = {}
    for hit in hits:
        if hit.url in candidates:
            continue
        where = f"page {hit.page}" if hit.page else (hit.heading or "")
        snippet = " ".join(hit.text.split())[:SNIPPET_CHARS]
        candidates[hit.url] = SearchCandidate(
            url=hit.url,
            title=hit.title,
            snippet=f"({where}) {snippet}" if where else snippet,
            provider="documents",
            rank=len(candidates) + 1,
        )
        if len(candidates) == limit:
            break
    return list(candidates.values())
