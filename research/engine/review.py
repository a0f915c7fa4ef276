"""Before a report is published: hygiene, checks, the verifier, one repair round, the rules.

Statement text loses addresses, citation markers and markup of its own; every citation is
checked against the run's verified evidence and every finding against what its excerpts say
(:mod:`research.engine.citations`, :mod:`research.engine.support`); with a language model, a
verifier judges the findings too (:mod:`research.engine.verification`). What is wrong goes to
the synthesizer once, as a repair request naming each problem; whatever is still wrong
afterwards is fixed by the program: invalid ids are dropped, and findings that are not borne
out become labelled caveats.
"""

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from research.engine.citations import (
    CitationProblem,
    check_citations,
    checked_support,
    cited_excerpts,
    is_valid_citation,
    said_by,
)
from research.engine.contracts import (
    Evidence,
    Report,
    ReportContradiction,
    Statement,
    SupportCheck,
)
from research.engine.ports import ModelError
from research.engine.support import clean_statement
from research.engine.verification import Verdicts, Verify

UNSUPPORTED_LABEL = "Not supported by verified evidence:"
MISMATCH_LABEL = "Not borne out by its cited excerpts:"
UNVERIFIED_LABEL = "Not confirmed by the verifier against its cited excerpts:"
# Source classes that speak for the subject itself: one of them can carry a "high" finding.
_FIRST_HAND_CLASSES = frozenset({"official", "primary"})


@dataclass
class ValidatedReport:
    """A report whose every citation resolves to verified evidence of its run."""

    report: Report
    problems: list[CitationProblem] = field(default_factory=list)
    repaired: bool = False
    demoted_claim_ids: list[str] = field(default_factory=list)
    dropped_contradictions: int = 0
    # Findings kept as caveats because their excerpts do not bear them out (also in demoted).
    mismatched_claim_ids: list[str] = field(default_factory=list)
    # Findings kept as caveats because the verifier did not confirm them (also in demoted).
    unconfirmed_claim_ids: list[str] = field(default_factory=list)
    # Addresses, citation markers and markup removed from statement text.
    removed_from_text: int = 0
    # The verifier: how many calls it took and what was wrong with its answers (sentences).
    verifier_calls: int = 0
    verifier_notes: list[str] = field(default_factory=list)


Repair = Callable[[Report, Sequence[CitationProblem]], Report]


def finalize_report(
    report: Report,
    *,
    run_id: str,
    evidence: Mapping[str, Evidence],
    repair: Repair | None = None,
    verify: Verify | None = None,
    known_text: Sequence[str] = (),
    standing: Mapping[str, tuple[str, str]] | None = None,
) -> ValidatedReport:
    """Validate citations and support, allow one repair round, then enforce the rules.

    Statement text first loses addresses, citation markers and markup of its own (what the
    cited excerpts quote stays). Every finding is then checked against its cited excerpts
    (:mod:`research.engine.support`; ``known_text`` holds the plan's words, whose names need
    no excerpt). With ``verify`` (a language model is configured), the findings that pass those
    checks are judged by the verifier too, in one call. When problems are found and ``repair``
    is given, it is called once with the report and the problems (typically a synthesis call
    with ``SynthesisRequest.problems`` set); findings the repair changed are checked and judged
    again. A repair that fails with :class:`ModelError` leaves the original report, and a
    verifier that fails leaves its findings to the deterministic checks (the reason is in
    ``verifier_notes``). Whatever is still wrong afterwards is fixed by the program: invalid
    ids are dropped, findings left without evidence become caveats labelled "Not supported by
    verified evidence:", findings their excerpts do not bear out become caveats labelled "Not
    borne out by its cited excerpts:", findings the verifier did not find fully supported
    become caveats labelled "Not confirmed by the verifier against its cited excerpts:" (both
    keep their citations, so the mismatch can be audited), and contradictions left without
    evidence are dropped. ``standing`` maps source ids to (source class, independence
    cluster): a "high" finding needs an official or primary source or two clusters, otherwise
    it is "medium". ``problems`` reports what was found before any repair.
    """
    verdicts = Verdicts()
    report, removed = _clean_texts(report, run_id=run_id, evidence=evidence)
    problems = _problems(report, run_id, evidence, known_text, verify, verdicts)
    repaired = False
    if problems and repair is not None:
        try:
            candidate = repair(report, problems)
        except ModelError:
            candidate = None
        if candidate is not None:
            report, repaired = candidate, True
            # What is counted is what the published text lost.
            report, removed = _clean_texts(report, run_id=run_id, evidence=evidence)
            _problems(report, run_id, evidence, known_text, verify, verdicts)
    enforced = _enforce(
        report,
        run_id=run_id,
        evidence=evidence,
        known_text=known_text,
        standing=standing,
        verdicts=verdicts,
    )
    return ValidatedReport(
        report=enforced.report,
        problems=problems,
        repaired=repaired,
        demoted_claim_ids=enforced.demoted,
        dropped_contradictions=enforced.dropped,
        mismatched_claim_ids=enforced.mismatched,
        unconfirmed_claim_ids=enforced.unconfirmed,
        removed_from_text=removed,
        verifier_calls=verdicts.calls,
        verifier_notes=verdicts.notes,
    )


