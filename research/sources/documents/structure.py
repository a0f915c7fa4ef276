"""A document's structure, and the one place where it becomes snapshot text.

The DOCX and Markdown readers say *what* a document holds — headings, paragraphs, lists,
tables, code — as the blocks below; ``build_snapshot`` lays them out with the web pipeline's
``SnapshotBuilder``, so an uploaded document's snapshot follows exactly the rules of a web
page's (blocks, separators, normalisation, heading offsets) and changes with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from research.sources.snapshot import (
    CELL_BREAK,
    LINE_BREAK,
    PARAGRAPH_BREAK,
    ExtractedText,
    SnapshotBuilder,
)


@dataclass(frozen=True)
class HeadingBlock:
    """A heading of ``level`` 1 (a title) to 6."""

    text: str
    level: int


@dataclass(frozen=True)
class ParagraphBlock:
    """Running text: line breaks inside it are soft, as in HTML."""

    text: str


@dataclass(frozen=True)
class ListBlock:
    """Consecutive list items (nesting flattened, as the HTML extractor does)."""

    items: tuple[str, ...]


@dataclass(frozen=True)
class TableBlock:
    """A table as rows of cell texts."""

    rows: tuple[tuple[str, ...], ...]


@dataclass(frozen=True)
class CodeBlock:
    """Preformatted text whose line breaks are part of the content."""

    text: str


Block = HeadingBlock | ParagraphBlock | ListBlock | TableBlock | CodeBlock


def build_snapshot(
    blocks: Iterable[Block],
    *,
    title: str = "",
    author: str | None = None,
    published_at: str | None = None,
    language: str | None = None,
) -> ExtractedText:
    """Lay ``blocks`` out as snapshot text with heading offsets and a block map.

    The layout is the web pipeline's: each list item is an ``item`` block on its own line,
    each table cell a ``cell`` block (tab between the cells of a row, line break between
    rows), code keeps its line breaks as a ``code`` block. Without a ``title``, the first
    heading (else the first line) is the title.
    """
    builder = SnapshotBuilder()
    for block in blocks:
        if isinstance(block, HeadingBlock):
            builder.heading(block.text, block.level)
        elif isinstance(block, ParagraphBlock):
            builder.paragraph(block.text)
        elif isinstance(block, ListBlock):
            separator = PARAGRAPH_BREAK
            for item in block.items:
                if item.strip():
                    builder.paragraph(item, kind="item", separator=separator)
                    separator = LINE_BREAK
        elif isinstance(block, TableBlock):
            separator = PARAGRAPH_BREAK
            for row in block.rows:
                if not any(cell.strip() for cell in row):
                    continue
                for cell in row:
                    if cell.strip():
                        builder.paragraph(cell, kind="cell", separator=separator)
                        separator = CELL_BREAK
                separator = LINE_BREAK
        else:
            builder.code(block.text)
    text = builder.text
    if not title:
        first_heading = builder.headings[0].text if builder.headings else ""
        title = first_heading or next((line for line in text.splitlines() if line.strip()), "")
    return ExtractedText(
        text=text,
        headings=builder.headings,
        blocks=builder.blocks,
        title=title[:500],
        author=author,
        published_at=published_at,
        language=language,
    )
