"""Progress events."""

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, TypeAdapter

from research.engine.contracts.base import Contract, NonEmptyStr, SourceStatus
from research.engine.contracts.evidence import Locator, PdfLocator, TextLocator
from research.engine.contracts.records import StepKind
from research.engine.contracts.requests import (
    FinishAction,
    ReadAction,
    ResearchAction,
    SearchAction,
)
from research.engine.states import RunStatus

# --------------------------------------------------------------------------------------------
# Progress events
# --------------------------------------------------------------------------------------------

ProgressPhase = Literal[
    "planning",
    "plan_ready",
    "queued",
    "searching",
    "reviewing_sources",
    "reading_source",
    "extracting_evidence",
    "comparing_evidence",
    "synthesizing",
    "paused",
    "completed",
    "cancelled",
    "failed",
    "budget_exhausted",
]


class _Event(Contract):
    run_id: NonEmptyStr
    message: Annotated[str, Field(max_length=500)] = ""


class PhaseChanged(_Event):
    type: Literal["phase_changed"] = "phase_changed"
    phase: ProgressPhase
    status: RunStatus


class StepStarted(_Event):
    type: Literal["step_started"] = "step_started"
    step_id: NonEmptyStr
    kind: StepKind


class StepFinished(_Event):
    type: Literal["step_finished"] = "step_finished"
    step_id: NonEmptyStr
    kind: StepKind
    outcome: Literal["succeeded", "rejected", "failed", "skipped", "cancelled"]


class SourceUpdated(_Event):
    type: Literal["source_updated"] = "source_updated"
    source_id: NonEmptyStr
    status: SourceStatus
    title: str = ""
    domain: str = ""


class CountsUpdated(_Event):
    type: Literal["counts_updated"] = "counts_updated"
    searches: int = Field(ge=0)
    fetched_sources: int = Field(ge=0)
    evidence_items: int = Field(ge=0)
    covered_questions: int = Field(ge=0)
    total_questions: int = Field(default=0, ge=0)


class PlanReady(_Event):
    type: Literal["plan_ready"] = "plan_ready"
    plan_version: int = Field(ge=1)


class ReportReady(_Event):
    type: Literal["report_ready"] = "report_ready"
    terminal_status: Literal["completed", "budget_exhausted"]


ProgressEvent = Annotated[
    PhaseChanged
    | StepStarted
    | StepFinished
    | SourceUpdated
    | CountsUpdated
    | PlanReady
    | ReportReady,
    Field(discriminator="type"),
]

_PROGRESS_EVENT: TypeAdapter[Any] = TypeAdapter(ProgressEvent)
_ACTION: TypeAdapter[Any] = TypeAdapter(ResearchAction)
_LOCATOR: TypeAdapter[Any] = TypeAdapter(Locator)


def parse_progress_event(data: dict[str, Any] | str | bytes) -> BaseModel:
    """Validate a progress event from a dict or JSON text; raises ``ValidationError``."""
    if isinstance(data, str | bytes):
        return _PROGRESS_EVENT.validate_json(data)
    return _PROGRESS_EVENT.validate_python(data)


def parse_action(data: dict[str, Any] | str | bytes) -> SearchAction | ReadAction | FinishAction:
    """Validate one research action from a dict or JSON text; raises ``ValidationError``."""
    if isinstance(data, str | bytes):
        return _ACTION.validate_json(data)
    return _ACTION.validate_python(data)


def parse_locator(data: dict[str, Any] | str | bytes) -> TextLocator | PdfLocator:
    """Validate a stored locator from a dict or JSON text; raises ``ValidationError``."""
    if isinstance(data, str | bytes):
        return _LOCATOR.validate_json(data)
    return _LOCATOR.validate_python(data)
