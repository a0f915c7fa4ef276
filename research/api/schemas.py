"""Request and response bodies of the API. Plans, source policies and reports are the
engine's own pydantic contracts, so the API validates exactly what the engine accepts."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal
from uuid import UUID

from ninja import Schema
from pydantic import Field, StringConstraints

from research.engine.contracts import Report, ResearchPlan, SourcePolicy
from research.report_templates import REPORT_TEMPLATES
from research.services import CLIENT_REQUEST_ID_MAX_CHARS, INSTRUCTION_MAX_CHARS, QUESTION_MAX_CHARS

Depth = Literal["quick", "standard", "thorough"]
Visibility = Literal["private", "team", "link"]
# "" (no template) or one of research.report_templates.REPORT_TEMPLATES.
ReportTemplateKey = Literal[("", *REPORT_TEMPLATES)]  # type: ignore[valid-type]
Text = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]


class RunCreateIn(Schema):
    question: Annotated[Text, StringConstraints(max_length=QUESTION_MAX_CHARS)]
    depth: Depth = "standard"
    source_policy: SourcePolicy | None = None
    report_template: ReportTemplateKey = ""
    team: Annotated[str, StringConstraints(min_length=1, max_length=110)] | None = Field(
        None, description="Slug of a team to research for (you must be its owner or editor)."
    )
    visibility: Visibility | None = Field(
        None, description="Who may see the run; default “team” with a team, else “private”."
    )
    auto_approve: bool = Field(
        False, description="Start research as soon as the plan is drafted, without review."
    )
    client_request_id: (
        Annotated[str, StringConstraints(min_length=1, max_length=CLIENT_REQUEST_ID_MAX_CHARS)]
        | None
    ) = Field(None, description="Sending the same id again returns the same run.")


class OutcomeOut(Schema):
    key: str
    label: str
    sentence: str
    detail: str


class RunOut(Schema):
    id: UUID
    question: str
    title: str
    status: str
    outcome: OutcomeOut
    depth: str
    visibility: str
    team: str | None
    owner: str
    report_template: str
    auto_approve: bool
    plan_version: int
    pause_requested: bool
    cancel_requested: bool
    parent_run_id: UUID | None
    queue_position: int | None
    controls: list[str] = Field(description="Actions this caller may take now.")
    usage: dict[str, Any]
    budget: dict[str, Any]
    source_policy: dict[str, Any]
    share_url: str | None
    links: dict[str, str]
    created_at: datetime
    updated_at: datetime
    approved_at: datetime | None
    completed_at: datetime | None


class Page(Schema):
    count: int
    limit: int
    offset: int
    next_offset: int | None


class RunPage(Page):
    items: list[RunOut]


class PlanOut(Schema):
    run_id: UUID
    status: str
    version: int
    editable: bool = Field(description="Whether the plan awaits approval and you may edit it.")
    plan: ResearchPlan | None
    source_policy: dict[str, Any]


class PlanIn(Schema):
    expected_version: int = Field(ge=0, description="The plan version your edit is based on.")
    plan: ResearchPlan
    source_policy: SourcePolicy | None = None


class ApproveIn(Schema):
    version: int = Field(ge=0, description="The plan version you reviewed.")


class RefineIn(Schema):
    instruction: Annotated[Text, StringConstraints(max_length=INSTRUCTION_MAX_CHARS)]


class BudgetIn(Schema):
    factor: float = Field(1.5, gt=1, le=4, description="Grow every hard limit by this factor.")


class StepOut(Schema):
    id: UUID
    kind: str
    status: str
    iteration: int
    attempt: int
    summary: str
    error: str
    question_ids: list[Any]
    created_at: datetime
    started_at: datetime | None
    completed_at: datetime | None


class StepPage(Page):
    items: list[StepOut]


class SourceOut(Schema):
    id: UUID
    url: str
    canonical_url: str
    title: str
    publisher: str
    domain: str
    author: str
    published_at: str
    kind: str
    status: str
    source_class: str
    quality: dict[str, Any] | None
    retrieved_at: datetime | None
    mime_type: str
    content_bytes: int
    truncated: bool
    duplicate_of_id: UUID | None
    last_error: str
    evidence_count: int


class SourcePage(Page):
    items: list[SourceOut]


class SourceRef(Schema):
    id: UUID
    url: str
    title: str
    publisher: str
    published_at: str
    source_class: str


class EvidenceOut(Schema):
    id: str
    source: SourceRef
    excerpt: str = Field(description="The exact text of the stored source.")
    locator: dict[str, Any]
    locator_text: str
    stance: str
    claim_key: str
    normalized_value: str
    question_ids: list[Any]
    relevance: float
    confidence: float
    out_of_scope: bool
    evidence_hash: str


class EvidencePage(Page):
    items: list[EvidenceOut]


class CitationOut(Schema):
    number: int
    evidence_ids: list[str] = Field(description="Every cited evidence id with this number.")
    excerpt: str
    locator: str
    source: SourceRef
    link: str | None = Field(description="The source's address, when it is a safe http(s) URL.")
    evidence_url: str


class ReportOut(Schema):
    run_id: UUID
    status: str
    partial: bool
    report: Report
    citations: list[CitationOut]
    citation_numbers: dict[str, int] = Field(description="Evidence id → citation number.")
    missing_sections: list[str]
    links: dict[str, str]
