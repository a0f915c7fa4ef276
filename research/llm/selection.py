"""Choosing the passages of one snapshot that answer the research questions, without a model.

Each question is scored against every sentence, list item, table, window of consecutive
sentences of one block (:mod:`research.llm.passage_units`) and (for questions asking how to
do something) whole code block of the snapshot. The score is one documented
combination, its constants in the block below (docs/llm.md, "Passage ranking"):

* **coverage**: the idf-weighted share of the question's terms the passage or the heading it
  stands under mentions; terms of the document's title count partly in every passage, since
  every sentence of a page about a named thing is about it without repeating the name. Words
  naming the kind of answer ("which dates", "how long") are matched by an answer of that kind.
* **BM25** (``bm25s``) over the passages with their headings, normalised by the page's best.
* **proximity**: how close together the matched terms stand, from the shortest window that
  covers them all (Tao & Zhai, SIGIR 2007).
* **heading match**: the share of the question's terms in the passage's heading.
* **answer shape**: the passage has the form of the answer the question's kind wants
  (:func:`research.engine.question_terms.question_kind`): a number, a date or version, a
  definition's copula, an instruction, a contrast, a stated default, a cause.
* **definiendum**: for a question asking what something is, the passage opens with a
  definition of it (a short subject holding the question's focus, then the copula).

A passage mentioning none of what the question asks about beyond its names loses half its
score; captions, sentences about the document itself and sentences pointing back to text they
cannot be quoted with lose some. What is kept must reach an absolute floor and a share of the
page's best passage, so a page rich in answers gives more of them and a page with one answer
gives one. Only the page's own publication lines, text planted to steer a program and code
blocks for questions that ask no procedure are left out. Picks are spread with maximal
marginal relevance over term overlap (Carbonell & Goldstein, SIGIR 1998), so near-duplicates
do not crowd out new facts.

With the snapshot's block map, passages never run from one block of the page into the next
(a table is quoted as its rows, with the breaks between them), and a code block is quoted only
whole, as the exact span of its block.
"""

import math
import re
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from research.engine.contracts import EXCERPT_MAX_CHARS, Block
from research.engine.question_echo import is_echo
from research.engine.question_terms import (
    _QUANTITY,
    SUPPORTS_RELEVANCE,
    QuestionKind,
    answer_shape,
    answer_type_terms,
    holds_phrase,
    opens_with_definition,
    question_kind,
    question_terms,
    quoted_phrases,
)
from research.llm.diversity import mmr_order, near_duplicate, overlap_of
from research.llm.document_talk import ABOUT_PUBLICATION, about_the_document, publication_line
from research.llm.passage_page import PassagePage
from research.llm.passage_units import min_cover_proximity
from research.llm.text import content_terms

