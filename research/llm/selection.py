"""Choosing the passages of one snapshot that answer the research questions, without a model.

Each question is scored against every sentence, list item and table of the snapshot with BM25
(``bm25s``) and with an idf-weighted coverage of the question's terms; the coverage is what the
returned relevance means (0–1: how much of what the question asks about the passage mentions).
Terms of the document's title count as half-present in every passage, because every sentence of
a page about a named thing is about it even when it does not repeat the name. A passage must
still mention what the question asks about (not only whom it is about) to qualify; a related
word ("overrun" for "budget") half-matches, and so does an abbreviation the page defines
("SPF" for "seasonal performance factor"). Words naming the kind of answer ("which dates",
"how long") are matched by an answer of that kind — a date in the passage or in the heading it
stands under, a duration — not by repeating the word. Passages of the wanted shape (a number
for "how many", a cause for "why") earn a bonus; captions, sentences about the document itself
and sentences pointing back to text they cannot be quoted with lose some; the page's own
publication lines are left out. Picks are spread with maximal marginal relevance over term
overlap, so near-duplicates do not crowd out new facts.

With the snapshot's block map, passages never run from one block of the page into the next
(a table is quoted as its rows, with the breaks between them), and code blocks are not quoted:
a report of quotations states findings in prose, and a code sample is no statement of fact.
What a question asks about and the term weights are :mod:`research.engine.question_terms`.
"""

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import bm25s

from research.engine.contracts import EXCERPT_MAX_CHARS, Block
from research.engine.planted import is_planted
from research.engine.question_terms import (
    _QUANTITY,
    _TAKES_EFFECT,
    NEAR_DUPLICATE,
    SUPPORTS_RELEVANCE,
    TermWeights,
    answer_shape_bonus,
    answer_type_terms,
    jaccard,
    question_terms,
    related_matches,
)
from research.llm.text import (
    Segment,
    content_terms,
    find_abbreviations,
    segment_blocks,
    segment_text,
)

MIN_RELEVANCE = 0.4
STRONG_RELEVANCE = 0.7
_MMR_LAMBDA = 0.7
_TITLE_CREDIT = 0.6
_HEADING_CREDIT = 0.5
_OWN_WORDS_FLOOR = 0.15
_PASSAGES_PER_QUESTION = 4
_SOLE_QUESTION_PASSAGES = 6
_ON_TOPIC_COVERAGE = 0.6

# Sentences that start by pointing back ("This…", "It…") read better with the sentence before.
_ANAPHORIC_START = re.compile(
    r"^(?:this|that|these|those|it|its|they|their|such|he|she|however|but|also|both|"
    r"the latter|the former|the same)\b",
    re.IGNORECASE,
)
_SHORT_WORDS = 8
_SHORT_PENALTY = 0.1
# Sentences about the document rather than the world ("This page summarises…").
_META = re.compile(
    r"^(?:this|the)\s+(?:page|article|note|report|section|document|post|paper|summary|chapter)\s+"
    r"(?:summari[sz]\w*|describ\w*|explain\w*|gives?|sets? out|presents?|covers?|looks? at|"
    r"reports?|is about)\b",
    re.IGNORECASE,
)
# A page's own publication data ("Published 1 December 2023 by the Buildings Division.",
# "Cite as: arXiv:2311.04567."): an answer only to a question about the publication.
_PUBLICATION_LINE = re.compile(
    r"^(?:(?:first\s+|originally\s+)?published|posted|updated|last\s+(?:updated|modified|"
    r"reviewed|edited)|written|filed)\b(?:\s+(?:on|by|in|at))?\s+(?:\d|[A-Z])"
    r"|^(?:cite\s+(?:this|as)|how\s+to\s+cite|doi|permalink)\b",
    re.IGNORECASE,
)
_ABOUT_PUBLICATION = frozenset({"publish", "public", "cite", "citation", "updat", "update"})
_META_PENALTY = 0.2
_WANTS_QUANTITY = re.compile(
    r"^how (?:many|much|large|big|high|low|often)\b|\b(?:what|which) (?:share|percentage|"
    r"proportion|number|amount)\b|\bhow much\b",
    re.IGNORECASE,
)
_NO_QUANTITY_PENALTY = 0.1
_DANGLING_PENALTY = 0.15
# "…take effect…", "when…": answered by dates. The phrase says when, not what.
_ASKS_WHEN = re.compile(rf"^when\b|{_TAKES_EFFECT.pattern}", re.IGNORECASE)
_NAMED_ONLY_CREDIT = 0.5


