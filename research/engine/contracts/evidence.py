"""Evidence: verified excerpts, locators, source quality and records, contradictions."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from research.engine.contracts.base import (
    BASIS_POINTS,
    EXCERPT_MAX_CHARS,
    Contract,
    Identifier,
    NonEmptyStr,
    SourceClass,
    SourceStatus,
    Stance,
    _Part,
)
from research.engine.contracts.sources import ScholarlyMetadata

# --------------------------------------------------------------------------------------------
# Evidence
# --------------------------------------------------------------------------------------------


class EvidenceScope(_Part):
    """What a value is about; differences in scope often explain apparent contradictions."""

    as_of: str | None = None
    geography: str | None = None
    population: str | None = None
    definition: str | None = None
    methodology: str | None = None


class EvidenceCandidate(Contract):
    """One evidence item as the extraction model returns it, before verification."""

    excerpt: Annotated[str, Field(min_length=1, max_length=EXCERPT_MAX_CHARS)]
    question_ids: Annotated[list[Identifier], Field(min_length=1)]
    stance: Stance = "context"
    claim_key: Annotated[str, Field(max_length=200)] | None = None
    normalized_value: Annotated[str, Field(max_length=200)] | None = None
    scope: EvidenceScope = Field(default_factory=EvidenceScope)
    relevance: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(ge=0.0, le=1.0)


class ExtractionResult(Contract):
    """The extraction model's answer for one source."""

    evidence: Annotated[list[EvidenceCandidate], Field(max_length=40)] = Field(default_factory=list)


class TextLocator(_Part):
    """Where an excerpt sits in an HTML or plain-text snapshot: ``[start, end)`` offsets.
    ``code`` marks an excerpt that is one whole code block (shown as code, line breaks kept)."""

    kind: Literal["html", "text"]
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    heading: str | None = None
    snapshot_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    code: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> "TextLocator":
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


class PdfLocator(_Part):
    """Where an excerpt sits in a PDF snapshot: the page plus offsets into the snapshot text.
    ``code`` is there for symmetry with ``TextLocator``; PDF text has no known code blocks."""

    kind: Literal["pdf"] = "pdf"
    page: int | None = Field(default=None, ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)
    heading: str | None = None
    snapshot_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    code: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> "PdfLocator":
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


# New locator kinds (attachments, API results) join this union with their own ``kind``.
Locator = Annotated[TextLocator | PdfLocator, Field(discriminator="kind")]


class Evidence(Contract):
    """A verified excerpt of one source of one run. Unique per run by ``evidence_hash``."""

    id: Identifier
    run_id: NonEmptyStr
    source_id: NonEmptyStr
    excerpt: Annotated[str, Field(min_length=1, max_length=EXCERPT_MAX_CHARS)]
    locator: Locator
    question_ids: list[Identifier] = Field(default_factory=list)
    stance: Stance = "context"
    claim_key: str | None = None
    normalized_value: str | None = None
    scope: EvidenceScope = Field(default_factory=EvidenceScope)
    relevance_bp: int = Field(ge=0, le=BASIS_POINTS)
    confidence_bp: int = Field(ge=0, le=BASIS_POINTS)
    evidence_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]


class SourceQuality(Contract):
    """Labels and dimensions describing a source; never a single truth score."""

    source_class: SourceClass = "unknown"
    authority: Literal["high", "medium", "low", "unknown"] = "unknown"
    proximity: Literal["direct", "reported", "derived", "unknown"] = "unknown"
    recency: Literal["current", "dated", "unknown"] = "unknown"
    methodology_transparency: Literal["clear", "partial", "absent", "unknown"] = "unknown"
    independence_cluster: str = ""
    notes: list[str] = Field(default_factory=list)


# Search ranks kept per source: the extractive decider tries at most three searches per
# question and few questions share a page, so eight ranks hold every search that matters to a
# fusion of ranks while a page found by every search of a long run stays a bounded record.
SEARCH_RANKS_KEPT = 8


class SourceRecord(Contract):
    """A source row as the store hands it to the engine."""

    id: NonEmptyStr
    run_id: NonEmptyStr
    status: SourceStatus
    url: NonEmptyStr
    canonical_url: str = ""
    canonical_url_hash: str = ""
    content_hash: str | None = None
    title: str = ""
    publisher: str | None = None
    domain: str = ""
    snippet: str = ""
    published_at: str | None = None
    quality: SourceQuality = Field(default_factory=SourceQuality)
    duplicate_of: str | None = None
    status_reason: str = ""
    declared_canonical_url: str | None = None
    # Keys of the scholarly work the source is a copy of (``doi:…``, ``arxiv:…``; see
    # ``works.WorkIdentity.keys``): two copies of one paper are not independent.
    work_ids: list[str] = Field(default_factory=list)
    # What a scholarly index said about the work (read when no open-access text is named).
    scholarly: ScholarlyMetadata | None = None
    # The rank each search that returned the source gave it, in the order of those searches
    # (at most ``SEARCH_RANKS_KEPT``): the search engine's own judgement of relevance, which
    # the decider fuses with its own (see ``research.llm.extractive_decide``).
    search_ranks: list[int] = Field(default_factory=list)


class ContradictionPosition(_Part):
    """One side of a contradiction: a value (or stance) and the evidence stating it."""

    value: str | None
    stance: Stance
    evidence_ids: list[str]
    scopes: list[EvidenceScope]
    # The independence clusters of the sources stating it (filled for value conflicts): how
    # many independent sites say it.
    clusters: list[str] = Field(default_factory=list)


class ContradictionCandidate(Contract):
    """Evidence sharing a claim key but disagreeing; values are kept side by side."""

    key: NonEmptyStr
    claim_key: NonEmptyStr
    positions: Annotated[list[ContradictionPosition], Field(min_length=2)]
    evidence_ids: list[str]
    question_ids: list[str] = Field(default_factory=list)
    # Scope fields (as_of, geography, population, definition, methodology) whose values differ.
    scope_differences: dict[str, list[str]] = Field(default_factory=dict)
