"""Before planning, in the composer: clarifying questions from the model, or hints about gaps.

With a model configured, "Draft the research plan" first asks the planner's model whether the
request leaves something open (research/llm/clarify.py); up to three questions are shown, and
the person answers them or skips. A failing call never stops anyone: the plan is drafted
without questions. Without a model, the composer shows the gaps ``question_gaps`` recognises
as optional hints while the question is typed. Nothing here ever blocks planning.
"""

from __future__ import annotations

import logging

from django.http import QueryDict

from research.engine.ports import ModelError
from research.llm.clarify import (
    MAX_CLARIFYING_QUESTIONS,
    Gap,
    clarifying_prompt,
    question_gaps,
)
from research.worker.actors import configured_model_client

logger = logging.getLogger(__name__)


def clarify_available() -> bool:
    """Whether the configured model can be asked for clarifying questions."""
    try:
        return hasattr(configured_model_client(), "clarify")
    except Exception:  # a broken model configuration is reported where research runs
        return False


def clarifying_questions(question: str) -> list[str]:
    """The model's clarifying questions about ``question``; none when there is no model or
    the call fails (planning goes on without them)."""
    try:
        client = configured_model_client()
    except Exception:
        return []
    clarify = getattr(client, "clarify", None)
    if clarify is None:
        return []
    try:
        result = clarify(clarifying_prompt(question))
    except ModelError as error:
        logger.info("No clarifying questions: %s", error.reason)
        return []
    return [item.question for item in result.value.questions][:MAX_CLARIFYING_QUESTIONS]


def clarifications_from(data: QueryDict) -> list[dict[str, str]]:
    """The answered clarifying questions of a composer submission; none when skipped."""
    if data.get("action") == "skip":
        return []
    # research.services.run_create trims, bounds and drops unanswered ones.
    return [
        {
            "question": data.get(f"clarify_question_{number}", ""),
            "answer": data.get(f"clarify_answer_{number}", ""),
        }
        for number in range(MAX_CLARIFYING_QUESTIONS)
    ]


def gap_hints(question: str) -> list[Gap]:
    return question_gaps(question) if question.strip() else []