# --------------------------------------------------------------------------------------------
# Ranking constants: every number the passage score is made of (docs/llm.md, "Passage ranking")
# --------------------------------------------------------------------------------------------
# The weights of the components sum to 1, so a passage that mentions every term of the
# question, close together, under a heading naming them, in the answer's shape scores 1.
# Coverage carries most: relevance is to mean how much of what the question asks the passage
# states, and 0.5 (SUPPORTS_RELEVANCE) must mean "answers it" to the engine.
W_COVERAGE = 0.55
# BM25 adds term frequency and length normalisation that a set coverage lacks; normalised by
# the page's best passage it orders passages of equal coverage.
W_BM25 = 0.15
# Matched terms standing together speak of one thing; scattered over a long sentence, often of
# several (Tao & Zhai 2007 found the minimal covering span the most useful proximity measure).
W_PROXIMITY = 0.1
# A passage under a heading naming what the question asks about is in the right section.
W_HEADING = 0.05
# An answer of the wanted shape (a number for "how many") is worth as much as BM25: enough to
# lift the passage stating the value over one that only repeats the question's words.
W_SHAPE = 0.15
# A passage holding a string the question quotes, its terms in order ("Permission denied:
# cannot open the lock file"), states what the asker saw word for word: the ordered
# phrase match of term-dependence retrieval models (Metzler & Croft, SIGIR 2005), worth a
# little less than the answer's shape, since the quoted words are the question's, not its
# answer. A code block holding the quoted string (a printed error, a command's output) is a
# candidate for any question: it is the text asked about, not a usage sample.
W_PHRASE = 0.1
# For a question asking what something is, the passage whose subject, before its copula, is
# what the question asks about ("Eager loading refers to …") is its definition: the
# "<term> is a / refers to" surface pattern of definitional question answering (Hildebrandt,
# Katz & Lin, HLT-NAACL 2004; Cui, Kan & Chua, SIGIR 2005). A copula anywhere ("The typical
# way this is useful is when …") only has the definition's shape. Worth as much as the shape
# itself: it is the definition's own shape, and it must lift the passage defining the thing
# asked about over the passages that hold a copula and more of the question's words.
W_DEFINIENDUM = 0.15
# A definiendum is a noun phrase of at most DEFINIENDUM_TERMS content words (question_terms).
# The share a title term counts for in every passage: most of a full match, because every
# sentence of a page about a named thing is about it (passage retrieval interpolates a
# passage's score with its document's, Callan, SIGIR 1994); less than a full one, so the
# passage that repeats the term still ranks first.
TITLE_CREDIT = 0.7
# A passage's coverage is interpolated with its section's (the union of the terms of the
# passages under its heading): the section as a whole names what the question asks about
# even where its answering sentence uses other words (passage and document scores
# interpolated, Callan, SIGIR 1994, here one level down, at the section).
SECTION_SHARE = 0.3
# An answer-type word ("date") repeated without an answer of its shape half-matches.
NAMED_ONLY_CREDIT = 0.5
# A passage that mentions only whom the question is about, not what it asks, keeps this share:
# enough to sink it below a passage that does, not so little that a word the stemmer fails to
# join ("released" / "release") or a synonym the page uses removes an answer.
OFF_FOCUS_FACTOR = 0.75
# Kept passages reach this absolute relevance: below it a passage shares less than half the
# question's weighted terms and has no answer shape (0.55 × 0.45 ≈ 0.25) …
MIN_RELEVANCE = 0.25
# … and half the page's best passage for the question: weaker ones are noise beside a clear
# answer, while a page with many good answers keeps them all.
RELATIVE_FLOOR = 0.5
# A page whose passages reach this relevance is quoted beyond a question's share of max_items.
STRONG_RELEVANCE = 0.7
# Maximal marginal relevance: 0.7 of relevance, 0.3 of novelty, the usual setting for
# extractive summaries (Carbonell & Goldstein 1998 use values from 0.3 to 0.7).
MMR_LAMBDA = 0.7
# A label or caption (fewer words than this, no figure) matches many words for its length but
# says little; a sentence about the document itself says nothing about the world; one that
# points back with nothing before it to quote means little alone.
SHORT_WORDS = 8
SHORT_PENALTY = 0.1
META_PENALTY = 0.2
DANGLING_PENALTY = 0.15


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


def _penalty(passage: str) -> float:
    penalty = 0.0
    if len(passage.split()) < SHORT_WORDS and not _QUANTITY.search(passage):
        penalty += SHORT_PENALTY
    if about_the_document(passage):
        penalty += META_PENALTY
    return penalty


# A sentence that announces what follows ("They take effect in three steps:", "the changes
# below", "enter the following command:") answers through the passages after it, which rarely
# repeat the question's words: the figures, and for a procedure the code blocks, of the next
# few passages share its relevance, a little less.
_ANNOUNCES = re.compile(
    r"\b(?:below|as follows|the following|in (?:two|three|four|five|several) "
    r"(?:steps|stages|phases|parts))\b|:\s*$",
    re.IGNORECASE,
)
_ANNOUNCED_SPAN = 6
_ANNOUNCED_SHARE = 0.8
# Reference documentation puts an option's value in a short block of its own right after the
# option's description ("Default: 4096", "Type: integer"): the value answers through
# the description, whose words it never repeats. Such a block (fewer than SHORT_WORDS words,
# carrying a figure) shares the description's relevance like an announced detail. It may come
# after the rest of the description ("Can be a timedelta or an int."): the first such block
# among the next three passages is the description's, three being the longest a one-option
# description in reference documentation usually runs.
_VALUE_LOOKAHEAD = 3


