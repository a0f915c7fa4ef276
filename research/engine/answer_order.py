"""The order of a question's quotations in the quoted report: answer first.

The passages that answer a question directly lead its section (one to three, labelled
"Answer"), supporting passages follow, and passages that contradict the answer come last; a
question comparing two sides shows one block per side. Code is quoted for questions about
usage ("How do I…"), and for any question a code sample holding a string the question quotes
(the error message it asks about, printed in a session). What a question is (a usage
question, a comparison and its sides) is read from its wording in general grammatical terms,
never from a list of subjects.
"""

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

from research.engine.contracts import ContradictionCandidate, Evidence
from research.engine.question_terms import (
    answer_shape,
    holds_phrase,
    opens_with_definition,
    question_kind,
    question_terms,
    quoted_phrases,
)
from research.engine.text import content_terms

ANSWER_LABEL = "Answer"
SUPPORTING_LABEL = "Supporting"
CONTRASTING_LABEL = "Contrasting"
# "One to three" direct answers lead a section: more would bury the supporting passages
# again, and the strongest three already show whether the sources agree.
MAX_ANSWERS = 3

# "How do I…", "How can one…", "how to…", "What command…", "Which syntax…": a question about
# doing something, whose answer may be a code sample.
_USAGE = re.compile(
    r"\bhow\s+(?:do|does|can|could|should|would|might|may)\s+(?:i|you|we|one)\b"
    r"|\bhow\s+to\b|\b(?:what|which)\s+(?:commands?|syntax)\b",
    re.IGNORECASE,
)

# Comparisons, each with its two sides: "which is cheaper, X or Y", "how do X and Y
# compare", "how does X compare with Y", "how does X differ from Y", "the difference between
# X and Y", "compare X with Y", "X vs Y", "is X faster than Y", "should I use X or Y".
_COMPARISONS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        r"\b(?:which|what)\s+(?:is|are|was|were)\s+[^,?]+,\s*(?P<a>.+?)\s+or\s+(?P<b>.+)",
        r"\bhow\s+(?:do|did)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?:compare|differ)\b",
        r"\bhow\s+(?:does|do|did)\s+(?P<a>.+?)\s+(?:compare|differ|stack\s+up)\s+"
        r"(?:with|to|from|against)\s+(?P<b>.+)",
        r"\bdifferences?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+)",
        r"\b(?:compare|comparing|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against)\s+(?P<b>.+)",
        r"^(?:(?:what|which|how)\b.*?\b(?:is|are|of)\s+)?(?P<a>.+?)\s+(?:vs\.?|versus)\s+"
        r"(?P<b>.+)",
        r"^(?:is|are|was|were|does|do)\s+(?P<a>.+?)\s+(?:(?:more|less)\s+\w+|\w+er|better|"
        r"worse)\s+than\s+(?P<b>.+)",
        r"\b(?:use|choose|pick|prefer)\s+(?P<a>.+?)\s+or\s+(?P<b>.+)",
    )
)
# What follows the second side and belongs to neither: "…compare with Y on cost in 2024".
_SIDE_TAIL = re.compile(
    r"\s+(?:on|in terms of|regarding|for|when|across|within|during|since|from|in|at)\s+.*$|"
    r"[,;:?].*$",
    re.IGNORECASE,
)
_SIDE_LEAD = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)
# A side named in many words ("the adult single fare of the old network") is named by a
# passage that has most of its distinctive words; one or two words must all be there.
_ALL_TERMS_UP_TO = 2


def is_usage_question(question: str) -> bool:
    """Whether ``question`` asks how to do something: the kind a code sample answers. A
    question the selector reads as asking for a procedure (``question_kind``, for which it
    extracts code blocks) is one, so the code it extracts is quoted."""
    return bool(_USAGE.search(question)) or question_kind(question).kind == "procedure"


def quotes_code(question: str, code: str) -> bool:
    """Whether the code sample ``code`` may be quoted for ``question``: a usage question, or
    one quoting a string the sample holds, its terms in order ("Why does it print \"Possible
    memory leak detected\"?" is answered by the session that prints it and what follows)."""
    return is_usage_question(question) or holds_quoted(question, code)


