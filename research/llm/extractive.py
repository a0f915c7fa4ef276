"""The extractive backend: the whole research method without a language model.

It is the default when no model is configured, so the product works with no key. The planner
decomposes the question by its wording (:mod:`research.llm.extractive_plan`); the decider
searches for each question still lacking evidence and reads the best unread search results by
relevance and rank, preferring sites not yet used for a question
(:mod:`research.llm.extractive_decide`); the extractor quotes the most relevant, mutually
different passages of a snapshot verbatim (:mod:`research.llm.selection`); the synthesizer
groups the quotations by question and states the gaps (:mod:`research.engine.quoted_report`).
Every call is deterministic and counts as one model call with zero tokens.
"""

from research.engine.contracts import (
    EvidenceCandidate,
    ExtractionRequest,
    ExtractionResult,
    PlanRequest,
    Report,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SynthesisRequest,
    Usage,
)
from research.engine.ports import ModelResult
from research.engine.question_terms import SUPPORTS_RELEVANCE
from research.engine.quoted_report import write_extractive_report
from research.llm.extractive_decide import extractive_decision
from research.llm.extractive_plan import extractive_plan
from research.llm.selection import QuestionText, select_passages


def _usage() -> Usage:
    return Usage(model_calls=1)


# --------------------------------------------------------------------------------------------
# Extracting
# --------------------------------------------------------------------------------------------


def extractive_evidence(request: ExtractionRequest) -> ExtractionResult:
    """Verbatim passages of the snapshot that answer the questions, most relevant first."""
    passages = select_passages(
        request.text,
        [QuestionText(q.id, q.text) for q in request.questions],
        title=request.title,
        max_items=request.max_items,
        blocks=request.blocks,
    )
    evidence = [
        EvidenceCandidate(
            excerpt=request.text[passage.start : passage.end],
            question_ids=list(passage.question_ids),
            stance="supports" if passage.relevance >= SUPPORTS_RELEVANCE else "context",
            relevance=passage.relevance,
            confidence=passage.confidence,
        )
        for passage in passages
    ]
    return ExtractionResult(evidence=evidence)


# --------------------------------------------------------------------------------------------
# The client
# --------------------------------------------------------------------------------------------


class ExtractiveModelClient:
    """:class:`~research.engine.ports.ModelClient` that needs no model: deterministic,
    offline, and honest about it (its reports say ``mode="extractive"``)."""

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        """Decompose the objective into sub-questions by its wording."""
        return ModelResult(extractive_plan(request), _usage())

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        """Search for uncovered questions and read the best unread results."""
        return ModelResult(extractive_decision(brief), _usage())

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        """Quote the most relevant, mutually different passages of the snapshot."""
        return ModelResult(extractive_evidence(request), _usage())

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        """Group the quotations by question and state the gaps."""
        return ModelResult(write_extractive_report(request), _usage())
