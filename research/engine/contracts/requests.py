"""The decision model actions and the model requests (what each model call is given)."""

from typing import Annotated, Literal

from pydantic import Field

from research.engine.contracts.base import (
    Contract,
    Identifier,
    NonEmptyStr,
    ShortText,
    SourceClass,
    SourceStatus,
    Stance,
    _Part,
)
from research.engine.contracts.evidence import ContradictionCandidate, Evidence
from research.engine.contracts.plans import Budget, PlanQuestion, ResearchPlan, Usage
from research.engine.contracts.records import QuestionCoverage
from research.engine.contracts.reports import Report, ReportGap, VerdictName
from research.engine.contracts.sources import Block, SourcePolicy

# --------------------------------------------------------------------------------------------
# Actions proposed by the decision model
# --------------------------------------------------------------------------------------------

Rationale = Annotated[str, Field(min_length=1, max_length=400)]


class SearchAction(_Part):
    type: Literal["search"] = "search"
    query: Annotated[str, Field(min_length=1, max_length=300)]
    question_ids: Annotated[list[Identifier], Field(min_length=1)]
    rationale: Rationale


class ReadAction(_Part):
    type: Literal["read"] = "read"
    source_id: Identifier
    question_ids: Annotated[list[Identifier], Field(min_length=1)]
    rationale: Rationale


class FinishAction(_Part):
    type: Literal["finish"] = "finish"
    rationale: Rationale


ResearchAction = Annotated[SearchAction | ReadAction | FinishAction, Field(discriminator="type")]


class ResearchDecision(Contract):
    """What the decision model returns for one iteration: one to three actions."""

    actions: Annotated[list[ResearchAction], Field(min_length=1, max_length=3)]


# --------------------------------------------------------------------------------------------
# Model requests (what each model call is given)
# --------------------------------------------------------------------------------------------


class PlanRequest(Contract):
    """Input of the planner: it sees no tools and no retrieved content."""

    objective: Annotated[str, Field(min_length=1, max_length=4000)]
    policy: SourcePolicy = Field(default_factory=SourcePolicy)
    depth: Literal["quick", "standard", "thorough"] = "standard"
    budget: Budget
    constraints: list[str] = Field(default_factory=list)
    previous_plan: ResearchPlan | None = None
    refinement: str | None = None
    # Sections the report must contain (from the run's report template).
    requested_sections: list[ShortText] = Field(default_factory=list)
    # The most output tokens the call may produce; clients pass it on as the completion
    # limit so the run's hard output-token budget holds. ``None``: the client's default.
    max_output_tokens: int | None = Field(default=None, ge=1)


class EvidenceSummary(_Part):
    """One evidence item as the decision model sees it. The orchestrator leaves ``excerpt``,
    ``claim_key`` and ``normalized_value`` empty: they are text taken from pages."""

    id: str
    source_id: str
    question_ids: list[str]
    stance: Stance
    claim_key: str | None = None
    normalized_value: str | None = None
    excerpt: str = ""


class CandidateSummary(_Part):
    source_id: str
    status: SourceStatus
    title: str = ""
    domain: str = ""
    # The address's path ("/docs/git-bisect.html"): documentation names its pages after
    # their subject, and a short title ("git-bisect(1)") often says less than the path.
    path: str = ""
    snippet: str = ""
    preferred: bool = False
    # The rank each search that returned the result gave it (1 is the top result), one entry
    # per search; empty for a page already read.
    search_ranks: list[int] = Field(default_factory=list)


class FailedSource(_Part):
    source_id: str
    status: SourceStatus
    reason: str = ""


class ResearchBrief(Contract):
    """The compact view of the research the decision model decides from (never raw pages)."""

    plan: ResearchPlan
    iteration: int = Field(ge=0)
    coverage: list[QuestionCoverage] = Field(default_factory=list)
    evidence: list[EvidenceSummary] = Field(default_factory=list)
    source_class_mix: dict[str, int] = Field(default_factory=dict)
    candidates: list[CandidateSummary] = Field(default_factory=list)
    open_contradictions: list[ContradictionCandidate] = Field(default_factory=list)
    failed_sources: list[FailedSource] = Field(default_factory=list)
    recent_queries: list[str] = Field(default_factory=list)
    remaining: Usage = Field(default_factory=Usage)
    unmet_finish_criteria: list[str] = Field(default_factory=list)
    # Why the program refused actions of the previous decision (sentences).
    recent_refusals: list[str] = Field(default_factory=list)
    max_output_tokens: int | None = Field(default=None, ge=1)


class ExtractionRequest(Contract):
    """Input of the tool-less extractor: one bounded, untrusted source and the questions."""

    source_id: NonEmptyStr
    title: str = ""
    kind: Literal["html", "pdf", "text"]
    text: str
    # The block map of ``text`` (see ``Block``): excerpts stay inside one block, code blocks
    # are quoted whole. Empty when the structure is not known.
    blocks: list[Block] = Field(default_factory=list)
    questions: list[PlanQuestion]
    max_items: int = Field(default=12, ge=1, le=40)
    max_output_tokens: int | None = Field(default=None, ge=1)


class SourceSummary(Contract):
    """Source metadata shown to synthesis and rendered in the sources list."""

    id: NonEmptyStr
    title: str = ""
    url: str = ""
    publisher: str | None = None
    published_at: str | None = None
    source_class: SourceClass = "unknown"
    # A scholarly work's bibliography line (authors, year, title, venue, DOI and other ids).
    reference: str | None = None
    abstract_only: bool = False


class SynthesisRequest(Contract):
    """Input of synthesis: evidence cards and source metadata, not pages."""

    plan: ResearchPlan
    evidence: list[Evidence]
    sources: list[SourceSummary]
    contradictions: list[ContradictionCandidate] = Field(default_factory=list)
    gaps: list[ReportGap] = Field(default_factory=list)
    partial: bool = False
    # Filled only for the single citation-repair round.
    problems: list[str] = Field(default_factory=list)
    previous_report: Report | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)


class VerificationExcerpt(_Part):
    """One cited excerpt as the verifier sees it: under the heading it stands under."""

    evidence_id: NonEmptyStr
    text: NonEmptyStr


class VerificationItem(_Part):
    """One finding to judge, with every excerpt it cites."""

    claim_id: Identifier
    text: NonEmptyStr
    excerpts: Annotated[list[VerificationExcerpt], Field(min_length=1)]


class VerificationRequest(Contract):
    """Input of the tool-less verifier: findings and their cited excerpts, nothing else."""

    findings: Annotated[list[VerificationItem], Field(min_length=1)]
    max_output_tokens: int | None = Field(default=None, ge=1)


class FindingVerdict(_Part):
    """The verifier's answer for one finding. ``claim_id`` is any short text, so an answer
    naming a finding that was never asked about is reported, not a reason to reject the
    whole answer."""

    claim_id: Annotated[str, Field(min_length=1, max_length=200)]
    verdict: VerdictName
    unsupported_part: Annotated[str, Field(max_length=2000)] = ""


class Verification(Contract):
    """What the verifier returns: one verdict per finding it was shown."""

    verdicts: list[FindingVerdict] = Field(default_factory=list)
