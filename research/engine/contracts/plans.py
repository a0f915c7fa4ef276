"""The research plan, the budget and usage."""

import calendar
import re
from datetime import date
from decimal import Decimal
from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from research.engine.contracts.base import Contract, Identifier, SourceClass, _Part

# --------------------------------------------------------------------------------------------
# Plan
# --------------------------------------------------------------------------------------------


# Limits of a plan, enforced wherever a plan is validated (the planner's output, the plan
# editor, any service that saves one) and listed in docs/ui.md. A plan is read and approved by
# a person and sent with every planning and decision prompt, so each part is bounded: enough
# for a thorough plan, too little for a pasted document to swell every later model call.
PLAN_OBJECTIVE_MAX_CHARS = 4000
PLAN_QUESTIONS_MAX = 30
PLAN_QUESTION_MAX_CHARS = 1000
PLAN_LIST_MAX_ITEMS = 20  # assumptions, topics, exclusions, geographies, report sections
PLAN_ITEM_MAX_CHARS = 500  # one entry of those lists, and the audience
PLAN_NOTE_MAX_CHARS = 1000  # a question's rationale, the decision the report supports

PlanItem = Annotated[str, Field(min_length=1, max_length=PLAN_ITEM_MAX_CHARS)]
PlanList = Annotated[list[PlanItem], Field(max_length=PLAN_LIST_MAX_ITEMS)]
_PARTIAL_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")


def partial_date_bounds(value: str) -> tuple[date, date]:
    """The first and last day a year (``2024``), a month (``2024-03``) or a date
    (``2024-03-15``) covers. Raises ``ValueError`` with a sentence for anything else,
    including dates that do not exist (``2024-13-45``, ``2023-02-29``)."""
    match = _PARTIAL_DATE.match(value.strip())
    if match is None:
        raise ValueError(
            f"“{value}” is not a year (2024), a month (2024-03) or a date (2024-03-15)"
        )
    year, month, day = (int(part) if part else None for part in match.groups())
    try:
        if month is None:
            return date(year, 1, 1), date(year, 12, 31)
        if day is None:
            last = calendar.monthrange(year, month)[1]
            return date(year, month, 1), date(year, month, last)
        return date(year, month, day), date(year, month, day)
    except ValueError:
        raise ValueError(f"“{value}” is not a real date; check the month and the day") from None


class Timeframe(_Part):
    """The period the research is about: a year, a month or a date at either end, either end
    open; the start may not come after the end."""

    start: str | None = None
    end: str | None = None

    @field_validator("start", "end")
    @classmethod
    def _real_date(cls, value: str | None) -> str | None:
        if value is None or not value.strip():
            return None
        partial_date_bounds(value)
        return value.strip()

    @model_validator(mode="after")
    def _ordered(self) -> "Timeframe":
        if (
            self.start
            and self.end
            and partial_date_bounds(self.start)[0] > partial_date_bounds(self.end)[1]
        ):
            raise ValueError(f"the timeframe ends ({self.end}) before it starts ({self.start})")
        return self


class PlanScope(_Part):
    included_topics: PlanList = Field(default_factory=list)
    excluded_topics: PlanList = Field(default_factory=list)
    timeframe: Timeframe | None = None
    geographies: PlanList = Field(default_factory=list)


class PlanQuestion(_Part):
    """A sub-question of the plan; required ones must be covered before finishing."""

    id: Identifier
    text: Annotated[str, Field(min_length=1, max_length=PLAN_QUESTION_MAX_CHARS)]
    priority: Literal["required", "supporting"] = "required"
    rationale: Annotated[str, Field(max_length=PLAN_NOTE_MAX_CHARS)] = ""
    preferred_source_classes: list[SourceClass] = Field(default_factory=list)
    requires_primary: bool = False


class Deliverable(_Part):
    format: Literal["report"] = "report"
    requested_sections: PlanList = Field(default_factory=list)
    decision_or_outcome: Annotated[str, Field(max_length=PLAN_NOTE_MAX_CHARS)] | None = None


class CompletionCriteria(_Part):
    required_question_ids: list[Identifier] = Field(default_factory=list)
    unresolved_contradictions_allowed: bool = True


