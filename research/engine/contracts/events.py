"""Progress events."""

from typing import Annotated, Literal

from pydantic import Field

from research.engine.contracts.base import Contract, NonEmptyStr, SourceStatus
from research.engine.contracts.records import StepKind
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