def _problems(
    report: Report,
    run_id: str,
    evidence: Mapping[str, Evidence],
    known_text: Sequence[str],
    verify: Verify | None,
    verdicts: Verdicts,
) -> list[CitationProblem]:
    """The citation and support problems of ``report``, then the verifier's, which judges
    only the findings that pass every deterministic check (the others are refused anyway)."""
    problems = check_citations(report, run_id=run_id, evidence=evidence, known_text=known_text)
    if verify is None:
        return problems
    flagged = {problem.claim_id for problem in problems}
    passing = [s for s in report.statements() if s.kind == "finding" and s.claim_id not in flagged]
    verdicts.judge(passing, verify, evidence=evidence, run_id=run_id)
    return problems + verdicts.problems(passing)


def _clean_texts(
    report: Report, *, run_id: str, evidence: Mapping[str, Evidence]
) -> tuple[Report, int]:
    removed = 0

    def clean(statement: Statement) -> Statement:
        nonlocal removed
        quoted = "\n".join(cited_excerpts(statement, evidence, run_id))
        text, count = clean_statement(statement.text, quoted)
        if not count:
            return statement
        removed += count
        return statement.model_copy(update={"text": text or "(no text left)"})

    cleaned = report.model_copy(
        update={
            "executive_summary": [clean(s) for s in report.executive_summary],
            "sections": [
                section.model_copy(update={"statements": [clean(s) for s in section.statements]})
                for section in report.sections
            ],
        },
        deep=True,
    )
    return cleaned, removed


@dataclass
class _Enforced:
    report: Report
    demoted: list[str]
    mismatched: list[str]
    unconfirmed: list[str]
    dropped: int


def _confidence(
    statement: Statement,
    cited: Sequence[str],
    evidence: Mapping[str, Evidence],
    standing: Mapping[str, tuple[str, str]] | None,
) -> str:
    """A supported finding keeps "high" only with a first-hand source or two independent ones."""
    if statement.confidence != "high" or standing is None:
        return statement.confidence
    known = [
        standing[evidence[eid].source_id] for eid in cited if evidence[eid].source_id in standing
    ]
    first_hand = any(source_class in _FIRST_HAND_CLASSES for source_class, _ in known)
    clusters = {cluster for _, cluster in known}
    return "high" if first_hand or len(clusters) >= 2 else "medium"


def _labelled(statement: Statement, label: str, **update: object) -> Statement:
    text = statement.text
    if not text.startswith(label):
        text = f"{label} {text}"
    return statement.model_copy(
        update={"kind": "caveat", "text": text[:4000], "confidence": "low", **update}
    )


def _enforce(
    report: Report,
    *,
    run_id: str,
    evidence: Mapping[str, Evidence],
    known_text: Sequence[str] = (),
    standing: Mapping[str, tuple[str, str]] | None = None,
    verdicts: Verdicts | None = None,
) -> _Enforced:
    demoted: list[str] = []
    mismatched: list[str] = []
    unconfirmed: list[str] = []

    def fix(statement: Statement) -> Statement:
        kept = [
            eid
            for eid in dict.fromkeys(statement.evidence_ids)
            if is_valid_citation(eid, evidence, run_id)
        ]
        if statement.kind == "finding" and not kept:
            demoted.append(statement.claim_id)
            return _labelled(statement, UNSUPPORTED_LABEL, evidence_ids=[], checks=[], verdict=None)
        if statement.kind != "finding":
            return statement.model_copy(
                update={"evidence_ids": kept, "checks": [], "verdict": None}
            )
        support = checked_support(
            statement.text, tuple(said_by(evidence[eid]) for eid in kept), tuple(known_text)
        )
        checks = [
            SupportCheck(name=c.name, passed=c.passed, detail=c.detail[:500])
            for c in support.checks
        ]
        verdict = verdicts.of(statement) if verdicts is not None else None
        if not support.supported:
            demoted.append(statement.claim_id)
            mismatched.append(statement.claim_id)
            return _labelled(
                statement, MISMATCH_LABEL, evidence_ids=kept, checks=checks, verdict=verdict
            )
        if verdict is not None and verdict.verdict != "supported":
            demoted.append(statement.claim_id)
            unconfirmed.append(statement.claim_id)
            return _labelled(
                statement, UNVERIFIED_LABEL, evidence_ids=kept, checks=checks, verdict=verdict
            )
        return statement.model_copy(
            update={
                "evidence_ids": kept,
                "checks": checks,
                "verdict": verdict,
                "confidence": _confidence(statement, kept, evidence, standing),
            }
        )

    contradictions: list[ReportContradiction] = []
    dropped = 0
    for contradiction in report.contradictions:
        kept = [
            eid
            for eid in dict.fromkeys(contradiction.evidence_ids)
            if is_valid_citation(eid, evidence, run_id)
        ]
        if kept:
            sides = [
                side.model_copy(update={"evidence_ids": valid})
                for side in contradiction.sides
                if (valid := [eid for eid in side.evidence_ids if eid in kept])
            ]
            contradictions.append(
                contradiction.model_copy(update={"evidence_ids": kept, "sides": sides})
            )
        else:
            dropped += 1
    final = report.model_copy(
        update={
            "executive_summary": [fix(s) for s in report.executive_summary],
            "sections": [
                section.model_copy(update={"statements": [fix(s) for s in section.statements]})
                for section in report.sections
            ],
            "contradictions": contradictions,
        },
        deep=True,
    )
    return _Enforced(
        Report.model_validate(final.model_dump()), demoted, mismatched, unconfirmed, dropped
    )