class ResearchPlan(Contract):
    """A reviewed, versioned research plan (the planner's output, editable by the user)."""

    objective: Annotated[str, Field(min_length=1, max_length=PLAN_OBJECTIVE_MAX_CHARS)]
    audience: Annotated[str, Field(max_length=PLAN_ITEM_MAX_CHARS)] | None = None
    assumptions: PlanList = Field(default_factory=list)
    scope: PlanScope = Field(default_factory=PlanScope)
    questions: Annotated[list[PlanQuestion], Field(min_length=1, max_length=PLAN_QUESTIONS_MAX)]
    deliverable: Deliverable = Field(default_factory=Deliverable)
    completion_criteria: CompletionCriteria = Field(default_factory=CompletionCriteria)

    @model_validator(mode="after")
    def _consistent_ids(self) -> "ResearchPlan":
        ids = [question.id for question in self.questions]
        duplicates = sorted({qid for qid in ids if ids.count(qid) > 1})
        if duplicates:
            raise ValueError(f"questions has duplicate ids: {', '.join(duplicates)}")
        unknown = [qid for qid in self.completion_criteria.required_question_ids if qid not in ids]
        if unknown:
            raise ValueError(
                "completion_criteria.required_question_ids names unknown questions: "
                + ", ".join(unknown)
            )
        return self

    @property
    def question_ids(self) -> list[str]:
        """All question ids in plan order."""
        return [question.id for question in self.questions]

    @property
    def required_question_ids(self) -> list[str]:
        """Questions marked required plus any the completion criteria name, in plan order."""
        named = set(self.completion_criteria.required_question_ids)
        return [q.id for q in self.questions if q.priority == "required" or q.id in named]

    def question(self, question_id: str) -> PlanQuestion | None:
        """The question with ``question_id``, or ``None``."""
        return next((q for q in self.questions if q.id == question_id), None)


# --------------------------------------------------------------------------------------------
# Budget and usage
# --------------------------------------------------------------------------------------------


class Budget(Contract):
    """Hard limits of one run, plus the allowance set aside for synthesis."""

    iterations: int = Field(ge=1)
    searches: int = Field(ge=0)
    fetched_sources: int = Field(ge=0)
    model_calls: int = Field(ge=1)
    elapsed_seconds: int = Field(ge=1)
    bytes_per_source: int = Field(ge=1)
    bytes_per_run: int = Field(ge=1)
    input_tokens: int = Field(ge=1)
    output_tokens: int = Field(ge=1)
    # Research may not spend these: they pay for synthesis and its one citation repair round.
    synthesis_model_calls: int = Field(default=2, ge=0)
    synthesis_input_tokens: int = Field(default=0, ge=0)
    synthesis_output_tokens: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _reserve_fits(self) -> "Budget":
        if self.synthesis_model_calls > self.model_calls:
            raise ValueError("synthesis_model_calls cannot exceed model_calls")
        if self.synthesis_input_tokens > self.input_tokens:
            raise ValueError("synthesis_input_tokens cannot exceed input_tokens")
        if self.synthesis_output_tokens > self.output_tokens:
            raise ValueError("synthesis_output_tokens cannot exceed output_tokens")
        if self.bytes_per_source > self.bytes_per_run:
            raise ValueError("bytes_per_source cannot exceed bytes_per_run")
        return self


class Usage(Contract):
    """What a run (or one action) actually consumed. ``bytes_fetched`` counts against
    ``Budget.bytes_per_run``; ``Budget.bytes_per_source`` caps each acquisition instead."""

    iterations: int = Field(default=0, ge=0)
    searches: int = Field(default=0, ge=0)
    fetched_sources: int = Field(default=0, ge=0)
    model_calls: int = Field(default=0, ge=0)
    elapsed_seconds: float = Field(default=0.0, ge=0)
    bytes_fetched: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cached_tokens: int = Field(default=0, ge=0)
    cost: Decimal = Field(default=Decimal(0), ge=0)
    # Attempts beyond the first of a step (after a crash or an interruption). Retries are
    # telemetry: a logical action counts once against the search and fetch limits.
    retries: int = Field(default=0, ge=0)

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(
            iterations=self.iterations + other.iterations,
            searches=self.searches + other.searches,
            fetched_sources=self.fetched_sources + other.fetched_sources,
            model_calls=self.model_calls + other.model_calls,
            elapsed_seconds=self.elapsed_seconds + other.elapsed_seconds,
            bytes_fetched=self.bytes_fetched + other.bytes_fetched,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_tokens=self.cached_tokens + other.cached_tokens,
            cost=self.cost + other.cost,
            retries=self.retries + other.retries,
        )
