"""The visible text of an HTML page as blocks, laid out the way a browser shows it.

``page_blocks`` walks the parsed page once and cuts its visible text into blocks by the rules
browsers follow for ``innerText``: every block-level element, line break (``<br>``), list
item, definition term and description and table cell ends one block and starts the next;
inline elements (links, emphasis, ``<code>``, spans) join with exactly the white space the
page has, collapsed to single spaces; preformatted text (``<pre>``) keeps its lines and becomes
one code block; hidden elements (scripts, styles, templates, ``hidden``, ``display: none``)
give nothing. The content of a ``<details>`` element is text of the page: a reader opens it with
one click, so its summary and content are blocks in their place like any others. Each block
remembers how far it stands from the one before (a table cell, a line, a paragraph), which
becomes the separator in the snapshot.

Which blocks are the page's main content is trafilatura's decision: ``main_blocks`` keeps the
blocks whose text trafilatura's extraction contains, in order, so navigation, footers and
boilerplate drop out while the text itself is ours, taken from the page as it is. Text folded
into ``<details>`` that trafilatura deleted with its container (its boilerplate rules take a
class such as "metadata" for page furniture) comes back when it stands between two kept
blocks with nothing else left out around it.
``remove_permalink_marks`` first deletes the "link to this heading" marks documentation
generators add ("¶", "#"), which are controls, not words of the page.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, replace

from lxml import etree
from trafilatura.settings import MANUALLY_CLEANED

from research.engine.contracts import BlockKind
from research.sources.snapshot import (
    CELL_BREAK,
    LINE_BREAK,
    PARAGRAPH_BREAK,
    normalize_code,
    normalize_inline,
)

# Separation strengths, weakest first, and the separator each writes.
_CELL, _LINE, _PARAGRAPH = 0, 1, 2
SEPARATORS = (CELL_BREAK, LINE_BREAK, PARAGRAPH_BREAK)

# Elements the HTML standard's rendering section lays out as blocks (display: block, list-item,
# table parts) and so on lines of their own.
_BLOCK_ELEMENTS = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "main",
        "menu",
        "nav",
        "ol",
        "optgroup",
        "option",
        "p",
        "section",
        "search",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
    }
)
# Block elements whose neighbours are one line away, not a paragraph: list items, definition
# terms and descriptions, table rows and row groups.
_LINE_ELEMENTS = frozenset({"li", "dt", "dd", "tr", "thead", "tbody", "tfoot", "option"})
_CELL_ELEMENTS = frozenset({"td", "th"})
_LIST_ELEMENTS = frozenset({"ul", "ol", "dl", "menu", "dir"})
# Elements whose content a browser does not show as text of the page: scripts, styles,
# metadata, embedded documents and media fallbacks, form controls with their own rendering.
_HIDDEN_ELEMENTS = frozenset(
    {
        "script",
        "style",
        "noscript",
        "template",
        "head",
        "title",
        "meta",
        "link",
        "iframe",
        "frame",
        "frameset",
        "object",
        "embed",
        "audio",
        "video",
        "canvas",
        "textarea",
        "select",
        "datalist",
    }
)
# Elements whose white space is preserved (white-space: pre): code and other preformatted text.
_PREFORMATTED = frozenset({"pre", "listing", "xmp", "plaintext"})
_HEADING_LEVELS = {f"h{level}": level for level in range(1, 7)}
# A definition list's description (``dd``) is marked so that its text can stand under its term
# (an option, an API entry, a configuration key, a glossary word); a list or table inside the
# description keeps its own kind.
_KINDS: dict[str, BlockKind] = {
    "li": "item",
    "dt": "term",
    "dd": "description",
    "td": "cell",
    "th": "cell",
}
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.IGNORECASE)
# A permalink mark has no word in it: one to three symbols such as "¶", "#", "§" or "🔗".
_WORDLESS = re.compile(r"^\W{1,3}$")
# Elements trafilatura deletes with their text before it looks for the main content (``time``,
# ``label``, ``button``, ``math``, ``nav``, ``footer``...): their text is never in its
# extraction, so a block is compared with the extraction without it.
_UNSEEN_BY_EXTRACTOR = frozenset(MANUALLY_CLEANED)
# ARIA roles by which a page itself says a part is not its content (site header and footer,
# navigation, search, menus); their text is kept out of the main content the same way.
_NOT_CONTENT_ROLES = frozenset({"banner", "contentinfo", "navigation", "search", "menu", "menubar"})


@dataclass(frozen=True, slots=True)
class PageBlock:
    """One block of a page's visible text.

    ``separation`` is how far it stands from the block before (0 a table cell, 1 a line,
    2 a paragraph); ``level`` is the heading level (0 for other blocks); ``key`` is the text
    in the form it is compared with the main-content extraction (see :func:`match_key`);
    ``after_gap`` says blocks of the page were left out just before it; ``folded`` says it lies
    inside a ``<details>`` element (shown after the reader opens it).
    """

    kind: BlockKind
    text: str
    separation: int = _PARAGRAPH
    level: int = 0
    key: str = ""
    after_gap: bool = False
    folded: bool = False

    @property
    def separator(self) -> str:
        return SEPARATORS[self.separation]


def remove_permalink_marks(root: etree._Element) -> int:
    """Delete the permalink marks of documentation generators; return how many.

    A permalink mark is a link to the element it stands in (or to itself) whose text has no
    letter or digit: Sphinx's "¶" after every heading and definition, Node.js's "#". It offers
    "link to here" and is no word of the page, so it must not end up in titles, headings or
    quotations. A footnote mark ("*", "†") links elsewhere and stays.
    """
    marks = []
    for link in root.iter("a"):
        href = (link.get("href") or "").strip()
        if len(href) < 2 or not href.startswith("#"):
            continue
        text = "".join(link.itertext()).strip()
        if not _WORDLESS.match(text) or not _names_itself_or_ancestor(link, href[1:]):
            continue
        marks.append(link)
    for link in marks:
        _drop_keeping_tail(link)
    return len(marks)


def _names_itself_or_ancestor(link: etree._Element, target: str) -> bool:
    node: etree._Element | None = link
    while node is not None:
        if node.get("id") == target or node.get("name") == target:
            return True
        node = node.getparent()
    return False


def _drop_keeping_tail(element: etree._Element) -> None:
    parent = element.getparent()
    if parent is None:
        return
    tail = element.tail or ""
    previous = element.getprevious()
    if previous is not None:
        previous.tail = (previous.tail or "") + tail
    else:
        parent.text = (parent.text or "") + tail
    parent.remove(element)


def _unseen(element: etree._Element, tag: str) -> bool:
    """Whether the element's text can never be main content (see ``main_blocks``)."""
    return tag in _UNSEEN_BY_EXTRACTOR or (element.get("role") or "").lower() in _NOT_CONTENT_ROLES


