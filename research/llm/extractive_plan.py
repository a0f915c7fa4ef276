"""The extractive backend's planner: sub-questions from the wording of the objective.

:func:`extractive_plan` decomposes the question (:mod:`research.llm.decompose`) into plan
questions and a scope; a refinement adds questions to the previous plan and keeps the ids of
the existing ones. Deterministic; no model.
"""

from research.engine.contracts import (
    CompletionCriteria,
    PlanQuestion,
    PlanRequest,
    PlanScope,
    ResearchPlan,
    Timeframe,
)
from research.engine.text import content_terms
from research.llm.decompose import Decomposition, SubQuestion, decompose
from research.llm.wording import clip

QUESTION_LIMITS = {"quick": 4, "standard": 6, "thorough": 8}
_FIGURE_QUESTIONS = (
    "how many",
    "how much",
    "how large",
    "how big",
    "number of",
    "share of",
    "rate of",
)

ASSUMPTION = (
    "No language model is configured: the sub-questions follow the wording of the question, and "
    "the report will quote sources verbatim rather than summarise them."
)


def _plan_question(qid: str, sub: SubQuestion) -> PlanQuestion:
    wants_figures = any(marker in sub.text.casefold() for marker in _FIGURE_QUESTIONS)
    return PlanQuestion(
        id=qid,
        text=clip(sub.text, 1000),
        priority="required" if sub.priority == "required" else "supporting",
        rationale=clip(sub.rationale, 500),
        # Figures are best taken from whoever publishes them; a preference, not a requirement,
        # because source classes come from heuristics the planner cannot check.
        preferred_source_classes=["official", "primary"] if wants_figures else [],
    )


def _scope(decomposition: Decomposition) -> PlanScope:
    timeframe = None
    if decomposition.timeframe is not None:
        timeframe = Timeframe(start=decomposition.timeframe[0], end=decomposition.timeframe[1])
    return PlanScope(
        included_topics=[clip(topic, 500) for topic in decomposition.topics[:10]],
        timeframe=timeframe,
        geographies=[clip(place, 500) for place in decomposition.geographies[:10]],
    )


def _fallback_question(objective: str) -> SubQuestion:
    text = clip(objective, 999).rstrip("?")
    return SubQuestion(
        f"{text}?" if text else "What does the available evidence say?", "The question as asked."
    )


def extractive_plan(request: PlanRequest) -> ResearchPlan:
    """A plan from the wording of the objective; a refinement adds questions to the previous
    plan and keeps the ids of the existing ones."""
    limit = QUESTION_LIMITS.get(request.depth, 6)
    previous = request.previous_plan
    if previous is not None and not (request.refinement or "").strip():
        return previous
    if previous is not None:
        added = decompose(request.refinement or "", limit=limit).questions
        existing = {frozenset(content_terms(q.text)) for q in previous.questions}
        numbers = [int(q.id[1:]) for q in previous.questions if q.id[1:].isdigit()]
        next_number = max(numbers, default=len(previous.questions)) + 1
        questions = list(previous.questions)
        for sub in added:
            if frozenset(content_terms(sub.text)) in existing or len(questions) >= 30:
                continue
            questions.append(_plan_question(f"q{next_number}", sub))
            next_number += 1
        required = [q.id for q in questions if q.priority == "required"]
        return previous.model_copy(
            update={
                "questions": questions,
                "completion_criteria": CompletionCriteria(
                    required_question_ids=required,
                    unresolved_contradictions_allowed=(
                        previous.completion_criteria.unresolved_contradictions_allowed
                    ),
                ),
            }
        )
    decomposition = decompose(request.objective, limit=limit)
    subs = decomposition.questions or [_fallback_question(request.objective)]
    questions = [_plan_question(f"q{number}", sub) for number, sub in enumerate(subs, start=1)]
    assumptions = [ASSUMPTION] + [
        clip(f"Constraint given with the question: {constraint}", 500)
        for constraint in request.constraints
        if constraint.strip()
    ]
    return ResearchPlan(
        objective=request.objective,
        assumptions=assumptions,
        scope=_scope(decomposition),
        questions=questions,
        completion_criteria=CompletionCriteria(
            required_question_ids=[q.id for q in questions if q.priority == "required"]
        ),
    )