def _follow_announcements(
    page: "PassagePage", relevance: dict[int, float], *, procedure: bool
) -> None:
    """Let the figures, dates and (for a procedure) code blocks that follow a relevant
    announcing sentence share its relevance, so the announced details can be quoted too."""
    for index in sorted(relevance):
        if page.segments[index].kind == "code":
            continue
        # A unit of several sentences stands where its last one does.
        position = bisect_right(page.usable, page.members.get(index, (index,))[-1]) - 1
        inherited = relevance[index] * _ANNOUNCED_SHARE
        following = next(
            (
                later
                for later in page.usable[position + 1 : position + 1 + _VALUE_LOOKAHEAD]
                if _is_value_block(page, index, later)
            ),
            None,
        )
        if (
            following is not None
            and inherited >= MIN_RELEVANCE
            and inherited > relevance.get(following, 0)
        ):
            relevance[following] = inherited
        if not _ANNOUNCES.search(page.passage(index)):
            continue
        for following in page.usable[position + 1 : position + 1 + _ANNOUNCED_SPAN]:
            is_code = page.segments[following].kind == "code"
            if is_code and not procedure:
                continue
            if not is_code and not _QUANTITY.search(page.passage(following)):
                continue
            if inherited >= MIN_RELEVANCE and inherited > relevance.get(following, 0):
                relevance[following] = inherited


def _answer_echoes(page: "PassagePage", relevance: dict[int, float], query: dict[str, float]) -> None:
    """Let the answer of a passage restating a question (a FAQ entry, a forum question:
    :func:`research.engine.question_echo.is_echo`) share its relevance: the first sentence
    after it under the same heading, within one excerpt's length, that holds a question term
    and asks nothing itself, and the passages opening with that sentence. The entry matches
    the asker's question best yet answers nothing; its answer rarely repeats its words. This
    is the pairing the report pool makes (:mod:`research.engine.question_echo`, FAQ retrieval
    after Burke et al. 1997), made where the page's passages are chosen, since the pool can
    only pair an answer that was chosen."""
    for index in sorted(relevance):
        segment = page.segments[index]
        if segment.kind == "code" or not is_echo(page.passage(index)):
            continue
        answer = next(
            (
                later
                for later in page.usable
                if segment.end <= page.segments[later].start <= segment.end + EXCERPT_MAX_CHARS
                and page.segments[later].heading == segment.heading
                and page.segments[later].kind != "code"
                and page.own_terms[later] & query.keys()
                and not is_echo(page.passage(later))
            ),
            None,
        )
        if answer is None:
            continue
        for unit in (answer, *page.units_opening(answer)):
            if relevance[index] > relevance.get(unit, 0.0):
                relevance[unit] = relevance[index]


def _is_value_block(page: "PassagePage", index: int, following: int) -> bool:
    """Whether ``following`` is a short value block of passage ``index``'s description: a later
    segment of the page under the same heading (the caller takes the first such after the
    description), in a block of its own, short, with a figure."""
    after, before = page.segments[following], page.segments[index]
    passage = page.passage(following)
    return (
        after.kind != "code"
        and after.paragraph != before.paragraph
        and after.heading == before.heading
        and len(passage.split()) < SHORT_WORDS
        and bool(_QUANTITY.search(passage))
    )


