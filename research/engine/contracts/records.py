"""Working state (the loop checkpoint) and the run and step records the store hands the engine."""

from typing import Annotated, Any, Literal

from pydantic import Field

from research.engine.contracts.base import (
    Contract,
    Identifier,
    NonEmptyStr,
    ShortText,
    SourceClass,
    _Part,
)
from research.engine.contracts.plans import Budget, ResearchPlan, Usage
from research.engine.contracts.sources import SourcePolicy
from research.engine.states import RunStatus

# --------------------------------------------------------------------------------------------
# Working state (the loop's checkpoint)
# --------------------------------------------------------------------------------------------


class QuestionCoverage(_Part):
    """How well one plan question is supported by verified, relevant evidence."""

    question_id: Identifier
    evidence_count: int = Field(default=0, ge=0)
    source_ids: list[str] = Field(default_factory=list)
    clusters: list[str] = Field(default_factory=list)
    source_classes: list[SourceClass] = Field(default_factory=list)
    has_primary: bool = False

    @property
    def covered(self) -> bool:
        return self.evidence_count > 0


class SynthesisReserve(_Part):
    """Model calls and tokens held back from research so synthesis can always run."""

    model_calls: int = Field(default=0, ge=0)
    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)


class WorkingState(Contract):
    """What the research loop checkpoints after every committed step."""

    iteration: int = Field(default=0, ge=0)
    zero_gain_streak: int = Field(default=0, ge=0)
    duplicate_proposal_streak: int = Field(default=0, ge=0)
    systemic_failure_streak: int = Field(default=0, ge=0)
    query_fingerprints: list[str] = Field(default_factory=list)
    settled_action_keys: list[str] = Field(default_factory=list)
    coverage: dict[str, QuestionCoverage] = Field(default_factory=dict)
    source_classes_seen: list[SourceClass] = Field(default_factory=list)
    followed_up_contradictions: list[str] = Field(default_factory=list)
    resolved_contradictions: list[str] = Field(default_factory=list)
    synthesis_reserve: SynthesisReserve = Field(default_factory=SynthesisReserve)
    # Why research stopped (a StopReason value) and, for a budget stop, the usage counter
    # that ran out ("iterations", "searches", …).
    stop_reason: str | None = None
    stop_limit: str | None = None
    # The texts of the latest searches (newest last), shown to the decision model.
    recent_queries: list[str] = Field(default_factory=list)
    # Evidence already credited to an iteration's information gain.
    counted_evidence_ids: list[str] = Field(default_factory=list)
    # Why the program refused actions of the latest decision, for the next brief.
    recent_refusals: list[str] = Field(default_factory=list)
    information_gain: int = Field(default=0, ge=0)
    rejected_excerpts: int = Field(default=0, ge=0)
    invalid_decisions: int = Field(default=0, ge=0)


# --------------------------------------------------------------------------------------------
# Run and step records (what the store hands the engine)
# --------------------------------------------------------------------------------------------


class RunControls(_Part):
    """Durable user requests the loop checks at every safe boundary."""

    pause_requested: bool = False
    cancel_requested: bool = False


class RunSnapshot(Contract):
    """Everything the engine needs to continue a run, loaded in one read."""

    id: NonEmptyStr
    status: RunStatus
    plan_version: int = Field(ge=0)
    plan: ResearchPlan | None = None
    objective: str = ""
    depth: Literal["quick", "standard", "thorough"] = "standard"
    policy: SourcePolicy = Field(default_factory=SourcePolicy)
    budget: Budget
    usage: Usage = Field(default_factory=Usage)
    state: WorkingState = Field(default_factory=WorkingState)
    controls: RunControls = Field(default_factory=RunControls)
    resume_phase: RunStatus | None = None
    # Sections the run's report template requires; the plan's deliverable always lists them.
    requested_sections: list[ShortText] = Field(default_factory=list)
    # What the person answered to clarifying questions before planning, one line each.
    clarifications: list[Annotated[str, Field(max_length=1000)]] = Field(default_factory=list)


StepStatus = Literal["pending", "running", "succeeded", "failed", "skipped", "cancelled"]
StepKind = Literal["plan", "decide", "search", "read", "extract", "synthesize"]


class StepRecord(Contract):
    """A durable step; ``dedupe_key`` makes creating the same logical action twice a no-op.

    ``attempt`` counts how often the step was started (1 on its first run); ``usage`` is
    what its finished attempt consumed, so a resumed run can account for a step that
    finished just before a crash; ``output`` holds the figures of its outcome (a search's
    result and drop counts).
    """

    id: NonEmptyStr
    run_id: NonEmptyStr
    kind: StepKind
    dedupe_key: NonEmptyStr
    status: StepStatus = "pending"
    iteration: int = Field(default=0, ge=0)
    attempt: int = Field(default=0, ge=0)
    rationale: str = ""
    payload: dict[str, Any] = Field(default_factory=dict)
    summary: str = ""
    error: str = ""
    usage: Usage = Field(default_factory=Usage)
    output: dict[str, Any] = Field(default_factory=dict)
