"""Coverage of the plan questions, central contradictions and the finish gate."""

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field

from research.engine.contracts import (
    ContradictionCandidate,
    Evidence,
    QuestionCoverage,
    ResearchPlan,
    SourceRecord,
)
from research.engine.urls import hostname, registrable_domain

RELEVANT_BP = 5000
PRIMARY_CLASSES = frozenset({"primary", "official"})


def source_cluster(source: SourceRecord) -> str:
    """The independence cluster of a source, falling back to its registrable domain."""
    if source.quality.independence_cluster:
        return source.quality.independence_cluster
    if source.domain:
        return f"domain:{registrable_domain(source.domain)}"
    try:
        return f"domain:{registrable_domain(hostname(source.url))}"
    except ValueError:
        return f"source:{source.id}"


def is_relevant(evidence: Evidence) -> bool:
    """Evidence counts toward coverage when the extractor rated it at least half relevant."""
    return evidence.relevance_bp >= RELEVANT_BP


@dataclass
class _CoverageTally:
    count: int = 0
    sources: set[str] = field(default_factory=set)
    clusters: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    primary: bool = False


def compute_coverage(
    plan: ResearchPlan, evidence: Iterable[Evidence], sources: Mapping[str, SourceRecord]
) -> dict[str, QuestionCoverage]:
    """Per plan question: relevant verified evidence, its sources, clusters and classes."""
    tallies = {qid: _CoverageTally() for qid in plan.question_ids}
    for item in evidence:
        if not is_relevant(item):
            continue
        source = sources.get(item.source_id)
        for qid in item.question_ids:
            tally = tallies.get(qid)
            if tally is None:
                continue
            tally.count += 1
            if source is None:
                continue
            tally.sources.add(source.id)
            tally.clusters.add(source_cluster(source))
            tally.classes.add(source.quality.source_class)
            tally.primary = tally.primary or source.quality.source_class in PRIMARY_CLASSES
    return {
        qid: QuestionCoverage(
            question_id=qid,
            evidence_count=tally.count,
            source_ids=sorted(tally.sources),
            clusters=sorted(tally.clusters),
            source_classes=sorted(tally.classes),  # type: ignore[arg-type]
            has_primary=tally.primary,
        )
        for qid, tally in tallies.items()
    }


@dataclass(frozen=True)
class FinishGateResult:
    """Whether research may finish; ``unmet`` lists what is still missing, as sentences."""

    passed: bool
    unmet: tuple[str, ...] = ()


def central_contradictions(
    plan: ResearchPlan, contradictions: Iterable[ContradictionCandidate]
) -> list[ContradictionCandidate]:
    """Contradictions touching a required question (or any question when none is tagged)."""
    required = set(plan.required_question_ids)
    return [
        item
        for item in contradictions
        if not item.question_ids or required.intersection(item.question_ids)
    ]


def unmet_questions(
    plan: ResearchPlan, coverage: Mapping[str, QuestionCoverage]
) -> list[tuple[str, str]]:
    """The required questions the finish gate does not accept yet, in plan order, each with
    the sentence saying what it lacks (conditions 1 and 2 of the gate)."""
    unmet: list[tuple[str, str]] = []
    for qid in plan.required_question_ids:
        question = plan.question(qid)
        item = coverage.get(qid)
        if item is None or not item.covered:
            unmet.append((qid, f"Question {qid} has no verified evidence yet."))
        elif question is not None and question.requires_primary and not item.has_primary:
            unmet.append((qid, f"Question {qid} needs a primary or official source."))
        elif not item.has_primary and len(item.clusters) < 2:
            unmet.append(
                (
                    qid,
                    f"Question {qid} rests on one independent source; it needs a primary or "
                    "official source or a second independent one.",
                )
            )
    return unmet


def evaluate_finish_gate(
    plan: ResearchPlan,
    coverage: Mapping[str, QuestionCoverage],
    contradictions: Iterable[ContradictionCandidate] = (),
    *,
    followed_up: Collection[str] = (),
    resolved: Collection[str] = (),
) -> FinishGateResult:
    """Apply the finish gate.

    Every required question needs relevant verified evidence, backed by a primary or official
    source or by two independent clusters (a primary or official source when the question
    requires one). Every central contradiction must have been followed up once, and resolved
    too when the plan does not allow unresolved contradictions.
    """
    unmet = [sentence for _, sentence in unmet_questions(plan, coverage)]
    for contradiction in central_contradictions(plan, contradictions):
        if contradiction.key not in followed_up:
            unmet.append(
                f"The conflicting evidence about {contradiction.claim_key!r} has not been "
                "followed up yet."
            )
        elif (
            not plan.completion_criteria.unresolved_contradictions_allowed
            and contradiction.key not in resolved
        ):
            unmet.append(
                f"The conflicting evidence about {contradiction.claim_key!r} is not resolved."
            )
    return FinishGateResult(passed=not unmet, unmet=tuple(unmet))