def _score_question(
    page: PassagePage, question: QuestionText, *, floors: bool = True
) -> tuple[dict[int, float], dict[int, float]]:
    """How well each passage answers ``question`` (relevance, 0–1) and the order to pick them
    in; passages below the floors are left out (all are kept with ``floors=False``, which
    :func:`explain_question` uses to show where a passage stood).

    Relevance is the page-independent part of the score (coverage, proximity, heading, shape,
    penalties) rescaled to 0–1: the engine compares it across pages (0.5 answers), and BM25
    normalised by the page's best would give every page's best passage the same lift however
    little it says. The order adds the BM25 component.
    """
    query, focus = question_terms(question.text, page.topic_terms)
    if not query:
        return {}, {}
    kind = question_kind(question.text)
    shape = answer_shape(kind)
    raw = page.retriever.get_scores(list(query))
    top = float(raw.max()) if len(raw) else 0.0
    answer_types = {term: shape for term, shape in answer_type_terms(question.text).items()}
    about_publication = bool(ABOUT_PUBLICATION & query.keys())
    relevance: dict[int, float] = {}
    lift: dict[int, float] = {}
    scores = {index: float(raw[position]) for position, index in enumerate(page.usable)}
    for index, unit in page.members.items():
        scores[index] = max((scores[i] for i in unit if i in scores), default=0.0)
    phrases = quoted_phrases(question.text)
    procedure = kind.kind == "procedure"
    quoting: set[int] = set()
    for index in [*page.usable, *page.members]:
        segment = page.segments[index]
        passage = page.passage(index)
        quotes = bool(phrases) and any(
            holds_phrase(content_terms(passage), phrase) for phrase in phrases
        )
        if segment.kind == "code" and not procedure and not quotes:
            continue
        if not about_publication and publication_line(passage):
            continue
        value = _passage_score(page, index, query, focus, kind, answer_types)
        if shape is not None and (
            (segment.kind == "code" and procedure) or _shaped(shape, kind, page, index)
        ):
            value += W_SHAPE
        if quotes:
            value += W_PHRASE
            quoting.add(index)
        defines = (
            kind.kind == "definition" and shape is not None and opens_with_definition(passage, (shape,), focus)
        )
        if defines and not page.opens_window(index):
            # A definition is quoted with the sentences after it in its block (below): the
            # sentence alone, when it opens a window, is no definition's whole.
            value += W_DEFINIENDUM
        value -= _penalty(passage) if segment.kind != "code" else 0.0
        if page.dangling(index):
            # "The same goes for the cost." means little without what came before.
            value -= DANGLING_PENALTY
        if not (defines and index in page.members):
            # The sentences after a definition say what the defined thing does ("When the
            # collection is first accessed, a SELECT is emitted"): they cost nothing.
            value -= page.length_cost(index)
        value = min(1.0, value / (1 - W_BM25))
        if value >= MIN_RELEVANCE or not floors:
            relevance[index] = value
            lift[index] = W_BM25 * (scores[index] / top if top > 0 else 0.0)
    _follow_announcements(page, relevance, procedure=procedure)
    _answer_echoes(page, relevance, query)
    # A passage holding the string the question quotes is what the asker saw (the error
    # printed, the message logged), the question's setting rather than its answer: the bar the
    # other passages must reach is set by the best of them, so a strong phrase match does not
    # cut the passages saying what to do about it. It is kept on its own score.
    others = [v for i, v in relevance.items() if i not in quoting]
    best = max(others or relevance.values(), default=0.0)
    kept = {
        i: v
        for i, v in relevance.items()
        if i in quoting or v >= RELATIVE_FLOOR * best or not floors
    }
    return kept, {i: (1 - W_BM25) * v + lift.get(i, 0.0) for i, v in kept.items()}


@dataclass(frozen=True)
class ScoredPassage:
    """One passage of a page as :func:`explain_question` shows it: its span, relevance (0–1),
    place in the question's order (1 = picked first), and whether it passes the floors."""

    start: int
    end: int
    relevance: float
    rank: int
    kept: bool


def explain_question(
    text: str, question: QuestionText, *, title: str = "", blocks: Sequence[Block] = ()
) -> list[ScoredPassage]:
    """Every passage of ``text`` scored for ``question``, in the order the selector would pick
    them, with whether the floors keep it: what the evaluation's trace shows of a page that
    holds a fact the evidence lacks (``python -m evals trace``). Nothing here changes what
    :func:`select_passages` picks."""
    page = PassagePage.build(text, title, blocks)
    if page is None:
        return []
    kept, _ = _score_question(page, question)
    relevance, order = _score_question(page, question, floors=False)
    ranked = sorted(order, key=lambda i: (-order[i], i))
    return [
        ScoredPassage(*page.span(index), relevance[index], place, index in kept)
        for place, index in enumerate(ranked, start=1)
    ]


def _definition_lead(
    page: PassagePage, question: QuestionText, ordered: Sequence[int]
) -> list[int]:
    """The first of ``ordered`` the definiendum bonus lifts for ``question`` (it opens with a
    definition of the question's focus and opens no window of several sentences), if any."""
    kind = question_kind(question.text)
    shape = answer_shape(kind)
    if kind.kind != "definition" or shape is None:
        return []
    _, focus = question_terms(question.text, page.topic_terms)
    return [
        index
        for index in ordered
        if not page.opens_window(index)
        and opens_with_definition(page.passage(index), (shape,), focus)
    ][:1]


def _shaped(shape: re.Pattern[str], kind: QuestionKind, page: PassagePage, index: int) -> bool:
    """Whether passage ``index`` has the answer's shape; a date may stand in its heading."""
    if shape.search(page.passage(index)):
        return True
    return kind.kind == "date" and bool(shape.search(page.segments[index].heading))


