"""Plain-text tools for the extractive backend: a segmenter that cuts
a snapshot into sentences, list items, headings, tables and code while keeping exact character
offsets.

Offsets are the point: every excerpt the extractive backend returns is ``text[start:end]`` of
the snapshot it was given, so it verifies against the stored snapshot by construction. With the
snapshot's block map (:func:`segment_blocks`) no segment runs from one block into the next,
except a table, which is quoted as its rows and cells with the breaks between them; without one
(PDF pages, plain text) the structure is read from the lines (:func:`segment_text`).
:func:`excerpt_span` gives the span to quote for a segment: joined to the sentence before when
it points back, cut at a clause boundary when too long; a code block is never cut or joined.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from research.engine.contracts import EXCERPT_MAX_CHARS, Block
from research.engine.text import STOP_WORDS, content_terms, fold, term_of, under_term, word_set

# --------------------------------------------------------------------------------------------
# Segmentation
# --------------------------------------------------------------------------------------------

SegmentKind = Literal["sentence", "item", "table", "heading", "code"]


@dataclass(frozen=True)
class Segment:
    """A span ``[start, end)`` of the snapshot: a sentence, a list item, a table, a heading or
    a whole code block.

    ``paragraph`` numbers the paragraph the segment belongs to (adjacent sentences of one
    paragraph may be joined into one excerpt); ``heading`` is the nearest heading above it.
    """

    start: int
    end: int
    kind: SegmentKind
    paragraph: int
    heading: str = ""


_BULLET = re.compile(r"^(?:[-*•·▪‣◦–]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s+")
_TABLE_GAP = re.compile(r"\S(?: {2,}|\t)\S|\|")
_TERMINAL = re.compile(r"[.!?:;][\"'”’)\]]*$")
# Sentence ends: terminal punctuation, optional closing quotes/brackets, whitespace, then
# something that can start a sentence.
_SENTENCE_END = re.compile(r"[.!?]+[\"'”’)\]]*\s+(?=[\"'“‘(\[]?[A-Z0-9])")
_ABBREVIATIONS = word_set(
    """mr mrs ms dr prof sr jr st mt ft no nos vol vols fig figs eq eqs ref refs ed eds approx
    est inc ltd co corp dept univ gov e.g i.e etc vs al cf jan feb mar apr jun jul aug sep sept
    oct nov dec p pp u.s u.k u.n e.u op ch sec art para"""
)
# A table row longer than this is prose laid out in a table (a page's layout grid), not data.
_TABLE_ROW_CHARS = 200
_MAX_HEADING_CHARS = 100
_MAX_HEADING_WORDS = 14
# Text whose longest line is this short was wrapped by its author or by PDF extraction.
_WRAP_WIDTH = 120


@dataclass
class _Line:
    start: int
    end: int
    text: str


def _lines(text: str) -> list[_Line | None]:
    """Non-empty lines with offsets (surrounding whitespace trimmed); ``None`` for blank lines."""
    lines: list[_Line | None] = []
    position = 0
    for raw in text.split("\n"):
        stripped = raw.strip()
        if stripped:
            start = position + (len(raw) - len(raw.lstrip()))
            lines.append(_Line(start, start + len(stripped), stripped))
        else:
            lines.append(None)
        position += len(raw) + 1
    return lines


def _is_table_row(line: _Line) -> bool:
    return bool(_TABLE_GAP.search(line.text)) and len(line.text) < _TABLE_ROW_CHARS


def _is_heading_like(line: _Line) -> bool:
    text = line.text
    if len(text) > _MAX_HEADING_CHARS or len(text.split()) > _MAX_HEADING_WORDS:
        return False
    if _TERMINAL.search(text) or _BULLET.match(text) or _is_table_row(line):
        return False
    return text[0].isupper() or text[0].isdigit() or text.startswith("#")


def _shouts(text: str) -> bool:
    letters = [char for char in text if char.isalpha()]
    return len(letters) >= 8 and all(char.isupper() for char in letters)


# "3. Results of the survey", "2.1 Method": a numbered section heading, not a list.
_NUMBERED_HEADING = re.compile(r"^\d{1,2}(?:\.\d{1,2})*\.?\s+[A-Z]")


def _is_numbered_heading(lines: list["_Line | None"], index: int) -> bool:
    line = lines[index]
    assert line is not None
    if not _NUMBERED_HEADING.match(line.text) or _TERMINAL.search(line.text):
        return False
    if len(line.text) > _MAX_HEADING_CHARS or len(line.text.split()) > _MAX_HEADING_WORDS:
        return False
    # A numbered list has neighbours that are numbered too; a heading has prose around it.
    neighbours = [
        lines[position]
        for position in (index - 1, index + 1)
        if 0 <= position < len(lines) and lines[position] is not None
    ]
    return not any(_BULLET.match(other.text) for other in neighbours if other is not None)


def _continues(previous: _Line, following: _Line, *, hard_wrapped: bool) -> bool:
    """Whether ``following`` continues the paragraph of ``previous``."""
    if _TERMINAL.search(previous.text) or _BULLET.match(following.text):
        return False
    if _is_table_row(following) or _is_table_row(previous):
        return False
    if _shouts(previous.text):
        # "NATIONAL STATISTICS OFFICE - PRESS NOTE" is a title line, not the start of prose.
        return False
    first = following.text[0]
    if first.islower():
        return True
    # In hard-wrapped text (plain-text files, PDF pages) a long line without a full stop runs
    # on; elsewhere a line is a paragraph or a heading of its own.
    return hard_wrapped and len(previous.text) >= 50


def split_sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Sentence spans inside ``text[start:end]``, respecting common abbreviations and initials."""
    spans = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        word = re.search(r"([\w.]+)[.!?]+[\"'”’)\]]*\s+$", text[cursor : match.end()])
        if word:
            token = word.group(1).casefold().rstrip(".")
            if token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha()):
                continue
        stop = match.end()
        piece = text[cursor:stop].rstrip()
        if piece:
            spans.append((cursor, cursor + len(piece)))
        cursor = stop
    tail = text[cursor:end].strip()
    if tail:
        offset = text.index(tail, cursor)
        spans.append((offset, offset + len(tail)))
    return spans


