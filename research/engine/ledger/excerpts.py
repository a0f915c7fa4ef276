"""Excerpt verification: text normalisation for matching, the snapshot index and locators."""

import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from research.engine.contracts import Block, Heading, PageSpan
from research.engine.text import term_of, under_term

# Typographic variants a model (or a copy-paste) often swaps for their plain forms.
_PLAIN_FORMS = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u2043": "-",
}
# Invisible characters that carry no text (zero-width spaces and joiners, soft hyphen, BOM).
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad")
# Runs of printable ASCII map to themselves; only the rest needs the
# per-character path. This keeps building an index of a 200 KB page in the milliseconds.
_PLAIN_RUN = re.compile(r"[!-~]+")

_FORM_CACHE: dict[str, str] = {}


def _char_form(char: str) -> str:
    """The matching form of one character: compatibility-decomposed (NFKD, so NFKC-equal
    characters match), typographic quotes and dashes made plain, whitespace as a space."""
    cached = _FORM_CACHE.get(char)
    if cached is not None:
        return cached
    if char in _INVISIBLE:
        form = ""
    elif char.isspace():
        form = " "
    else:
        decomposed = unicodedata.normalize("NFKD", _PLAIN_FORMS.get(char, char))
        form = "".join(
            " " if part.isspace() else _PLAIN_FORMS.get(part, part)
            for part in decomposed
            if part not in _INVISIBLE
        )
    _FORM_CACHE[char] = form
    return form


def normalize_for_matching(text: str) -> str:
    """The form excerpts and snapshots are compared in: compatibility-normalised, plain quotes
    and dashes, invisible characters dropped, whitespace runs collapsed, ends stripped."""
    if not text.isascii():
        # Every whitespace character becomes a plain space here, so the split below sees
        # exactly the runs the snapshot index collapses.
        text = "".join([_char_form(char) for char in text])
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Excerpt verification
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifiedExcerpt:
    """An excerpt found in the snapshot: ``text[start:end]`` of the original snapshot text.

    ``code`` is true when the excerpt is one whole code block; ``text`` then keeps its line
    breaks, as it does for an excerpt of consecutive blocks.
    """

    start: int
    end: int
    text: str
    heading: str | None = None
    page: int | None = None
    code: bool = False

    @property
    def verified(self) -> bool:
        return True


@dataclass(frozen=True)
class RejectedExcerpt:
    """An excerpt that could not become evidence, with the reason."""

    excerpt: str
    reason: str

    @property
    def verified(self) -> bool:
        return False


NOT_IN_SNAPSHOT = "The excerpt does not occur in the stored snapshot."
CROSSES_BLOCKS = (
    "The excerpt runs from one block of the page into the next (a paragraph, list item, table "
    "cell or line) as if they were one sentence; quote one block, or keep the line break "
    "between blocks."
)
PART_OF_CODE = (
    "The excerpt quotes part of a code sample or mixes it with prose; code is quoted whole."
)
ACROSS_GAP = (
    "The excerpt joins two blocks that are not next to each other on the page (text between "
    "them was left out of the snapshot)."
)