@dataclass(frozen=True)
class QuestionText:
    """A question to select passages for."""

    id: str
    text: str


@dataclass(frozen=True)
class Passage:
    """A selected excerpt ``text[start:end]`` with the questions it answers."""

    start: int
    end: int
    question_ids: tuple[str, ...]
    relevance: float
    confidence: float


def mmr_order(
    candidates: Sequence[int],
    scores: dict[int, float],
    terms: dict[int, frozenset[str]],
    *,
    limit: int,
    taken: Iterable[int] = (),
) -> list[int]:
    """Maximal marginal relevance: up to ``limit`` candidates, each the best trade-off between
    its score and its overlap with those already taken; near-duplicates are skipped."""
    chosen: list[int] = []
    already = list(taken)
    pool = list(candidates)
    while pool and len(chosen) < limit:
        best, best_value = None, -math.inf
        for index in pool:
            overlap = max((jaccard(terms[index], terms[other]) for other in already), default=0.0)
            if overlap >= NEAR_DUPLICATE:
                continue
            value = _MMR_LAMBDA * scores[index] - (1 - _MMR_LAMBDA) * overlap
            if value > best_value:
                best, best_value = index, value
        if best is None:
            break
        chosen.append(best)
        already.append(best)
        pool.remove(best)
    return chosen


def _penalty(passage: str, *, wants_quantity: bool) -> float:
    penalty = 0.0
    has_quantity = bool(_QUANTITY.search(passage))
    if len(passage.split()) < _SHORT_WORDS and not has_quantity:
        # A label or caption matches many words for its length but says little.
        penalty += _SHORT_PENALTY
    if wants_quantity and not has_quantity:
        penalty += _NO_QUANTITY_PENALTY
    if _META.match(passage):
        penalty += _META_PENALTY
    return penalty


def _usable(segment: Segment, text: str) -> bool:
    if segment.kind in ("heading", "code"):
        return False
    words = text[segment.start : segment.end].split()
    has_number = any(char.isdigit() for char in text[segment.start : segment.end])
    return len(words) >= 5 or (has_number and len(words) >= 3)


def _points_back(segment: Segment, text: str) -> bool:
    return segment.kind == "sentence" and bool(
        _ANAPHORIC_START.match(text[segment.start : segment.end])
    )


def _joins_previous(segments: Sequence[Segment], index: int, text: str) -> bool:
    """Whether a sentence that points back can be quoted with the sentence before it."""
    segment = segments[index]
    if index == 0 or not _points_back(segment, text):
        return False
    previous = segments[index - 1]
    return (
        previous.kind == "sentence"
        and previous.paragraph == segment.paragraph
        and segment.end - previous.start <= EXCERPT_MAX_CHARS
    )


def _excerpt_span(segments: Sequence[Segment], index: int, text: str) -> tuple[int, int]:
    """The span to quote for a segment: the segment itself, joined to the sentence before when
    it opens by pointing back, and cut at a clause boundary when it is too long."""
    segment = segments[index]
    start, end = segment.start, segment.end
    if _joins_previous(segments, index, text):
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


# A sentence that announces what follows ("They take effect in three steps:", "the changes
# below") answers through the sentences after it, which rarely repeat the question's words.
_ANNOUNCES = re.compile(
    r"\b(?:below|as follows|the following|in (?:two|three|four|five|several) "
    r"(?:steps|stages|phases|parts))\b|:\s*$",
    re.IGNORECASE,
)
_ANNOUNCED_SPAN = 6
_ANNOUNCED_SHARE = 0.8


def _follow_announcements(
    page: "_Page", relevance: dict[int, float], scores: dict[int, float]
) -> None:
    """Let the figures and dates that follow a relevant announcing sentence share its
    relevance (a little less), so the announced details can be quoted too."""
    order = {index: position for position, index in enumerate(page.usable)}
    for index in sorted(scores):
        if not _ANNOUNCES.search(page.passage(index)):
            continue
        position = order[index]
        for following in page.usable[position + 1 : position + 1 + _ANNOUNCED_SPAN]:
            if not _QUANTITY.search(page.passage(following)):
                continue
            inherited = relevance[index] * _ANNOUNCED_SHARE
            if inherited >= MIN_RELEVANCE and inherited > relevance.get(following, 0):
                relevance[following] = inherited
                scores[following] = inherited