def _hidden(element: etree._Element, tag: str) -> bool:
    if tag in _HIDDEN_ELEMENTS or element.get("hidden") is not None:
        return True
    style = element.get("style")
    return bool(style) and bool(_HIDDEN_STYLE.search(style))


class _Layout:
    """Collects inline text into blocks while the page is walked."""

    def __init__(self) -> None:
        self.blocks: list[PageBlock] = []
        self.pieces: list[str] = []
        # The same text without what the extractor never sees.
        self.seen: list[str] = []
        self.unseen_depth = 0
        # How many ``<details>`` elements are open at this point of the walk.
        self.folded_depth = 0
        self.kinds: list[tuple[BlockKind, int]] = []
        self.kind: tuple[BlockKind, int] = ("paragraph", 0)
        # The outermost boundary crossed since the last block: (depth, strength).
        self.pending: tuple[int, int] | None = None

    def boundary(self, depth: int, strength: int) -> None:
        self.flush()
        if self.pending is None or (depth, -strength) < (self.pending[0], -self.pending[1]):
            self.pending = (depth, strength)

    def text(self, value: str | None) -> None:
        if not value:
            return
        if not self.pieces:
            if not value.strip():
                return
            self.kind = self.kinds[-1] if self.kinds else ("paragraph", 0)
        self.pieces.append(value)
        if not self.unseen_depth:
            self.seen.append(value)

    def flush(self) -> None:
        if not self.pieces:
            return
        text = normalize_inline("".join(self.pieces))
        key = match_key("".join(self.seen))
        self.pieces, self.seen = [], []
        if text:
            kind, level = self.kind
            block = PageBlock(kind, text, self._separation(), level, key)
            self._emit(replace(block, folded=self.folded_depth > 0))

    def code(self, text: str, seen: bool) -> None:
        text = normalize_code(text)
        if text.strip():
            key = match_key(text) if seen else ""
            block = PageBlock("code", text, self._separation(), 0, key)
            self._emit(replace(block, folded=self.folded_depth > 0))

    def _separation(self) -> int:
        return self.pending[1] if self.pending is not None else _PARAGRAPH

    def _emit(self, block: PageBlock) -> None:
        self.blocks.append(block)
        self.pending = None


