"""Incompatible values for one quantity, found in the excerpts themselves.

A model's extractor names what a value measures (its claim key), and
:func:`~research.engine.ledger.find_contradictions` compares values under one key. Without a
model nobody names the quantity, so two pages saying "water boils at 100 °C at sea level" and
"the boiling point of water at sea level is 42 degrees Celsius" would both be quoted as
answers, and the wrong one could lead the report. This module finds such pairs by form:

* a **measure** is a number with a dimension — a unit of measure, a percentage or a currency
  (:func:`~research.engine.support.measures`: "100 °C" and "100 degrees Celsius" are one);
* two measures speak of the **same quantity** when they have the same dimension, are found
  for the same research question, the clauses they stand in share at least three content
  words (what is measured, of what, where: "water", "boil", "sea level"), and the word that
  governs each value — the last content word before it, "boils at 100 °C", "the boiling
  point … is 42 °C" — occurs in the other clause too ("freezes at 0 °C" is another quantity
  in the same words);
* they **conflict** when their values differ by more than rounding, and they come from
  different sources.

Each side of a conflict carries the independence clusters of its sources (the ledger's, so a
mirror is not a second site): one site against several independent ones is then visible.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal

from research.engine.contracts import ContradictionCandidate, ContradictionPosition, Evidence
from research.engine.ledger.evidence import content_order
from research.engine.support import content_words, measures

# A quantity is named by what is measured, of what, and under which condition ("boil",
# "water", "sea level"); clauses sharing fewer content words than that, the unit aside, say
# too little about what they measure to be compared.
MIN_SHARED_WORDS = 3
# Values this close are one figure rounded differently (99.97 °C and 100 °C), not a conflict.
ROUNDING = Decimal("0.02")
# Clauses end at sentence punctuation and at semicolons and colons, which join statements.
_CLAUSE_ENDS = ".!?;:\n"


@dataclass(frozen=True)
class _Stated:
    """One measure as one excerpt states it, with the words of its clause (the unit's own
    words left out) and the word governing the value."""

    evidence: Evidence
    value: Decimal
    dimension: str
    text: str
    words: frozenset[str]
    head: str


def _clauses(text: str) -> list[str]:
    clauses, start = [], 0
    for position, character in enumerate(text):
        # A full stop between digits is a decimal point, not the end of a clause.
        if character in _CLAUSE_ENDS and not (
            character == "." and 0 < position < len(text) - 1 and text[position + 1].isdigit()
        ):
            clauses.append(text[start:position])
            start = position + 1
    clauses.append(text[start:])
    return [clause for clause in clauses if clause.strip()]


def _head(clause: str, measure_text: str) -> str:
    """The last content word before the measure in ``clause`` ("" when none)."""
    before = clause[: max(clause.find(measure_text), 0)]
    for token in reversed(before.split()):
        words = content_words(token)
        if words:
            return next(iter(words))
    return ""


def _stated(item: Evidence) -> list[_Stated]:
    found = []
    for clause in _clauses(item.excerpt):
        found_here = measures(clause)
        dimensions = [m.dimension for m in found_here]
        unit_words = {word for m in found_here for word in content_words(m.text)}
        words = frozenset(content_words(clause) - unit_words)
        for measure in found_here:
            # A clause giving two values of one dimension ("from 5 to 9 °C") does not say
            # which of them its words are about.
            if dimensions.count(measure.dimension) == 1:
                head = _head(clause, measure.text)
                found.append(
                    _Stated(item, measure.value, measure.dimension, measure.text, words, head)
                )
    return found


def _same_quantity(first: _Stated, second: _Stated) -> bool:
    if first.dimension != second.dimension or not first.head or not second.head:
        return False
    shared = first.words & second.words
    return (
        len(shared) >= MIN_SHARED_WORDS
        and first.head in second.words
        and second.head in first.words
    )


def _close(first: Decimal, second: Decimal) -> bool:
    largest = max(abs(first), abs(second))
    return largest == 0 or abs(first - second) <= ROUNDING * largest


def find_value_conflicts(
    evidence: Iterable[Evidence], clusters: Mapping[str, str]
) -> list[ContradictionCandidate]:
    """Contradiction candidates for measures of one quantity that disagree, per question.

    ``clusters`` maps source ids to independence clusters. Positions are ordered by how many
    independent clusters state them, most first; each lists its evidence and clusters."""
    by_question: dict[str, list[_Stated]] = {}
    for item in sorted(evidence, key=content_order):
        for stated in _stated(item):
            for question_id in item.question_ids:
                by_question.setdefault(question_id, []).append(stated)
    found: list[ContradictionCandidate] = []
    seen: set[frozenset[str]] = set()
    for question_id in sorted(by_question):
        for group in _quantities(by_question[question_id]):
            candidate = _candidate(question_id, group, clusters)
            if candidate is not None and frozenset(candidate.evidence_ids) not in seen:
                seen.add(frozenset(candidate.evidence_ids))
                found.append(candidate)
    return found


def _quantities(stated: list[_Stated]) -> list[list[_Stated]]:
    """Measures grouped by quantity: each joins the first group with a member it matches."""
    groups: list[list[_Stated]] = []
    for item in stated:
        home = next((g for g in groups if any(_same_quantity(item, m) for m in g)), None)
        if home is None:
            groups.append([item])
        else:
            home.append(item)
    return groups


def _candidate(
    question_id: str, group: list[_Stated], clusters: Mapping[str, str]
) -> ContradictionCandidate | None:
    sides: list[list[_Stated]] = []
    for item in group:
        side = next((s for s in sides if _close(s[0].value, item.value)), None)
        if side is None:
            sides.append([item])
        elif all(member.evidence.id != item.evidence.id for member in side):
            side.append(item)
    sources = {item.evidence.source_id for item in group}
    if len(sides) < 2 or len(sources) < 2:
        return None

    def clusters_of(side: list[_Stated]) -> list[str]:
        return sorted(
            {clusters.get(s.evidence.source_id, f"source:{s.evidence.source_id}") for s in side}
        )

    sides.sort(key=lambda side: (-len(clusters_of(side)), side[0].value))
    shared = frozenset.intersection(*(item.words for item in group))
    about = " ".join(sorted(shared)) or "one quantity"
    claim_key = f"{about} ({group[0].dimension})"[:200]
    # In the group's order, which is content order (find_value_conflicts): ids are random per
    # run, and the report quotes a conflict's evidence in this order.
    involved = list(dict.fromkeys(item.evidence.id for item in group))
    return ContradictionCandidate(
        key=f"value:{question_id}:{claim_key}"[:300],
        claim_key=claim_key,
        positions=[
            ContradictionPosition(
                # The way most of its excerpts write it ("100 °C" rather than "99.97 °C").
                value=max((item.text for item in side), key=[i.text for i in side].count),
                stance="supports",
                evidence_ids=[item.evidence.id for item in side],
                scopes=[item.evidence.scope for item in side],
                clusters=clusters_of(side),
            )
            for side in sides
        ],
        evidence_ids=involved,
        question_ids=[question_id],
    )