@dataclass
class _Page:
    """One snapshot cut into passages, with what scoring them needs."""

    text: str
    segments: list[Segment]
    usable: list[int]
    own_terms: dict[int, frozenset[str]]
    heading_terms: dict[int, frozenset[str]]
    topic_terms: frozenset[str]
    weights: TermWeights
    retriever: bm25s.BM25

    @classmethod
    def build(cls, text: str, title: str, blocks: Sequence[Block] = ()) -> "_Page | None":
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
        # "the mean SPF was 2.6" speaks of the seasonal performance factor the page defined.
        abbreviations = find_abbreviations(text)

        def terms_of(passage: str) -> frozenset[str]:
            terms = set(content_terms(passage))
            for abbreviation in terms & abbreviations.keys():
                terms |= abbreviations[abbreviation]
            return frozenset(terms)

        own_terms = {i: terms_of(text[segments[i].start : segments[i].end]) for i in usable}
        heading_terms = {i: terms_of(segments[i].heading) for i in usable}
        first_heading = next((s for s in segments if s.kind == "heading"), None)
        topic_text = (
            title + " " + (text[first_heading.start : first_heading.end] if first_heading else "")
        )
        retriever = bm25s.BM25()
        retriever.index(
            [list(own_terms[i] | heading_terms[i]) or ["\x00"] for i in usable],
            show_progress=False,
        )
        return cls(
            text=text,
            segments=segments,
            usable=usable,
            own_terms=own_terms,
            heading_terms=heading_terms,
            topic_terms=frozenset(content_terms(topic_text)),
            weights=TermWeights(own_terms[i] | heading_terms[i] for i in usable),
            retriever=retriever,
        )

    def passage(self, index: int) -> str:
        return self.text[self.segments[index].start : self.segments[index].end]


def _score_question(
    page: _Page, question: QuestionText
) -> tuple[dict[int, float], dict[int, float]]:
    """How well each passage answers ``question`` (relevance, 0–1) and the order to pick them
    in (relevance plus a little BM25); passages below :data:`MIN_RELEVANCE` are left out."""
    query, focus = question_terms(question.text, page.topic_terms)
    relevance: dict[int, float] = {}
    scores: dict[int, float] = {}
    if not query:
        return relevance, scores
    raw = page.retriever.get_scores(list(query))
    top = float(raw.max()) if len(raw) else 0.0
    wants_quantity = bool(_WANTS_QUANTITY.search(question.text))
    answer_types = {
        term: shape for term, shape in answer_type_terms(question.text).items() if term in query
    }
    # A page whose title and first heading already say what the question asks about
    # ("Fare changes in 2025" for "What fare changes take effect in 2025?") answers in
    # sentences that need not repeat those words: there a sentence carrying a figure or
    # a date may stand on the page's topic instead of its own wording.
    # That holds for questions answered by figures and dates, not for "which types can no
    # longer get the grant", whose answer is in words the passage must say.
    subject_query = {term: scale for term, scale in query.items() if term not in answer_types}
    figures_answer = bool(answer_types) or wants_quantity or bool(_ASKS_WHEN.search(question.text))
    on_topic = (
        figures_answer
        and page.weights.coverage(subject_query, page.topic_terms) >= _ON_TOPIC_COVERAGE
    )
    about_publication = bool(_ABOUT_PUBLICATION & query.keys())
    for position, index in enumerate(page.usable):
        passage = page.passage(index)
        if not about_publication and _PUBLICATION_LINE.match(passage):
            continue
        heading = page.segments[index].heading
        answered = {
            term
            for term, shape in answer_types.items()
            if shape.search(passage) or shape.search(heading)
        }
        words = (page.own_terms[index] - answer_types.keys()) | answered
        related = related_matches(query, words)
        related.update(
            {
                term: _NAMED_ONLY_CREDIT
                for term in answer_types.keys() - answered
                if term in page.own_terms[index]
            }
        )
        own = page.weights.coverage(query, words, related)
        carries_answer = on_topic and bool(_QUANTITY.search(passage))
        if own < _OWN_WORDS_FLOOR and not carries_answer:
            continue
        mentioned = words | page.heading_terms[index] | related.keys()
        if focus and not focus & mentioned and not carries_answer:
            # It names who or what the question is about but not what it asks.
            continue
        partial = {term: _TITLE_CREDIT for term in page.topic_terms}
        partial.update({term: _HEADING_CREDIT for term in page.heading_terms[index]})
        partial.update(related)
        covered = page.weights.coverage(query, words, partial)
        value = (
            covered
            + answer_shape_bonus(question.text, passage, heading)
            - _penalty(passage, wants_quantity=wants_quantity)
        )
        if _points_back(page.segments[index], page.text) and not _joins_previous(
            page.segments, index, page.text
        ):
            # "The same goes for the cost." means little without what came before.
            value -= _DANGLING_PENALTY
        value = min(1.0, value)
        if value < MIN_RELEVANCE:
            continue
        relevance[index] = value
        scores[index] = value + 0.1 * (float(raw[position]) / top if top > 0 else 0.0)
    _follow_announcements(page, relevance, scores)
    return relevance, scores


