"""Building the normalised snapshot text that evidence offsets point into.

A snapshot is plain text made of blocks and the separators between them. For an HTML page
every block is also recorded in the block map (``Block``: start, end, kind), so excerpts can be
kept inside one block and code blocks quoted whole. Separators are white space only and say
how far apart two blocks are: a tab between the cells of a table row, a line break between list
items, table rows, definition terms and descriptions and lines broken by ``<br>``, a blank line
between paragraphs. Inside a prose block white space is collapsed; a code block keeps its line
breaks and indentation. Unicode is NFC. Because excerpts are verified against this exact
string, the rules here must stay stable: changing them changes every offset and every content
hash.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from research.engine.contracts import Block, BlockKind, DateSource, Heading, PageSpan
from research.engine.ledger import clip_blocks, snapshot_content_hash
from research.sources.challenges import Gate

# Invisible characters that only get in the way of matching quotations.
_INVISIBLE = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"))
_SPACES = re.compile(r"[^\S\n]+")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BLANK_LINES = re.compile(r"\n{3,}")
# In code a tab is layout, not a control character.
_CODE_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")


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


def normalize_code(text: str) -> str:
    """Preformatted text as a reader sees it: lines, indentation and tabs kept, trailing
    white space and blank lines at either end dropped, no control or invisible characters."""
    text = unicodedata.normalize("NFC", text.replace("\r\n", "\n").replace("\r", "\n")).translate(
        _INVISIBLE
    )
    lines = [_CODE_CONTROL.sub(" ", line).rstrip() for line in text.split("\n")]
    while lines and not lines[0].strip():
        lines.pop(0)
    while lines and not lines[-1].strip():
        lines.pop()
    return "\n".join(lines)


# The separators between blocks, weakest first (see the module docstring).
CELL_BREAK = "\t"
LINE_BREAK = "\n"
PARAGRAPH_BREAK = "\n\n"


@dataclass
class SnapshotBuilder:
    """Appends blocks to a snapshot while recording heading, page and block offsets.

    ``heading``, ``paragraph`` and ``code`` add blocks of an HTML page to the block map;
    ``block`` and ``page`` add text whose structure is not known (plain text, PDF pages),
    which the block map does not describe.
    """

    parts: list[str] = field(default_factory=list)
    headings: list[Heading] = field(default_factory=list)
    pages: list[PageSpan] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)
    length: int = 0

    def _append(self, text: str, separator: str = PARAGRAPH_BREAK) -> int:
        if self.parts:
            self.parts.append(separator)
            self.length += len(separator)
        start = self.length
        self.parts.append(text)
        self.length += len(text)
        return start

    def _mapped(self, text: str, kind: BlockKind, separator: str, after_gap: bool) -> int:
        start = self._append(text, separator)
        self.blocks.append(Block(start=start, end=self.length, kind=kind, after_gap=after_gap))
        return start

    def heading(
        self,
        text: str,
        level: int,
        *,
        separator: str = PARAGRAPH_BREAK,
        after_gap: bool = False,
    ) -> None:
        """Add a heading as its own block and remember where it starts."""
        text = normalize_inline(text)
        if text:
            offset = self._mapped(text, "heading", separator, after_gap)
            self.headings.append(Heading(offset=offset, level=min(max(level, 1), 6), text=text))

    def paragraph(
        self,
        text: str,
        *,
        kind: BlockKind = "paragraph",
        separator: str = PARAGRAPH_BREAK,
        after_gap: bool = False,
    ) -> None:
        """Add one block of running text (a paragraph, list item, term or table cell).
        ``after_gap``: page text left out of the snapshot stands before it (see ``Block``)."""
        text = normalize_inline(text)
        if text:
            self._mapped(text, kind, separator, after_gap)

    def code(self, text: str, *, separator: str = PARAGRAPH_BREAK, after_gap: bool = False) -> None:
        """Add a code block (preformatted text): its lines and indentation are kept."""
        text = normalize_code(text)
        if text.strip():
            self._mapped(text, "code", separator, after_gap)

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
    date_source: DateSource | None = None
    language: str | None = None
    canonical_link: str | None = None
    gate: Gate | None = None
    blocks: list[Block] = field(default_factory=list)


@dataclass(frozen=True)
class Snapshot:
    """Bounded snapshot text with its locators, block map and hash."""

    text: str
    headings: list[Heading]
    pages: list[PageSpan]
    truncated: bool
    content_hash: str
    content_bytes: int
    blocks: list[Block] = field(default_factory=list)


def bound_snapshot(
    text: str,
    headings: list[Heading],
    pages: list[PageSpan],
    max_bytes: int,
    blocks: list[Block] | None = None,
) -> Snapshot:
    """Cut ``text`` to at most ``max_bytes`` UTF-8 bytes on a character boundary.

    Headings that start past the cut are dropped and page spans are clipped, so every locator
    still points inside the text. With a block map, the text ends with the last block the cut
    leaves: a prose block cut in two keeps its first part, a code block cut in two is left
    out (code is quoted whole or not at all; see ``clip_blocks``). The hash is the engine's
    ``snapshot_content_hash`` of the bounded text (what is stored and what excerpts are
    checked against), so mirrors that differ only in whitespace share it.
    """
    blocks = list(blocks or [])
    encoded = text.encode("utf-8")
    truncated = len(encoded) > max_bytes
    if truncated:
        # Decoding with "ignore" drops a multi-byte character cut in half.
        text = encoded[:max_bytes].decode("utf-8", errors="ignore").rstrip()
        kept = clip_blocks(blocks, len(text))
        if kept:
            text = text[: kept[-1].end]
            blocks = kept
        elif blocks:
            # The budget ends inside a first block of code: keep what fits, marked as code.
            blocks = [blocks[0].model_copy(update={"end": len(text)})]
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
        blocks=blocks,
    )
