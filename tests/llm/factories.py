"""Small builders of engine contracts for the model-layer tests."""

import hashlib

from research.engine.contracts import (
    CandidateSummary,
    Evidence,
    EvidenceSummary,
    ExtractionRequest,
    PlanQuestion,
    PlanRequest,
    QuestionCoverage,
    ResearchBrief,
    ResearchPlan,
    SourceSummary,
    SynthesisRequest,
    TextLocator,
    Usage,
)
from research.engine.guards import budget_for


def make_plan(
    *questions: str, objective: str = "How do heat pumps compare with gas boilers?"
) -> ResearchPlan:
    texts = questions or ("What do heat pumps cost to run?", "What do gas boilers cost to run?")
    return ResearchPlan(
        objective=objective,
        questions=[PlanQuestion(id=f"q{n}", text=text) for n, text in enumerate(texts, start=1)],
    )


def plan_request(objective: str, *, depth: str = "standard", **extra: object) -> PlanRequest:
    return PlanRequest(objective=objective, depth=depth, budget=budget_for(depth), **extra)


def make_brief(
    plan: ResearchPlan | None = None,
    *,
    candidates: list[CandidateSummary] | None = None,
    coverage: list[QuestionCoverage] | None = None,
    evidence: list[EvidenceSummary] | None = None,
    recent_queries: list[str] | None = None,
    remaining: Usage | None = None,
    iteration: int = 0,
) -> ResearchBrief:
    return ResearchBrief(
        plan=plan or make_plan(),
        iteration=iteration,
        coverage=coverage or [],
        evidence=evidence or [],
        candidates=candidates or [],
        recent_queries=recent_queries or [],
        remaining=remaining
        or Usage(iterations=10, searches=10, fetched_sources=10, model_calls=30),
    )


def candidate(
    source_id: str,
    title: str,
    *,
    domain: str = "example.org",
    snippet: str = "",
    status: str = "candidate",
    search_ranks: list[int] | None = None,
) -> CandidateSummary:
    return CandidateSummary(
        source_id=source_id,
        status=status,
        title=title,
        domain=domain,
        snippet=snippet,  # type: ignore[arg-type]
        search_ranks=search_ranks or [],
    )


def extraction_request(
    text: str, *questions: str, title: str = "", max_items: int = 12, source_id: str = "src-1"
) -> ExtractionRequest:
    return ExtractionRequest(
        source_id=source_id,
        title=title,
        kind="text",
        text=text,
        questions=[PlanQuestion(id=f"q{n}", text=q) for n, q in enumerate(questions, start=1)],
        max_items=max_items,
    )


def make_evidence(
    evidence_id: str,
    excerpt: str,
    *question_ids: str,
    source_id: str = "s1",
    relevance: float = 0.8,
    heading: str | None = None,
) -> Evidence:
    return Evidence(
        id=evidence_id,
        run_id="run-1",
        source_id=source_id,
        excerpt=excerpt,
        locator=TextLocator(
            kind="text", start=0, end=len(excerpt), heading=heading, snapshot_hash="0" * 64
        ),
        question_ids=list(question_ids),
        stance="supports",
        relevance_bp=round(relevance * 10_000),
        confidence_bp=7000,
        evidence_hash=hashlib.sha256(f"{source_id}{excerpt}".encode()).hexdigest(),
    )


def synthesis_request(
    plan: ResearchPlan, evidence: list[Evidence], **extra: object
) -> SynthesisRequest:
    source_ids = sorted({item.source_id for item in evidence})
    sources = [
        SourceSummary(id=sid, title=f"Source {sid}", url=f"https://{sid}.example.org/page")
        for sid in source_ids
    ]
    return SynthesisRequest(plan=plan, evidence=evidence, sources=sources, **extra)
