"""One snapshot cut into the passages the extractor scores (:mod:`research.llm.selection`).

The page's sentences, list items, tables and code blocks (:mod:`research.llm.text`), the
passage windows joining consecutive sentences of one block (:mod:`research.llm.passage_units`),
the terms and term positions of each, the heading terms, the title's terms, the idf weights
and a BM25 index over the passages with their headings. Paragraphs planted to steer a program
(:mod:`research.engine.planted`) are never passages.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

import bm25s

from research.engine.contracts import EXCERPT_MAX_CHARS, Block
from research.engine.planted import is_planted
from research.engine.question_terms import TermWeights
from research.llm.passage_units import window_members
from research.llm.text import (
    Segment,
    content_terms,
    excerpt_span,
    find_abbreviations,
    joins_previous,
    points_back,
    segment_blocks,
    segment_text,
)

# --------------------------------------------------------------------------------------------
# Passage-unit constants (docs/llm.md, "Passage ranking", "Passage units")
# --------------------------------------------------------------------------------------------
# Passage units beyond single sentences (research/llm/passage_units.py): windows of up to
# three consecutive sentences of one block (an answer stated over two sentences, or a
# sentence resting on the one before: "This option overrides this restriction if …"), at
# most 400 characters (four average sentences of reference prose, well inside an excerpt), and
# whole blocks of several sentences up to the same length (a list item describing an option
# and ending with its "Default: 1024 * 1024."). A window's terms are the union of its
# sentences'; each sentence it adds costs 0.05 of score (a whole block 0.05 once: its author
# wrote it as one description, as passages from document structure take it, Kaszkiel &
# Zobel 1997), less than a question term of average
# weight (0.55 × ~0.2), the answer's shape (0.15) or a resolved pointing-back sentence
# (research.llm.selection.DANGLING_PENALTY) bring, so a window wins only when the added sentence brings one of them,
# and a single sentence that already says everything stays ahead.
WINDOW_SENTENCES = 3
WINDOW_MAX_CHARS = 400
SHORT_BLOCK_CHARS = 400
WINDOW_COST = 0.05

# A demonstrative with its noun ("This command uses a binary search…", "This version of the
# text assumes…") names the kind of thing it points at and, opening a paragraph, points at
# the subject of the page or section, which the locator's heading gives: it reads alone. A
# bare demonstrative or a pronoun ("This means…", "It defaults to…", "They are…") does not.
# The demonstrative is bare when the next word is an auxiliary or modal verb (a closed class
# of the grammar), a punctuation mark, or, after a singular "this"/"that", a third-person
# verb in -s ("This allows…"; "-ss", "-us" and "-is" end nouns: "This process", "this
# status", "this analysis").
_DEMONSTRATIVE = re.compile(r"^(this|that|these|those)\s+([A-Za-z][\w-]*)\b", re.IGNORECASE)
_AUXILIARY = re.compile(
    r"^(?:is|are|was|were|be|been|being|has|have|had|do|does|did|can|could|will|would|shall|"
    r"should|may|might|must)$",
    re.IGNORECASE,
)


def _usable(segment: Segment, text: str) -> bool:
    if segment.kind == "heading":
        return False
    if segment.kind == "code":
        # Quoted only whole: a block longer than an excerpt may be cannot be quoted at all.
        return segment.end - segment.start <= EXCERPT_MAX_CHARS
    words = text[segment.start : segment.end].split()
    has_number = any(char.isdigit() for char in text[segment.start : segment.end])
    return len(words) >= 5 or (has_number and len(words) >= 3)


@dataclass
class PassagePage:
    """One snapshot cut into passages, with what scoring them needs."""

    text: str
    segments: list[Segment]
    usable: list[int]
    own_terms: dict[int, frozenset[str]]
    positions: dict[int, dict[str, list[int]]]
    heading_terms: dict[int, frozenset[str]]
    topic_terms: frozenset[str]
    weights: TermWeights
    retriever: bm25s.BM25
    # Units of several segments: their index in ``segments`` (appended after the page's own
    # segments) → the indices of the segments they join.
    members: dict[int, tuple[int, ...]]
    # The units among them that are a whole block.
    whole: set[int]

    @classmethod
    def build(cls, text: str, title: str, blocks: Sequence[Block] = ()) -> "PassagePage | None":
        segments = segment_blocks(text, blocks) if blocks else segment_text(text)
        hostile = {
            segment.paragraph
            for segment in segments
            # Text shaped as instructions to a program never steers us (the decider sees no
            # page text), but quoting it would repeat the attacker's claim: its whole
            # paragraph stays out of the evidence.
            if is_planted(text[segment.start : segment.end])
        }
        usable = [
            i
            for i, segment in enumerate(segments)
            if segment.paragraph not in hostile and _usable(segment, text)
        ]
        if not usable:
            return None
        members: dict[int, tuple[int, ...]] = {}
        whole: set[int] = set()
        for unit, is_block in window_members(
            segments,
            max_sentences=WINDOW_SENTENCES,
            max_chars=WINDOW_MAX_CHARS,
            block_chars=SHORT_BLOCK_CHARS,
            excluded_paragraphs=hostile,
        ).items():
            first, last = segments[unit[0]], segments[unit[-1]]
            whole.update([len(segments)] if is_block else [])
            members[len(segments)] = unit
            segments.append(Segment(first.start, last.end, first.kind, first.paragraph, first.heading))
        # "the mean SPF was 2.6" speaks of the seasonal performance factor the page defined.
        abbreviations = find_abbreviations(text)

        def positions_of(passage: str) -> dict[str, list[int]]:
            found: dict[str, list[int]] = {}
            for position, term in enumerate(content_terms(passage)):
                for each in {term} | abbreviations.get(term, frozenset()):
                    found.setdefault(each, []).append(position)
            return found

        positions = {}
        for i in usable:
            positions[i] = positions_of(text[segments[i].start : segments[i].end])
            if segments[i].kind == "code" and i > 0 and segments[i - 1].kind != "heading":
                # Code names few words of English: the sentence introducing it ("To install
                # on Linux, run:") says what it does, and its terms stand for the block's.
                for term in positions_of(text[segments[i - 1].start : segments[i - 1].end]):
                    positions[i].setdefault(term, [])
        for i in members:
            positions[i] = positions_of(text[segments[i].start : segments[i].end])
        own_terms = {i: frozenset(positions[i]) for i in [*usable, *members]}
        heading_terms = {i: frozenset(positions_of(segments[i].heading)) for i in own_terms}
        first_heading = next((s for s in segments if s.kind == "heading"), None)
        topic_text = (
            title + " " + (text[first_heading.start : first_heading.end] if first_heading else "")
        )
        retriever = bm25s.BM25()
        retriever.index(
            [
                [t for t, at in positions[i].items() for _ in at or [0]]
                + list(heading_terms[i])
                or ["\x00"]
                for i in usable
            ],
            show_progress=False,
        )
        return cls(
            text=text,
            segments=segments,
            usable=usable,
            own_terms=own_terms,
            positions=positions,
            heading_terms=heading_terms,
            topic_terms=frozenset(content_terms(topic_text)),
            weights=TermWeights(own_terms[i] | heading_terms[i] for i in usable),
            retriever=retriever,
            members=members,
            whole=whole,
        )

    def passage(self, index: int) -> str:
        return self.text[self.segments[index].start : self.segments[index].end]

    @cached_property
    def section_terms(self) -> dict[str, frozenset[str]]:
        """The terms of every section (the passages under one heading, and the heading) but
        the page's topic terms, which every passage is credited with: what the section as a
        whole is about."""
        found: dict[str, set[str]] = {}
        for i in self.usable:
            heading = self.segments[i].heading
            found.setdefault(heading, set(self.heading_terms[i])).update(self.own_terms[i])
        return {heading: frozenset(terms - self.topic_terms) for heading, terms in found.items()}

    def first(self, index: int) -> int:
        """The page's own segment a unit starts with (the segment itself for a single one)."""
        return self.members.get(index, (index,))[0]

    @cached_property
    def _units_by_opener(self) -> dict[int, tuple[int, ...]]:
        found: dict[int, list[int]] = {}
        for unit, members in self.members.items():
            found.setdefault(members[0], []).append(unit)
        return {opener: tuple(units) for opener, units in found.items()}

    def opens_window(self, index: int) -> bool:
        """Whether segment ``index`` is the first sentence of a window of several."""
        return index in self._units_by_opener

    def units_opening(self, index: int) -> tuple[int, ...]:
        """The units of several segments that segment ``index`` opens."""
        return self._units_by_opener.get(index, ())

    def dangling(self, index: int) -> bool:
        """Whether the unit opens by pointing back to a sentence it cannot be quoted with: a
        demonstrative with its noun opening a paragraph does not (``_DEMONSTRATIVE``)."""
        first = self.first(index)
        segment = self.segments[first]
        if not points_back(segment, self.text) or joins_previous(self.segments, first, self.text):
            return False
        opens_paragraph = first == 0 or self.segments[first - 1].paragraph != segment.paragraph
        return not (opens_paragraph and _names_its_noun(self.passage(first)))

    def length_cost(self, index: int) -> float:
        """WINDOW_COST per sentence a window adds; once for a whole block, the unit its author
        wrote as one description."""
        added = len(self.members.get(index, (index,))) - 1
        return WINDOW_COST * (min(added, 1) if index in self.whole else added)

    def span(self, index: int) -> tuple[int, int]:
        """The exact span of the snapshot quoted for a unit (:func:`excerpt_span`; a window
        opening by pointing back is joined to the sentence before it when it fits)."""
        if index not in self.members:
            return excerpt_span(self.segments, index, self.text)
        first, end = self.first(index), self.segments[index].end
        start = self.segments[first].start
        if joins_previous(self.segments, first, self.text):
            joined = self.segments[first - 1].start
            start = joined if end - joined <= EXCERPT_MAX_CHARS else start
        return start, end


def _names_its_noun(sentence: str) -> bool:
    """Whether ``sentence`` opens with a demonstrative followed by its noun ("This command
    …"), not a bare demonstrative ("This is …", "This allows …")."""
    match = _DEMONSTRATIVE.match(sentence)
    if match is None:
        return False
    word = match.group(2)
    if _AUXILIARY.match(word):
        return False
    singular = match.group(1).lower() in ("this", "that")
    return not (singular and word.endswith("s") and not word.endswith(("ss", "us", "is")))