def _strength(tag: str, items_open: int) -> int:
    if tag in _CELL_ELEMENTS:
        return _CELL
    if tag in _LINE_ELEMENTS or (tag in _LIST_ELEMENTS and items_open):
        return _LINE
    return _PARAGRAPH


def page_blocks(root: etree._Element) -> list[PageBlock]:
    """The visible text of the page under ``root`` as blocks, in reading order."""
    layout = _Layout()
    items_open = 0
    # An explicit stack instead of recursion: a page may nest elements thousands deep.
    # Entries are (element, depth, entering); leaving an element also handles its tail.
    stack: list[tuple[etree._Element, int, bool]] = [(root, 0, True)]
    while stack:
        element, depth, entering = stack.pop()
        tag = element.tag if isinstance(element.tag, str) else ""
        if not entering:
            if _unseen(element, tag):
                layout.unseen_depth -= 1
            if tag in _BLOCK_ELEMENTS:
                if tag in _KINDS or tag in _HEADING_LEVELS:
                    layout.kinds.pop()
                if tag in ("li", "dt", "dd"):
                    items_open -= 1
                layout.boundary(depth, _strength(tag, items_open))
            if tag == "details":
                layout.folded_depth -= 1
            layout.text(element.tail)
            continue
        if not tag or _hidden(element, tag):
            # Comments, processing instructions and hidden elements show only their tail.
            layout.text(element.tail)
            continue
        if tag in _PREFORMATTED:
            layout.boundary(depth, _PARAGRAPH)
            layout.code(_preformatted_text(element), seen=not layout.unseen_depth)
            layout.boundary(depth, _PARAGRAPH)
            layout.text(element.tail)
            continue
        if tag == "br":
            layout.boundary(depth, _LINE)
            layout.text(element.tail)
            continue
        if tag in _BLOCK_ELEMENTS:
            if tag in ("li", "dt", "dd"):
                items_open += 1
            layout.boundary(depth, _strength(tag, items_open))
            if tag == "details":
                layout.folded_depth += 1
            if tag in _HEADING_LEVELS:
                layout.kinds.append(("heading", _HEADING_LEVELS[tag]))
            elif tag in _KINDS:
                layout.kinds.append((_KINDS[tag], 0))
        if _unseen(element, tag):
            layout.unseen_depth += 1
        layout.text(element.text)
        stack.append((element, depth, False))
        stack.extend((child, depth + 1, True) for child in reversed(element))
    layout.flush()
    return layout.blocks


def _preformatted_text(pre: etree._Element) -> str:
    """The text of a ``<pre>`` as shown: white space kept, ``<br>`` as a line break, hidden
    descendants left out, and the line break right after the start tag dropped (HTML's
    parsing rule for ``pre``)."""
    parts: list[str] = []
    stack: list[tuple[etree._Element, bool]] = [(pre, True)]
    while stack:
        element, entering = stack.pop()
        tag = element.tag if isinstance(element.tag, str) else ""
        if not entering:
            if element is not pre and element.tail:
                parts.append(element.tail)
            continue
        if element is not pre and (not tag or _hidden(element, tag)):
            if element.tail:
                parts.append(element.tail)
            continue
        if tag == "br":
            parts.append("\n")
        elif element.text:
            parts.append(element.text)
        stack.append((element, False))
        stack.extend((child, True) for child in reversed(element))
    text = "".join(parts)
    return text[1:] if text.startswith("\n") else text


# How much text of trafilatura's extraction may lie between two blocks we keep without
# costing the second block its place: a caption or a label we do not show as a block. It is
# small so that a short navigation entry ("Installation") is not taken for the heading a few
# paragraphs further on.
_SLACK_CHARS = 40
# A block at least this long (without white space) is distinctive enough to be placed by where
# its text occurs anywhere in the extraction (an anchor); shorter ones are only looked for
# close to the block kept before them, between the anchors around them.
_ANCHOR_CHARS = 60
# How many places of one anchor's text are weighed. Text this long recurs only on generated
# pages (a repeated notice); its later occurrences say nothing the first ones do not, and the
# bound keeps the alignment linear in the extraction's length.
_MAX_PLACES = 64


def match_key(text: str) -> str:
    """The form in which a block's text is compared with trafilatura's extraction: NFC,
    printable characters only (trafilatura drops the others), no white space at all (it
    re-spaces text freely)."""
    if not text.isprintable():
        text = "".join(char for char in text if char.isprintable() or char.isspace())
    return "".join(unicodedata.normalize("NFC", text).split())