# A definition may bound its term by what it is not ("A blueprint is not a pluggable app
# because …"): the genus it is set apart from is part of saying what it is.
_NEGATED_COPULA = re.compile(r"\b(?:is|are)\s+not\s+(?:an?|the)\b", re.IGNORECASE)


def defines_focus(question: str, text: str) -> bool:
    """Whether ``text`` opens with a definition of what ``question`` asks the meaning of: a
    short subject holding a term of the question's focus, then the copula ("A blueprint in
    X is not a pluggable app …"). The "<term> is a" surface pattern of definitional question
    answering (Hildebrandt, Katz & Lin, HLT-NAACL 2004), the selector's definiendum."""
    kind = question_kind(question)
    shape = answer_shape(kind)
    if kind.kind != "definition" or shape is None:
        return False
    _, focus = question_terms(question)
    return opens_with_definition(text, (shape, _NEGATED_COPULA), focus)


def holds_quoted(question: str, text: str) -> bool:
    """Whether ``text`` holds a string ``question`` quotes (two content terms or more, in
    order): the message the asker saw or the wording they typed, word for word."""
    phrases = quoted_phrases(question)
    if not phrases:
        return False
    terms = content_terms(text)
    return any(holds_phrase(terms, phrase) for phrase in phrases)


def _side(text: str) -> str:
    return _SIDE_LEAD.sub("", _SIDE_TAIL.sub("", " ".join(text.split()))).strip(" .")


def comparison_sides(question: str) -> tuple[str, str] | None:
    """The two sides ``question`` compares, as it writes them, or None for no comparison.
    Sides that share every content word ("X" against "X") are no comparison."""
    text = " ".join(question.split()).rstrip("?. ")
    for pattern in _COMPARISONS:
        match = pattern.search(text)
        if not match:
            continue
        a, b = _side(match.group("a")), _side(match.group("b"))
        terms_a, terms_b = set(content_terms(a, parts=False)), set(content_terms(b, parts=False))
        if terms_a - terms_b and terms_b - terms_a:
            return a, b
    return None


def names_side(said: str, side: str, other: str) -> bool:
    """Whether text saying ``said`` names ``side`` of a comparison with ``other``: it has the
    side's own content words (those the other side lacks), all of them for a side of one or
    two such words, most of them for a longer one."""
    own = set(content_terms(side, parts=False)) - set(content_terms(other, parts=False))
    found = own & set(content_terms(said, parts=False))
    needed = len(own) if len(own) <= _ALL_TERMS_UP_TO else len(own) // 2 + 1
    return bool(own) and len(found) >= needed


# Six words in common open a sentence frame, not a common phrase: the entries of a manual's
# option list or settings table ("Create a shallow clone with a history after …", "… with a
# history truncated to …") share that many, while phrases any page repeats ("The default is",
# "See also the", "New in version 2") are shorter.
_FRAME_WORDS = 6
_WORD = re.compile(r"\w+")


def _frame(text: str) -> tuple[str, ...]:
    """The first :data:`_FRAME_WORDS` words of ``text``, case folded."""
    return tuple(_WORD.findall(text.casefold())[:_FRAME_WORDS])


def with_siblings(
    shown: list[list[Evidence]], candidates: Sequence[list[Evidence]]
) -> list[list[Evidence]]:
    """``shown`` (groups of near-identical quotations), each followed by its siblings among
    ``candidates`` not shown: the passages of the same page opening with the same
    :data:`_FRAME_WORDS` words, and for a code sample the other code samples under the same
    heading of its page. A page listing alternatives in one frame (the options that make a
    shallow clone, the expiry settings of two kinds of entries) states one of them as
    incomplete as it is alone, and the code samples of one section are the parts of its one
    example (the files of a project, a command and what it prints); its siblings are the
    rest of the answer."""
    taken = {group[0].id for group in shown}
    placed: list[list[Evidence]] = []
    for group in shown:
        placed.append(group)
        for other in candidates:
            lead = other[0]
            if lead.id not in taken and _siblings(group[0], lead):
                placed.append(other)
                taken.add(lead.id)
    return placed