# White space that breaks a line (or a table row into cells) in an excerpt: where an excerpt
# has one, it may pass from one block of the snapshot to the next.
_BREAK_RUN = re.compile(r"\s*[\n\r\t\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
# Stands for such a break while the excerpt is normalised: a private-use character, which
# the matching form keeps as it is and no excerpt a model writes should contain.
_BREAK_MARK = "\ue000"


def clip_blocks(blocks: Sequence[Block], end: int) -> list[Block]:
    """The block map of a text cut at ``end``: blocks past the cut dropped, a prose block cut
    short, a code block cut in two dropped (code is quoted whole or not at all)."""
    kept: list[Block] = []
    for block in blocks:
        if block.end <= end:
            kept.append(block)
            continue
        if block.start < end and block.kind != "code":
            kept.append(block.model_copy(update={"end": end}))
        break
    return kept


class SnapshotIndex:
    """A snapshot prepared for fast excerpt lookups.

    Builds the normalised text once, with a map from every normalised character back to the
    original character it came from; each lookup is then one substring search. Build one index
    per snapshot and verify all of its excerpts against it.

    With a block map (``blocks``), an excerpt must also respect the page's structure: it stays
    inside one block, or shows a line break wherever it passes into the next block, and a code
    block is quoted only whole, on its own. Without one (PDFs, plain text) only the text counts.
    """

    def __init__(
        self,
        text: str,
        *,
        headings: Sequence[Heading] = (),
        pages: Sequence[PageSpan] = (),
        blocks: Sequence[Block] = (),
    ) -> None:
        self.text = text
        self._build(text)
        ordered = sorted(headings, key=lambda heading: heading.offset)
        self._heading_offsets = [heading.offset for heading in ordered]
        self._headings = [heading.text for heading in ordered]
        self._pages = sorted(pages, key=lambda span: span.start)
        self._page_starts = [span.start for span in self._pages]
        self._blocks = [block for block in sorted(blocks, key=lambda b: b.start)]
        self._block_starts = [block.start for block in self._blocks]

    def _build(self, text: str) -> None:
        pieces: list[str] = []
        origin = array("q")
        space = True  # a leading space is never emitted, matching the stripped excerpt

        def slow(begin: int, end: int) -> None:
            nonlocal space
            for index in range(begin, end):
                for part in _char_form(text[index]):
                    if part == " ":
                        if space:
                            continue
                        space = True
                    else:
                        space = False
                    pieces.append(part)
                    origin.append(index)

        position = 0
        for run in _PLAIN_RUN.finditer(text):
            if run.start() > position:
                slow(position, run.start())
            pieces.append(run.group())
            origin.extend(range(run.start(), run.end()))
            space = False
            position = run.end()
        slow(position, len(text))
        self.normalized = "".join(pieces)
        self._origin = origin

    def locate(self, excerpt: str, *, near: int | None = None) -> tuple[int, int] | None:
        """Offsets ``(start, end)`` of ``excerpt`` in the original text, or ``None``.

        With several occurrences, the first one is returned, or the one starting closest to
        ``near`` when given (used when re-checking a stored locator). Block rules are not
        applied here; :meth:`verify` applies them.
        """
        return self._locate_normalized(normalize_for_matching(excerpt), near)

    def _occurrences(self, needle: str) -> Iterable[int]:
        found = self.normalized.find(needle)
        while found >= 0:
            yield found
            found = self.normalized.find(needle, found + 1)

    def _span(self, found: int, needle: str) -> tuple[int, int]:
        return self._origin[found], self._origin[found + len(needle) - 1] + 1

    def _locate_normalized(self, needle: str, near: int | None) -> tuple[int, int] | None:
        if not needle:
            return None
        best: int | None = None
        for found in self._occurrences(needle):
            if near is None:
                best = found
                break
            if best is None or abs(self._origin[found] - near) < abs(self._origin[best] - near):
                best = found
        return None if best is None else self._span(best, needle)

    def heading_at(self, offset: int) -> str | None:
        """The nearest heading at or before ``offset``; in the text of a definition's
        description, that heading and the definition's term ("OPTIONS › --force")."""
        position = bisect_right(self._heading_offsets, offset) - 1
        section = self._headings[position] if position >= 0 else None
        block = self.block_at(offset)
        term = term_of(self.text, self._blocks, block) if block is not None else None
        return under_term(section, term) if term else section

    def page_at(self, offset: int) -> int | None:
        """The PDF page whose text contains ``offset``, if page spans are known."""
        position = bisect_right(self._page_starts, offset) - 1
        if position < 0:
            return None
        span = self._pages[position]
        return span.page if span.start <= offset < max(span.end, span.start + 1) else None

    def block_at(self, offset: int) -> int | None:
        """The position in the block map of the block containing ``offset``, or ``None``."""
        position = bisect_right(self._block_starts, offset) - 1
        if position >= 0 and offset < self._blocks[position].end:
            return position
        return None

    def verify(self, excerpt: str, *, near: int | None = None) -> VerifiedExcerpt | RejectedExcerpt:
        """Find ``excerpt`` and describe where it is, or say why it cannot be evidence.

        Of several occurrences the first that respects the block rules is taken (the one
        nearest ``near`` when given); the reason given for a refusal is that of the first
        occurrence.
        """
        needle = normalize_for_matching(excerpt)
        if not needle:
            return RejectedExcerpt(excerpt, "The excerpt is empty.")
        breaks = self._breaks(excerpt, needle) if self._blocks else frozenset()
        reason: str | None = None
        chosen: tuple[int, int, bool] | None = None
        for found in self._occurrences(needle):
            start, end = self._span(found, needle)
            problem, code = self._block_problem(found, needle, start, end, breaks)
            if problem is not None:
                reason = reason or problem
                continue
            if chosen is None or (near is not None and abs(start - near) < abs(chosen[0] - near)):
                chosen = (start, end, code)
            if near is None:
                break
        if chosen is None:
            return RejectedExcerpt(excerpt, reason or NOT_IN_SNAPSHOT)
        start, end, code = chosen
        # Blocks are stored normalised, so with a block map the exact slice reads as the page
        # does, with the separators (line breaks, tabs) an excerpt of consecutive blocks shows.
        text = self.text[start:end] if self._blocks else " ".join(self.text[start:end].split())
        return VerifiedExcerpt(
            start=start,
            end=end,
            text=text,
            heading=self.heading_at(start),
            page=self.page_at(start),
            code=code,
        )

    @staticmethod
    def _breaks(excerpt: str, needle: str) -> frozenset[int]:
        """Positions of ``needle`` (the excerpt's matching form) where the excerpt itself
        breaks the line."""
        marked = normalize_for_matching(_BREAK_RUN.sub(_BREAK_MARK, excerpt.strip()))
        if len(marked) != len(needle) or marked.replace(_BREAK_MARK, " ") != needle:
            return frozenset()  # the excerpt carries the marker itself; no break is known
        return frozenset(i for i, char in enumerate(marked) if char == _BREAK_MARK)

    def _block_problem(
        self, found: int, needle: str, start: int, end: int, breaks: frozenset[int]
    ) -> tuple[str | None, bool]:
        """Why the occurrence at ``found`` (original span ``[start, end)``) breaks the block
        rules, or ``None``; and whether it is a whole code block."""
        if not self._blocks:
            return None, False
        first, last = self.block_at(start), self.block_at(end - 1)
        if first is None or last is None:
            # Text outside every block (only separators are, and excerpts are stripped).
            return NOT_IN_SNAPSHOT, False
        spanned = self._blocks[first : last + 1]
        if any(block.kind == "code" for block in spanned):
            whole = len(spanned) == 1 and (start, end) == (spanned[0].start, spanned[0].end)
            return (None, True) if whole else (PART_OF_CODE, False)
        for block, following in zip(spanned, spanned[1:], strict=False):
            if following.after_gap:
                return ACROSS_GAP, False
            # The separator after ``block`` is one space of the normalised text.
            position = bisect_left(self._origin, block.end) - found
            if position not in breaks:
                return CROSSES_BLOCKS, False
        return None, False


def verify_excerpt(
    excerpt: str,
    snapshot_text: str,
    *,
    headings: Sequence[Heading] = (),
    pages: Sequence[PageSpan] = (),
    blocks: Sequence[Block] = (),
) -> VerifiedExcerpt | RejectedExcerpt:
    """Verify one excerpt against a snapshot (builds a throw-away :class:`SnapshotIndex`;
    use the index directly to verify many excerpts of the same snapshot)."""
    return SnapshotIndex(snapshot_text, headings=headings, pages=pages, blocks=blocks).verify(
        excerpt
    )
