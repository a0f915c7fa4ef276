"""The quoted report's conflicts: each contradiction candidate as a reported contradiction with
its sides, and the executive summary's caveat for a question whose values disagree.

A value conflict (every position states a value) is reported with how many independent
sites state each value; other conflicts with their stances and the scope differences that
may explain them. Neither side is ever stated alone.
"""

from collections.abc import Sequence

from research.engine.contracts import (
    ContradictionCandidate,
    ContradictionPosition,
    ReportContradiction,
    ReportContradictionSide,
    Statement,
)


def _sites(position: ContradictionPosition) -> str:
    count = len(position.clusters)
    return "one site" if count == 1 else f"{count} independent sites"


def _value_sides(candidate: ContradictionCandidate) -> str:
    """A value conflict's sides with how many independent sites state each, and the label of
    a value only one site states against several independent ones."""
    positions = candidate.positions
    text = " against ".join(f"“{p.value}” ({_sites(p)})" for p in positions)
    most = max(len(p.clusters) for p in positions)
    lone = [p for p in positions if len(p.clusters) == 1]
    if most >= 2 and lone:
        text += "; " + " and ".join(f"“{p.value}”" for p in lone)
        text += f" is stated by one site only, against {most} independent ones"
    return text


def is_value_conflict(candidate: ContradictionCandidate) -> bool:
    return all(position.clusters for position in candidate.positions)


def conflict_caveat(candidate: ContradictionCandidate, claim_id: str) -> Statement:
    """The executive summary's statement for a question whose values disagree: both sides,
    never one of them alone."""
    return Statement(
        claim_id=claim_id,
        kind="caveat",
        text=f"Sources disagree on this: {_value_sides(candidate)}. See the conflicting evidence.",
        evidence_ids=[p.evidence_ids[0] for p in candidate.positions],
        confidence="low",
    )


def report_contradictions(
    candidates: Sequence[ContradictionCandidate], known: set[str]
) -> list[ReportContradiction]:
    """Each of ``candidates`` as a reported contradiction citing only ``known`` evidence."""
    found = []
    for candidate in candidates:
        if is_value_conflict(candidate):
            found.append(
                ReportContradiction(
                    summary=f"Sources disagree: {_value_sides(candidate)}."[:2000],
                    evidence_ids=[eid for eid in candidate.evidence_ids if eid in known],
                    sides=_report_sides(candidate, known),
                )
            )
            continue
        sides = "; ".join(
            f"{position.value or position.stance} ({len(position.evidence_ids)} excerpt"
            f"{'s' if len(position.evidence_ids) != 1 else ''})"
            for position in candidate.positions
        )
        summary = f"Sources disagree on {candidate.claim_key}: {sides}."
        if candidate.scope_differences:
            summary += (
                " The excerpts differ in "
                + ", ".join(sorted(candidate.scope_differences))
                + ", which may explain the disagreement."
            )
        cited = [eid for eid in candidate.evidence_ids if eid in known]
        found.append(
            ReportContradiction(
                summary=summary[:2000],
                evidence_ids=cited,
                sides=_report_sides(candidate, known),
            )
        )
    return found


def _report_sides(
    candidate: ContradictionCandidate, known: set[str]
) -> list[ReportContradictionSide]:
    """Each position of a conflict as a side of the reported contradiction (its value, or its
    stance where it states none), with the evidence stating it."""
    return [
        ReportContradictionSide(
            value=(position.value or position.stance)[:300],
            evidence_ids=[eid for eid in position.evidence_ids if eid in known],
        )
        for position in candidate.positions
        if any(eid in known for eid in position.evidence_ids)
    ]
