"""Contradiction candidates: comparable values, conflicting positions, scope differences."""

import re
import unicodedata
from collections.abc import Iterable
from decimal import Decimal, InvalidOperation

from research.engine.contracts import (
    ContradictionCandidate,
    ContradictionPosition,
    Evidence,
    EvidenceScope,
)
from research.engine.ledger.evidence import content_order

_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(.*)$")
_SCOPE_FIELDS = ("as_of", "geography", "population", "definition", "methodology")


def comparable_value(value: str) -> str:
    """A value in comparable form: ``"3.10 %"`` and ``"3.1%"`` compare equal, as do
    ``"1,000 people"`` and ``"1000 people"``. Values are compared, never combined."""
    folded = " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    match = _NUMBER.match(folded.replace(",", ""))
    if not match:
        return folded
    try:
        number = Decimal(match.group(1)).normalize()
    except InvalidOperation:
        return folded
    unit = match.group(2).replace(" ", "")
    return f"{number:f}{unit}"


def find_contradictions(evidence: Iterable[Evidence]) -> list[ContradictionCandidate]:
    """Contradiction candidates: evidence sharing a claim key that reports different values,
    or that both supports and contradicts the claim.

    Every position is kept with its own evidence and scope; the scope fields that differ
    (date, geography, population, definition, methodology) are listed so the decision model
    and the reader can tell a scope difference from a genuine conflict.
    """
    by_claim: dict[str, list[Evidence]] = {}
    for item in evidence:
        if item.claim_key:
            by_claim.setdefault(item.claim_key, []).append(item)
    found: list[ContradictionCandidate] = []
    for claim_key in sorted(by_claim):
        items = by_claim[claim_key]
        positions: dict[tuple[str, str], list[Evidence]] = {}
        for item in items:
            if item.normalized_value:
                positions.setdefault(("value", comparable_value(item.normalized_value)), []).append(
                    item
                )
            elif item.stance in ("supports", "contradicts"):
                positions.setdefault(("stance", item.stance), []).append(item)
        values = [key for key in positions if key[0] == "value"]
        stance_conflict = {key[1] for key in positions if key[0] == "stance"} == {
            "supports",
            "contradicts",
        }
        if len(values) < 2 and not stance_conflict:
            continue
        if not stance_conflict:
            # Value-less support for one side adds nothing to a conflict between values.
            positions = {key: group for key, group in positions.items() if key[0] == "value"}
        involved = [item for group in positions.values() for item in group]
        found.append(
            ContradictionCandidate(
                key=f"claim:{claim_key}",
                claim_key=claim_key,
                positions=[
                    ContradictionPosition(
                        value=group[0].normalized_value,
                        stance=group[0].stance,
                        evidence_ids=[item.id for item in group],
                        scopes=[item.scope for item in group],
                    )
                    for _, group in sorted(positions.items())
                ],
                # Content order, not id order: ids are random per run, and the report quotes
                # a conflict's evidence in this order.
                evidence_ids=list(
                    dict.fromkeys(item.id for item in sorted(involved, key=content_order))
                ),
                question_ids=sorted({qid for item in involved for qid in item.question_ids}),
                scope_differences=_scope_differences(item.scope for item in involved),
            )
        )
    return found


def _scope_differences(scopes: Iterable[EvidenceScope]) -> dict[str, list[str]]:
    collected: dict[str, set[str]] = {name: set() for name in _SCOPE_FIELDS}
    for scope in scopes:
        for name in _SCOPE_FIELDS:
            value = getattr(scope, name)
            if value:
                collected[name].add(value.strip())
    return {name: sorted(values) for name, values in collected.items() if len(values) > 1}