def _siblings(first: Evidence, second: Evidence) -> bool:
    """Whether two quotations of one page are siblings: both open with the same
    :data:`_FRAME_WORDS` words, or both are code samples under the same heading."""
    if first.source_id != second.source_id:
        return False
    if first.locator.code and second.locator.code:
        return bool(first.locator.heading) and _same_section(first, second)
    frame = _frame(first.excerpt)
    return len(frame) == _FRAME_WORDS and _frame(second.excerpt) == frame


def _same_section(first: Evidence, second: Evidence) -> bool:
    """Whether two quotations stand on one page under the same heading (or both under none)."""
    return first.source_id == second.source_id and first.locator.heading == second.locator.heading


# A lead-in ending in a colon ("The following pragmas are used:", "It takes these steps:")
# announces the list, table or example right after it: documentation style guides introduce
# a list with "a complete sentence, or a fragment that ends with a colon" (Microsoft Writing
# Style Guide, "Lists") and put nothing between the introduction and what it introduces
# (MongoDB documentation style guide, "Punctuation": otherwise a period, not a colon); in
# Rhetorical Structure Theory (Mann & Thompson, Text 8(3), 1988) the lead-in is the satellite
# of a "preparation" relation whose nucleus follows (the relation definitions of Mann &
# Taboada's RST web site). The announced passages are that nucleus: up to _ANNOUNCED_SPAN
# of them (lists "work best when they have two to seven items", the same guide; the span over
# which the selector lets an announcing sentence lend its relevance, research/llm/
# selection.py), each starting at most _ANNOUNCED_GAP characters after the previous one ends:
# room for two items the selector did not keep (a passage window spans at most 400
# characters) between two it kept, not for the prose after the list.
_ANNOUNCED_SPAN = 6
_ANNOUNCED_GAP = 1_000

# A shown group of quotations or a labelled block of them (:class:`Placed`).
_Item = TypeVar("_Item")


def with_announced(
    shown: list[list[Evidence]], candidates: Sequence[list[Evidence]]
) -> list[list[Evidence]]:
    """``shown`` (groups of near-identical quotations), each whose lead ends in a colon
    followed by what it announces: the groups of ``candidates`` not shown whose leads follow
    it on the same page under the same heading, in page order, up to
    :data:`_ANNOUNCED_SPAN` of them, each starting within :data:`_ANNOUNCED_GAP` characters
    of the end of the one before (the announcer first). Documentation announces an answer
    ("The following pragmas are used:") and gives it in the passages after, which rarely
    repeat the question's words."""
    shown_ids = {group[0].id for group in shown}
    unshown = [group for group in candidates if group[0].id not in shown_ids]
    return _followed_by_announced(shown, unshown, lambda group: group, lambda _, group: group)


def _announced(lead: Evidence, candidates: Sequence[list[Evidence]]) -> list[list[Evidence]]:
    """The groups of ``candidates`` that the quotation ``lead`` announces, in page order. A
    group stands where its member on ``lead``'s page does: an item of the list may be shown
    led by the near-identical sentence of another source, citing both."""
    if not lead.excerpt.rstrip().endswith(":"):
        return []
    # A group holds one quotation per source (near-identical ones of other sources).
    following = sorted(
        (
            (member.locator.start, member.locator.end, group)
            for group in candidates
            for member in group
            if _same_section(lead, member) and member.locator.start >= lead.locator.end
        ),
        key=lambda found: found[0],
    )
    announced: list[list[Evidence]] = []
    end = lead.locator.end
    for start, stop, group in following[:_ANNOUNCED_SPAN]:
        if start - end > _ANNOUNCED_GAP:
            break
        announced.append(group)
        end = max(end, stop)
    return announced


@dataclass(frozen=True)
class Placed:
    """One group of near-identical quotations and the block (label) it is shown in."""

    label: str
    group: list[Evidence]


def _opposed(
    group: list[Evidence],
    answers: list[list[Evidence]],
    conflicts: Sequence[ContradictionCandidate],
) -> bool:
    """Whether ``group`` states another value than an answer on the same claim: one position
    of a conflict holds the group, another position holds an answer."""
    ids = {item.id for item in group}
    answer_ids = {item.id for answer in answers for item in answer}
    for conflict in conflicts:
        holding = [set(position.evidence_ids) for position in conflict.positions]
        mine = [place for place, held in enumerate(holding) if held & ids]
        theirs = [place for place, held in enumerate(holding) if held & answer_ids]
        if mine and theirs and not set(mine) & set(theirs):
            return True
    return False