def segment_text(text: str) -> list[Segment]:
    """Cut ``text`` into headings, sentences, list items and tables, with exact offsets.

    Hard-wrapped prose is re-joined into paragraphs before sentence splitting; consecutive table
    rows become one table segment that starts at its caption when the caption directly precedes
    it.
    """
    lines = _lines(text)
    lengths = [len(line.text) for line in lines if line is not None]
    hard_wrapped = len(lengths) >= 3 and max(lengths) <= _WRAP_WIDTH
    segments: list[Segment] = []
    heading = ""
    paragraph = 0
    index = 0
    while index < len(lines):
        line = lines[index]
        if line is None:
            index += 1
            continue
        paragraph += 1
        if _is_table_row(line):
            rows_end = index
            while (
                rows_end + 1 < len(lines)
                and lines[rows_end + 1] is not None
                and _is_table_row(
                    lines[rows_end + 1]  # type: ignore[arg-type]
                )
            ):
                rows_end += 1
            last = lines[rows_end]
            assert last is not None
            start = line.start
            caption = segments[-1] if segments and segments[-1].kind == "heading" else None
            if caption is not None and not text[caption.end : line.start].strip():
                start = caption.start
                segments.pop()
            segments.append(Segment(start, last.end, "table", paragraph, heading))
            index = rows_end + 1
            continue
        if _is_numbered_heading(lines, index):
            heading = line.text
            segments.append(Segment(line.start, line.end, "heading", paragraph, heading))
            index += 1
            continue
        if _BULLET.match(line.text):
            for span in split_sentences(text, line.start, line.end):
                segments.append(Segment(*span, "item", paragraph, heading))
            index += 1
            continue
        end_index = index
        while end_index + 1 < len(lines):
            following = lines[end_index + 1]
            current = lines[end_index]
            if (
                following is None
                or current is None
                or not _continues(current, following, hard_wrapped=hard_wrapped)
            ):
                break
            end_index += 1
        last = lines[end_index]
        assert last is not None
        if end_index == index and _is_heading_like(line):
            heading = line.text.lstrip("#").strip()
            segments.append(Segment(line.start, line.end, "heading", paragraph, heading))
        else:
            for span in split_sentences(text, line.start, last.end):
                segments.append(Segment(*span, "sentence", paragraph, heading))
        index = end_index + 1
    return segments


# Blocks of running prose: paragraphs and the text of a definition's description.
_PROSE_BLOCKS = frozenset({"paragraph", "description"})


def segment_blocks(text: str, blocks: Sequence[Block]) -> list[Segment]:
    """Cut ``text`` into segments along its block map: each heading and code block is one
    segment, paragraphs, list items and definition terms are split into sentences that stay in
    their block, and consecutive rows of short cells (a table the page lays out as one) become
    one table segment. Each block is a paragraph of its own, so sentences of two blocks are
    never joined. The text of a definition's description has the heading "section › term"
    (research/engine/text.py ``under_term``)."""
    segments: list[Segment] = []
    heading = ""
    paragraph = 0
    index = 0
    while index < len(blocks):
        block = blocks[index]
        paragraph += 1
        if block.kind == "heading":
            heading = text[block.start : block.end]
            segments.append(Segment(block.start, block.end, "heading", paragraph, heading))
        elif block.kind == "code":
            segments.append(Segment(block.start, block.end, "code", paragraph, heading))
        elif block.kind == "cell":
            last = _table_end(text, blocks, index)
            segments.extend(_table_segments(text, blocks[index : last + 1], paragraph, heading))
            index = last
        else:
            kind: SegmentKind = "sentence" if block.kind in _PROSE_BLOCKS else "item"
            term = term_of(text, blocks, index)
            # A definition's text stands under its term as well as its section.
            under = under_term(heading, term) if term else heading
            for span in split_sentences(text, block.start, block.end):
                segments.append(Segment(*span, kind, paragraph, under))
        index += 1
    return segments