def _passage_score(
    page: PassagePage,
    index: int,
    query: dict[str, float],
    focus: set[str],
    kind: QuestionKind,
    answer_types: dict[str, re.Pattern[str]],
) -> float:
    """The coverage, proximity and heading components of a passage's score, weighted, and
    the share kept when it misses the question's focus."""
    passage, heading = page.passage(index), page.segments[index].heading
    own, heading_terms = page.own_terms[index], page.heading_terms[index]
    answered = {
        term
        for term, shape in answer_types.items()
        if shape.search(passage) or (kind.kind == "date" and shape.search(heading))
    }
    # The page's title heading stands over every passage: its words count as the title's do.
    words = (own - answer_types.keys()) | (heading_terms - page.topic_terms) | answered
    partial = {term: TITLE_CREDIT for term in page.topic_terms}
    partial.update(
        {term: NAMED_ONLY_CREDIT for term in answer_types.keys() - answered if term in own}
    )
    coverage = page.weights.coverage(query, words, partial)
    section = page.section_terms.get(page.segments[index].heading, frozenset())
    section_words = (section - answer_types.keys()) | answered
    coverage = (1 - SECTION_SHARE) * coverage + SECTION_SHARE * page.weights.coverage(
        query, section_words | words, partial
    )
    proximity = min_cover_proximity(
        page.positions[index], [term for term in query if term not in answer_types]
    )
    in_heading = page.weights.coverage(query, heading_terms - page.topic_terms)
    value = W_COVERAGE * coverage + W_PROXIMITY * proximity + W_HEADING * in_heading
    if focus and not focus & (own | heading_terms):
        value *= OFF_FOCUS_FACTOR
    return value


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
    any gets more; a passage chosen for several questions is returned once. Each question may
    have an equal share of ``max_items`` (the engine's room for one page); how many of them
    it gets is decided by the floors of :func:`_score_question`, not by a fixed count.
    """
    page = PassagePage.build(text, title, blocks) if questions else None
    if page is None:
        return []
    own_terms = page.own_terms
    relevance: dict[tuple[str, int], float] = {}
    rank_score: dict[str, dict[int, float]] = {}
    for question in questions:
        question_relevance, rank_score[question.id] = _score_question(page, question)
        relevance.update(
            {(question.id, index): value for index, value in question_relevance.items()}
        )

    per_question = max(1, math.ceil(max_items / len(questions)))
    spans = {index: page.span(index) for _, index in relevance}
    picks: dict[str, list[int]] = {}
    for question in questions:
        scores = rank_score.get(question.id, {})
        ordered = sorted(scores, key=lambda i: (-scores[i], i))
        # The definition of what a question asks the meaning of is its answer: the best
        # passage defining it is picked first, and the others are spread around it.
        lead = _definition_lead(page, question, ordered)
        picks[question.id] = lead + mmr_order(
            [i for i in ordered if i not in lead],
            scores,
            own_terms,
            limit=max_items - len(lead),
            taken=lead,
            spans=spans,
            weight=MMR_LAMBDA,
        )

    def fits(candidate: int) -> bool:
        # Diversity holds across questions too: one fact quoted twice is not two facts.
        return candidate not in chosen and not any(
            near_duplicate(own_terms[candidate], own_terms[i]) or overlap_of(spans, candidate, i)
            for i in chosen
        )

    chosen: list[int] = []
    for turn in range(per_question):
        for question in questions:
            ranked = picks.get(question.id, [])
            if turn < len(ranked) and fits(ranked[turn]):
                chosen.append(ranked[turn])
    # A page that is all answer (sentence after sentence of changes) is quoted beyond the
    # per-question share, up to ``max_items``.
    strong = sorted(
        {i for (_, i), value in relevance.items() if value >= STRONG_RELEVANCE} - set(chosen),
        key=lambda i: (-max(rank_score[q.id].get(i, 0.0) for q in questions), i),
    )
    for candidate in strong:
        if len(chosen) >= max_items:
            break
        if fits(candidate):
            chosen.append(candidate)
    # The room a question leaves unused (the page holds fewer answers to it than its share)
    # goes to the other questions' next picks, in turns: the share is a fair division of the
    # page's room, not a cap on a question the page answers at length.
    extra: dict[str, list[int]] = {question.id: [] for question in questions}
    for turn in range(per_question, max_items):
        for question in questions:
            ranked = picks.get(question.id, [])
            if len(chosen) < max_items and turn < len(ranked) and fits(ranked[turn]):
                chosen.append(ranked[turn])
                extra[question.id].append(ranked[turn])
    passages = []
    for index in chosen[:max_items]:
        related = [
            q.id
            for q in questions
            if relevance.get((q.id, index), 0.0) >= SUPPORTS_RELEVANCE
            or index in picks.get(q.id, [])[:per_question]
            or index in extra[q.id]
        ]
        best = max(relevance.get((qid, index), 0.0) for qid in related)
        start, end = spans[index]
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
