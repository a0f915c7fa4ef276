"""Building the normalised snapshot text that evidence offsets point into.

A snapshot is plain text: blocks separated by a blank line, list items and
table rows on their own lines, whitespace collapsed, Unicode in NFC. Because
excerpts are verified against this exact string, the rules here must stay
stable: changing them changes every offset and every content hash.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from research.engine.contracts import Heading, PageSpan
from research.engine.ledger import snapshot_content_hash
from research.sources.challenges import Gate

# Invisible characters that only get in the way of matching quotations.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_SPACES = re.compile(r"[^\S\n]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BLANK_LINES = re.compile(r"\n{3,}")


def normalize_inline(text: str) -> str:
    """One line of text: NFC, no invisible or control characters, single spaces."""
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    text = _CONTROL.sub(" ", text.replace("\r", " ").replace("\n", " "))
    return _SPACES.sub(" ", text).strip()


def normalize_block(text: str) -> str:
    """A multi-line block: each line normalised, runs of blank lines reduced to one."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n")).translate(
        _INVISIBLE
    )
    lines = [_SPACES.sub(" ", _CONTROL.sub(" ", line)).strip() for line in text.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


@dataclass
class SnapshotBuilder:
    """Appends blocks to a snapshot while recording heading and page offsets."""

    parts: list[str] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    pages: list[PageSpan] = field(default_factory=list)
    length: int = 0

    def _append(self, text: str) -> int:
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        return start

    def heading(self, text: str, level: int) -> None:
        """Add a heading as its own block and remember where it starts."""
        text = normalize_inline(text)
        if text:
            offset = self._append(text)
            self.headings.append(Heading(offset=offset, level=min(max(level, 1), 6), text=text))

    def paragraph(self, text: str) -> None:
        """Add one block of running text."""
        text = normalize_inline(text)
        if text:
            self._append(text)

    def lines(self, lines: list[str]) -> None:
        """Add a block whose lines stay separate (list items, table rows)."""
        kept = [line for line in (normalize_inline(item) for item in lines) if line]
        if kept:
            self._append("\n".join(kept))

    def block(self, text: str) -> int | None:
        """Add pre-formatted text (a PDF page, a plain-text file); return its start offset."""
        text = normalize_block(text)
        if not text:
            return None
        return self._append(text)

    def page(self, number: int, text: str) -> None:
        """Add one PDF page and record its character span."""
        start = self.block(text)
        if start is not None:
            self.pages.append(PageSpan(page=number, start=start, end=self.length))

    @property
    def text(self) -> str:
        return "".join(self.parts)


@dataclass
class ExtractedText:
    """The readable text of one document, with its locators and metadata."""

    text: str
    headings: list[Heading] = field(default_factory=list)
    pages: list[PageSpan] = field(default_factory=list)
    title: str = ""
    author: str | None = None
    publisher: str | None = None
    published_at: str | None = None
    language: str | None = None
    canonical_link: str | None = None
    gate: Gate | None = None


@dataclass(frozen=True)
class Snapshot:
    """Bounded snapshot text with its locators and hash."""

    text: str
    headings: list[Heading]
    pages: list[PageSpan]
    truncated: bool
    content_hash: str
    content_bytes: int


def bound_snapshot(
    text: str, headings: list[Heading], pages: list[PageSpan], max_bytes: int
) -> Snapshot:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes on a character boundary.

    Headings that start past the cut are dropped and page spans are clipped, so
    every locator still points inside the text. The hash is the engine's
    ``snapshot_content_hash`` of the bounded text (what is stored and what
    excerpts are checked against), so mirrors that differ only in whitespace
    share it.
    """
    encoded = text.encode("utf-8")
    truncated = len(encoded) > max_bytes
    if truncated:
        # Decoding with "ignore" drops a multi-byte character cut in half.
        text = encoded[:max_bytes].decode("utf-8", errors="ignore").rstrip()
        encoded = text.encode("utf-8")
        end = len(text)
        headings = [h for h in headings if h.offset + len(h.text) <= end]
        pages = [
            PageSpan(page=p.page, start=p.start, end=min(p.end, end))
            for p in pages
            if p.start < end
        ]
    return Snapshot(
        text=text,
        headings=list(headings),
        pages=list(pages),
        truncated=truncated,
        content_hash=snapshot_content_hash(text),
        content_bytes=len(encoded),
    )
