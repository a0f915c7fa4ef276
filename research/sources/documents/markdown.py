"""Markdown to document blocks, with markdown-it-py's CommonMark parser.

Only the block structure matters for a snapshot: ATX and Setext headings become headings,
fenced and indented code becomes code (line breaks kept), lists, tables (GitHub's pipe
tables) and paragraphs become what the HTML extractor makes of their rendered page. Inline
markup is read the way a reader sees the rendered text: emphasis marks and link targets
disappear, link texts, code spans and image descriptions stay. Raw HTML is not rendered:
with markdown-it's ``html`` option off, tags are text and stay in the snapshot as written.
A YAML front-matter block (``---`` ... ``---`` of ``key: value`` lines at the very top, as
static-site generators use) is metadata: its title, author and date are read, its lines are
not part of the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from markdown_it import MarkdownIt
from markdown_it.token import Token

from research.sources.documents.structure import (
    Block,
    CodeBlock,
    HeadingBlock,
    ListBlock,
    ParagraphBlock,
    TableBlock,
)
from research.sources.snapshot import normalize_inline

_FENCE = re.compile(r"^(---|\.\.\.)[ \t]*$")
_FRONT_MATTER_LINE = re.compile(r"^(?:[A-Za-z_][\w-]*[ \t]*:.*|[ \t]+.*|-[ \t].*|#.*)$")
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


def _parser() -> MarkdownIt:
    # CommonMark plus GitHub's tables and strikethrough, the dialect most files are written in.
    return MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])


@dataclass
class MarkdownDocument:
    """The blocks of a Markdown file and the metadata of its front matter."""

    blocks: list[Block]
    title: str = ""
    author: str | None = None
    published_at: str | None = None


@dataclass
class _Lists:
    """The list being collected: finished items and the parts of the open one."""

    depth: int = 0
    items: list[str] = field(default_factory=list)
    parts: list[str] = field(default_factory=list)

    def end_item(self) -> None:
        text = " ".join(part for part in self.parts if part)
        if text.strip():
            self.items.append(text)
        self.parts = []

    def flush(self, blocks: list[Block]) -> None:
        """Emit the items collected so far (before a code block or heading inside a list)."""
        self.end_item()
        if self.items:
            blocks.append(ListBlock(tuple(self.items)))
        self.items = []


def parse_markdown(text: str) -> MarkdownDocument:
    """Read Markdown source (already decoded) into blocks and front-matter metadata."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    body, meta = _front_matter(text)
    tokens = _parser().parse(body)
    blocks: list[Block] = []
    lists = _Lists()
    index = 0
    while index < len(tokens):
        token = tokens[index]
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            if lists.depth:
                lists.end_item()
            lists.depth += 1
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.depth -= 1
            if lists.depth == 0:
                lists.flush(blocks)
        elif kind in ("list_item_open", "list_item_close"):
            lists.end_item()
        elif kind == "heading_open":
            lists.flush(blocks)
            blocks.append(HeadingBlock(inline_text(tokens[index + 1]), int(token.tag[1])))
            index += 2
        elif kind == "paragraph_open":
            content = inline_text(tokens[index + 1])
            if lists.depth:
                lists.parts.append(content)
            else:
                blocks.append(ParagraphBlock(content))
            index += 2
        elif kind in ("fence", "code_block"):
            lists.flush(blocks)
            blocks.append(CodeBlock(token.content))
        elif kind == "table_open":
            lists.flush(blocks)
            index = _table(tokens, index, blocks)
        index += 1
    lists.flush(blocks)
    return MarkdownDocument(
        blocks=blocks,
        title=meta.get("title", ""),
        author=meta.get("author") or None,
        published_at=meta["date"][:10] if _ISO_DATE.match(meta.get("date", "")) else None,
    )


def inline_text(token: Token) -> str:
    """The text of an inline token as the rendered page shows it."""
    parts: list[str] = []
    for child in token.children or []:
        if child.type in ("text", "code_inline", "html_inline"):
            parts.append(child.content)
        elif child.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif child.type == "image":
            parts.append(child.content)
    return "".join(parts)


def _table(tokens: Sequence[Token], index: int, blocks: list[Block]) -> int:
    """Collect the table starting at ``tokens[index]``; return the index of its end."""
    rows: list[tuple[str, ...]] = []
    row: list[str] = []
    while index < len(tokens) and tokens[index].type != "table_close":
        token = tokens[index]
        if token.type == "tr_open":
            row = []
        elif token.type == "tr_close":
            rows.append(tuple(row))
        elif token.type == "inline":
            row.append(inline_text(token))
        index += 1
    blocks.append(TableBlock(tuple(rows)))
    return index


def _front_matter(text: str) -> tuple[str, dict[str, str]]:
    """Split off a YAML front-matter block; return the rest and its simple ``key: value`` pairs.

    Only a block whose every line looks like YAML counts, so a document that merely opens
    with a thematic break (``---``) keeps its text.
    """
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return text, {}
    for end in range(1, len(lines)):
        if _FENCE.match(lines[end]):
            break
        if lines[end].strip() and not _FRONT_MATTER_LINE.match(lines[end]):
            return text, {}
    else:
        return text, {}
    meta: dict[str, str] = {}
    for line in lines[1:end]:
        key, sep, value = line.partition(":")
        if sep and not line[:1].isspace():
            meta[key.strip().lower()] = normalize_inline(value.strip().strip("'\""))
    return "\n".join(lines[end + 1 :]), meta