def _table_end(text: str, blocks: Sequence[Block], first: int) -> int:
    """The last of the cells from ``first`` on that belong to one table: no paragraph break and
    no left-out text between them."""
    last = first
    while last + 1 < len(blocks):
        following = blocks[last + 1]
        if following.kind != "cell" or following.after_gap:
            break
        if "\n\n" in text[blocks[last].end : following.start]:
            break
        last += 1
    return last


def _table_segments(
    text: str, cells: Sequence[Block], paragraph: int, heading: str
) -> list[Segment]:
    """Rows of short cells as table segments (consecutive ones joined), other cells as prose.
    A row is short by the measure :func:`segment_text` uses for table rows."""
    rows: list[list[Block]] = [[cells[0]]]
    for previous, cell in zip(cells, cells[1:], strict=False):
        if "\n" in text[previous.end : cell.start]:
            rows.append([cell])
        else:
            rows[-1].append(cell)
    segments: list[Segment] = []
    table: list[list[Block]] = []

    def close_table() -> None:
        if table:
            segments.append(
                Segment(table[0][0].start, table[-1][-1].end, "table", paragraph, heading)
            )
            table.clear()

    for row in rows:
        span = text[row[0].start : row[-1].end]
        if len(row) >= 2 and len(span) < _TABLE_ROW_CHARS:
            table.append(row)
            continue
        close_table()
        for cell in row:
            for sentence in split_sentences(text, cell.start, cell.end):
                segments.append(Segment(*sentence, "item", paragraph, heading))
    close_table()
    return segments


_DEFINED_ABBREVIATION = re.compile(r"((?:[^\W\d_][\w'-]*\s+){1,8})\(([A-Z][A-Za-z0-9]{1,9})\)")


def find_abbreviations(text: str) -> dict[str, frozenset[str]]:
    """Abbreviations ``text`` defines, "seasonal performance factor (SPF)", as the folded
    abbreviation → the stemmed terms of its long form. A later "the mean SPF was 2.6" speaks
    of the seasonal performance factor even though it never says so."""
    found: dict[str, frozenset[str]] = {}
    for match in _DEFINED_ABBREVIATION.finditer(text):
        abbreviation = match.group(2)
        letters = fold("".join(char for char in abbreviation if char.isalpha()))
        words = [part for word in match.group(1).split() for part in word.split("-") if part]
        for size in range(len(letters), min(len(words), len(letters) + 2) + 1):
            candidate = words[-size:]
            every = "".join(fold(word[0]) for word in candidate)
            content = "".join(fold(word[0]) for word in candidate if fold(word) not in STOP_WORDS)
            if letters in (every, content):
                found[fold(abbreviation)] = frozenset(content_terms(" ".join(candidate)))
                break
    return found


# --------------------------------------------------------------------------------------------
# Excerpt spans
# --------------------------------------------------------------------------------------------

# Sentences that start by pointing back ("This…", "It…") read better with the sentence before.
ANAPHORIC_START = re.compile(
    r"^(?:this|that|these|those|it|its|they|their|such|he|she|however|but|also|both|"
    r"the latter|the former|the same)\b",
    re.IGNORECASE,
)


def points_back(segment: Segment, text: str) -> bool:
    """Whether a sentence opens by pointing back ("This…", "It…") to what came before."""
    return segment.kind == "sentence" and bool(
        ANAPHORIC_START.match(text[segment.start : segment.end])
    )


def joins_previous(segments: Sequence[Segment], index: int, text: str) -> bool:
    """Whether a sentence that points back can be quoted with the sentence before it."""
    segment = segments[index]
    if index == 0 or not points_back(segment, text):
        return False
    previous = segments[index - 1]
    return (
        previous.kind == "sentence"
        and previous.paragraph == segment.paragraph
        and segment.end - previous.start <= EXCERPT_MAX_CHARS
    )


def excerpt_span(segments: Sequence[Segment], index: int, text: str) -> tuple[int, int]:
    """The span to quote for a segment: the segment itself, joined to the sentence before when
    it opens by pointing back, and cut at a clause boundary when it is too long."""
    segment = segments[index]
    start, end = segment.start, segment.end
    if joins_previous(segments, index, text):
        start = segments[index - 1].start
    if end - start > EXCERPT_MAX_CHARS:
        window = text[start : start + EXCERPT_MAX_CHARS]
        cut = max(window.rfind("; "), window.rfind(", "), window.rfind("\n"))
        if cut < EXCERPT_MAX_CHARS // 2:
            cut = window.rfind(" ")
        end = start + (cut if cut > 0 else EXCERPT_MAX_CHARS)
        while end > start and text[end - 1] in " ,;\n\t":
            end -= 1
    return start, end