def answer_first(
    groups: list[list[Evidence]],
    *,
    answers_directly: Callable[[list[Evidence]], bool],
    conflicts: Sequence[ContradictionCandidate] = (),
) -> list[Placed]:
    """``groups`` (strongest first) as blocks: up to :data:`MAX_ANSWERS` groups that answer
    the question directly, then the supporting ones in the order given, then those that
    contradict the answers (a stance of ``contradicts``, or another value of a conflict).
    Without a direct answer every group is supporting."""
    contradicting = [g for g in groups if any(item.stance == "contradicts" for item in g)]
    rest = [g for g in groups if not any(g is c for c in contradicting)]
    answers = [g for g in rest if answers_directly(g)][:MAX_ANSWERS]
    others = [g for g in rest if not any(g is a for a in answers)]
    contrasting = [g for g in others if _opposed(g, answers, conflicts)]
    supporting = [g for g in others if not any(g is c for c in contrasting)]
    return [
        *(Placed(ANSWER_LABEL, g) for g in answers),
        *(Placed(SUPPORTING_LABEL, g) for g in supporting),
        *(Placed(CONTRASTING_LABEL, g) for g in [*contrasting, *contradicting]),
    ]


def by_side(
    groups: list[list[Evidence]], sides: tuple[str, str], said: Callable[[Evidence], str]
) -> list[Placed]:
    """``groups`` (strongest first) of a comparison as one block per side: groups naming both
    sides lead as the answer (up to :data:`MAX_ANSWERS`), then those naming the first side,
    those naming the second, and the ones naming neither (or both, beyond the answers) as
    supporting. ``said`` is what an excerpt says, with its heading and source title."""
    a, b = sides
    blocks: dict[str, list[list[Evidence]]] = {ANSWER_LABEL: [], a: [], b: [], "": []}
    for group in groups:
        text = said(group[0])
        named = (names_side(text, a, b), names_side(text, b, a))
        if all(named) and len(blocks[ANSWER_LABEL]) < MAX_ANSWERS:
            blocks[ANSWER_LABEL].append(group)
        elif named == (True, False):
            blocks[a].append(group)
        elif named == (False, True):
            blocks[b].append(group)
        else:
            blocks[""].append(group)
    # A side's block is headed by the side as the question writes it ("git push --force" is
    # not recapitalised).
    labels = {ANSWER_LABEL: ANSWER_LABEL, a: a, b: b, "": SUPPORTING_LABEL}
    return [Placed(labels[key], group) for key, found in blocks.items() for group in found]


def after_announcers(placed: list[Placed]) -> list[Placed]:
    """``placed`` with the supporting quotations each lead-in ending in a colon announces
    (:func:`with_announced`) moved right after it, in page order and under its label: the
    list reads after the sentence introducing it. Direct answers and contrasting quotations
    keep their blocks, so the section still opens with its answers."""
    movable = [block.group for block in placed if block.label == SUPPORTING_LABEL]
    return _followed_by_announced(
        placed, movable, lambda block: block.group, lambda block, group: Placed(block.label, group)
    )


def _followed_by_announced(
    items: list[_Item],
    candidates: Sequence[list[Evidence]],
    group_of: Callable[[_Item], list[Evidence]],
    announced_as: Callable[[_Item, list[Evidence]], _Item],
) -> list[_Item]:
    """``items`` in order, each followed by the groups of ``candidates`` its lead announces
    (:func:`_announced`, each wrapped by ``announced_as``); a group already placed is not
    placed again."""
    emitted: set[str] = set()
    ordered: list[_Item] = []
    for item in items:
        if group_of(item)[0].id in emitted:
            continue
        ordered.append(item)
        emitted.add(group_of(item)[0].id)
        for group in _announced(group_of(item)[0], candidates):
            if group[0].id not in emitted:
                ordered.append(announced_as(item, group))
                emitted.add(group[0].id)
    return ordered