def main_blocks(blocks: Iterable[PageBlock], extracted: str) -> list[PageBlock]:
    """The blocks that make up the main content, as trafilatura's ``extracted`` text (all of
    it, in reading order) says.

    The long blocks are aligned with the extraction first: of all the places their texts
    occur, the choice that keeps page order and covers the most text wins (a weighted
    longest increasing subsequence), so a table of contents whose entries repeat the
    headings further down is not taken for the article. Each shorter block is then kept when
    its text comes next in the extraction, close to the block kept before it and before the
    next anchor. A kept block after blocks that were left out is marked ``after_gap`` and
    stands a paragraph apart, so nothing reads as if the two were neighbours on the page.

    A block with the same text as the block kept just before it takes that block's place:
    a page's title in a breadcrumb trail matches the extraction first, and the heading of the
    article that follows says the same where it belongs.

    Blocks folded into ``<details>`` that the extraction lacks are kept when every block left
    out between two kept blocks is folded: the details element then stands inside the main
    content (an API entry's version history under its heading), and trafilatura deleted it
    only because a class name of its container looked like page furniture to it. Folded text
    next to anything else left out (a sidebar, a site menu) stays out with it.
    """
    blocks = list(blocks)
    reference = match_key(extracted)
    anchors = _anchor_places(blocks, reference)
    # Where each stretch between anchors ends in the extraction: the next anchor's start.
    limits: list[int] = [len(reference)] * (len(blocks) + 1)
    for index in range(len(blocks) - 1, -1, -1):
        place = anchors.get(index)
        limits[index] = place if place is not None else limits[index + 1]
    kept: list[PageBlock] = []
    cursor = 0
    separation = -1
    dropped = False
    # Folded blocks left out since the last kept block, and whether anything else was.
    folded: list[PageBlock] = []
    spoiled = False
    for index, block in enumerate(blocks):
        key = block.key
        separation = max(separation, block.separation)
        found = anchors.get(index, -1)
        if found < 0 and key and len(key) < _ANCHOR_CHARS:
            window = min(cursor + len(key) + _SLACK_CHARS, limits[index + 1])
            found = reference.find(key, cursor, window)
        if found < 0:
            if key and kept and kept[-1].key == key:
                kept[-1] = replace(
                    block, separation=kept[-1].separation, after_gap=kept[-1].after_gap
                )
                separation, dropped = -1, False
            elif block.folded and not spoiled:
                if block.key:  # text the extractor never sees (a button) is main content nowhere
                    folded.append(block)
                dropped = True
            else:
                folded, spoiled, dropped = [], True, True
            continue
        if folded and kept:
            kept.extend(folded)
            separation, dropped = -1, False
        folded, spoiled = [], False
        if dropped and kept:
            kept.append(replace(block, separation=_PARAGRAPH, after_gap=True))
        else:
            kept.append(replace(block, separation=max(separation, block.separation)))
        separation, dropped = -1, False
        cursor = found + len(key)
    return kept


def _anchor_places(blocks: list[PageBlock], reference: str) -> dict[int, int]:
    """Block index → start in ``reference`` for the long blocks of the best alignment: places
    that increase with the block order, never overlap, and cover the most characters. Ties
    go to the later block, which is where a repeated text belongs (see ``main_blocks``)."""
    size = len(reference) + 1
    # A Fenwick tree over end positions: best chain (covered, node) ending at or before a point.
    tree: list[tuple[int, int]] = [(0, -1)] * (size + 1)

    def best_before(position: int) -> tuple[int, int]:
        best = (0, -1)
        position += 1
        while position > 0:
            best = max(best, tree[position])
            position -= position & -position
        return best

    def record(position: int, value: tuple[int, int]) -> None:
        position += 1
        while position <= size:
            if value >= tree[position]:
                tree[position] = value
            position += position & -position

    nodes: list[tuple[int, int, int]] = []  # (block index, start, previous node)
    for index, block in enumerate(blocks):
        key = block.key
        if len(key) < _ANCHOR_CHARS:
            continue
        found: list[tuple[int, tuple[int, int]]] = []
        start = reference.find(key)
        while start >= 0 and len(found) < _MAX_PLACES:
            covered, previous = best_before(start)
            found.append((start, (covered + len(key), previous)))
            start = reference.find(key, start + 1)
        # All places of one block are weighed against the chains before it, then recorded,
        # so a block never follows itself.
        for start, (covered, previous) in found:
            nodes.append((index, start, previous))
            record(start + len(key), (covered, len(nodes) - 1))
    places: dict[int, int] = {}
    _covered, node = best_before(size - 1)
    while node >= 0:
        index, start, node = nodes[node]
        places[index] = start
    return places