def select_passages(
    text: str,
    questions: Sequence[QuestionText],
    *,
    title: str = "",
    max_items: int = 12,
    blocks: Sequence[Block] = (),
) -> list[Passage]:
    """The most relevant, mutually different passages of ``text`` for ``questions``.

    Every passage is an exact span of ``text``, inside one block of ``blocks`` (the snapshot's
    block map) when it is given. Questions take turns so each gets its best passages before
    any gets more; a passage chosen for several questions is returned once.
    """
    page = _Page.build(text, title, blocks) if questions else None
    if page is None:
        return []
    segments, own_terms = page.segments, page.own_terms
    relevance: dict[tuple[str, int], float] = {}
    rank_score: dict[str, dict[int, float]] = {}
    for question in questions:
        question_relevance, rank_score[question.id] = _score_question(page, question)
        relevance.update(
            {(question.id, index): value for index, value in question_relevance.items()}
        )

    # A question asked alone gets more room: there is no other question to share the page with.
    cap = _SOLE_QUESTION_PASSAGES if len(questions) == 1 else _PASSAGES_PER_QUESTION
    per_question = max(1, min(cap, math.ceil(max_items / len(questions))))
    picks: dict[str, list[int]] = {}
    for question in questions:
        scores = rank_score.get(question.id, {})
        ordered = sorted(scores, key=lambda i: (-scores[i], i))
        picks[question.id] = mmr_order(ordered, scores, own_terms, limit=per_question)

    chosen: list[int] = []
    for turn in range(per_question):
        for question in questions:
            ranked = picks.get(question.id, [])
            if turn >= len(ranked) or ranked[turn] in chosen:
                continue
            candidate = ranked[turn]
            # Diversity holds across questions too: one fact quoted twice is not two facts.
            if any(jaccard(own_terms[candidate], own_terms[i]) >= NEAR_DUPLICATE for i in chosen):
                continue
            chosen.append(candidate)
    # A page that is all answer ("Fare changes in 2025", sentence after sentence of changes)
    # is quoted beyond the per-question share, up to ``max_items``.
    strong = sorted(
        {i for (_, i), value in relevance.items() if value >= STRONG_RELEVANCE} - set(chosen),
        key=lambda i: (-max(rank_score[q.id].get(i, 0.0) for q in questions), i),
    )
    for candidate in strong:
        if len(chosen) >= max_items:
            break
        if all(jaccard(own_terms[candidate], own_terms[i]) < NEAR_DUPLICATE for i in chosen):
            chosen.append(candidate)
    passages = []
    for index in chosen[:max_items]:
        related = [
            q.id
            for q in questions
            if relevance.get((q.id, index), 0.0) >= SUPPORTS_RELEVANCE
            or index in picks.get(q.id, [])
        ]
        best = max(relevance.get((qid, index), 0.0) for qid in related)
        start, end = _excerpt_span(segments, index, text)
        passages.append(Passage(start, end, tuple(related), best, 0.0))
    merged = _merge_overlaps(passages)
    ranked = sorted(merged, key=lambda p: (-p.relevance, p.start))
    return [
        Passage(
            p.start,
            p.end,
            p.question_ids,
            round(p.relevance, 2),
            round(min(0.9, 0.4 + 0.5 * p.relevance), 2),
        )
        for p in ranked
    ]


def _merge_overlaps(passages: Sequence[Passage]) -> list[Passage]:
    """One passage per overlapping group (a sentence quoted alone and again with the sentence
    after it), with the questions of both."""
    merged: list[Passage] = []
    for passage in sorted(passages, key=lambda p: (p.start, p.end)):
        last = merged[-1] if merged else None
        if (
            last is not None
            and passage.start < last.end
            and max(last.end, passage.end) - last.start <= EXCERPT_MAX_CHARS
        ):
            merged[-1] = Passage(
                last.start,
                max(last.end, passage.end),
                tuple(dict.fromkeys(last.question_ids + passage.question_ids)),
                max(last.relevance, passage.relevance),
                0.0,
            )
        else:
            merged.append(passage)
    return merged
