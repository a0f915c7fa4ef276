"""Versioned pydantic contracts: everything that crosses a boundary of the research engine.

Plans, source policies, budgets, actions, evidence, reports, working state and progress events
are validated here once, so the rest of the engine can trust their shape. Every contract carries
``schema_version`` so stored JSON can be migrated when a contract changes. Extra fields are
forbidden everywhere: a model (or a stale client) cannot smuggle data past validation.
"""

import calendar
import re
from collections.abc import Callable
from datetime import date, datetime
from decimal import Decimal
from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    field_validator,
    model_validator,
)

from research.engine.identifiers import (
    normalize_doi,
    normalize_pmcid,
    normalize_pmid,
    parse_arxiv_id,
)
from research.engine.states import RunStatus
from research.engine.urls import (
    is_http_url,
    parse_policy_entry,
)

SCHEMA_VERSION = 1

EXCERPT_MAX_CHARS = 1000
BASIS_POINTS = 10_000

SourceClass = Literal[
    "primary",
    "official",
    "academic",
    "reputable_secondary",
    "aggregator",
    "user_generated",
    "unknown",
]
SOURCE_CLASSES: tuple[str, ...] = get_args(SourceClass)
SourceStatus = Literal["candidate", "fetched", "blocked", "failed", "unsupported", "duplicate"]
Stance = Literal["supports", "contradicts", "context"]
Confidence = Literal["high", "medium", "low"]

# Short, URL- and anchor-safe identifiers for things a model refers to by id.
_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"


class Contract(BaseModel):
    """Base of every contract: versioned, strict about unknown fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    schema_version: int = SCHEMA_VERSION

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if not 1 <= value <= SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is not understood by this version of the engine "
                f"(supported: 1 to {SCHEMA_VERSION})"
            )
        return value


class _Part(BaseModel):
    """A nested value object; it is versioned by the contract that contains it."""

    model_config = ConfigDict(extra="forbid")


NonEmptyStr = Annotated[str, Field(min_length=1)]
ShortText = Annotated[str, Field(min_length=1, max_length=500)]
Identifier = Annotated[str, Field(pattern=_ID_PATTERN)]


def normalize_domain(value: str) -> str:
    """Validate and normalise one domain-control entry of a source policy.

    An entry is a domain name (``example.org``, which covers its subdomains; international
    names become punycode) or an IP address (``10.0.0.5``, ``[fd00::1]``), either optionally
    with a port (``[fd00::1]:8443``). Raises ``ValueError`` with a readable sentence for
    anything else (a URL, a path, a malformed address or port): an
    :class:`~research.engine.urls.InvalidPolicyEntry`.
    """
    return str(parse_policy_entry(value))


# --------------------------------------------------------------------------------------------
# Source policy and discovery
# --------------------------------------------------------------------------------------------


class SourcePolicy(Contract):
    """Which web domains (or addresses, see :func:`normalize_domain`) a run may use.
    Excluded domains always win over listed ones."""

    mode: Literal["full_web", "only_domains", "prefer_domains"] = "full_web"
    domains: list[str] = Field(default_factory=list)
    excluded_domains: list[str] = Field(default_factory=list)

    @field_validator("domains", "excluded_domains")
    @classmethod
    def _valid_domains(cls, values: list[str]) -> list[str]:
        seen: dict[str, None] = {}
        for value in values:
            seen[normalize_domain(value)] = None
        return list(seen)

    @model_validator(mode="after")
    def _only_needs_domains(self) -> "SourcePolicy":
        if self.mode == "only_domains" and not self.domains:
            raise ValueError("domains must list at least one domain when mode is only_domains")
        return self


# Bounds of scholarly metadata. OpenAlex itself lists at most 100 authors per work; a
# consortium paper's thousands of names would swell every stored candidate.
SCHOLARLY_MAX_AUTHORS = 100
SCHOLARLY_AUTHOR_MAX_CHARS = 300
SCHOLARLY_TITLE_MAX_CHARS = 1000
SCHOLARLY_VENUE_MAX_CHARS = 500
# Structured abstracts of long reviews run to about 5,000 characters; twice that keeps every
# real abstract whole and bounds a hostile one.
SCHOLARLY_ABSTRACT_MAX_CHARS = 10_000


class ScholarlyMetadata(_Part):
    """What a scholarly index (OpenAlex, Crossref, PubMed, Semantic Scholar, arXiv) says about
    the work behind a search result.

    Identifiers are stored normalised (``research.engine.identifiers``): the DOI in lower case
    without resolver, the arXiv id with the version the index named, the PMID as digits, the
    PMCID as ``PMC`` + digits; a malformed identifier is refused. ``full_text_url`` is an
    open-access full text the index named; ``landing_url`` the work's page.
    """

    doi: str | None = None
    arxiv_id: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    title: Annotated[str, Field(max_length=SCHOLARLY_TITLE_MAX_CHARS)] = ""
    authors: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=SCHOLARLY_AUTHOR_MAX_CHARS)]],
        Field(max_length=SCHOLARLY_MAX_AUTHORS),
    ] = Field(default_factory=list)
    more_authors: bool = False
    venue: Annotated[str, Field(max_length=SCHOLARLY_VENUE_MAX_CHARS)] | None = None
    year: int | None = Field(default=None, ge=1000, le=9999)
    abstract: Annotated[str, Field(max_length=SCHOLARLY_ABSTRACT_MAX_CHARS)] | None = None
    full_text_url: str | None = None
    landing_url: str | None = None

    @field_validator("doi")
    @classmethod
    def _doi(cls, value: str | None) -> str | None:
        return _identifier(value, normalize_doi, "a DOI (10.<registrant>/<suffix>)")

    @field_validator("arxiv_id")
    @classmethod
    def _arxiv(cls, value: str | None) -> str | None:
        return _identifier(value, lambda v: _str_or_none(parse_arxiv_id(v)), "an arXiv id")

    @field_validator("pmid")
    @classmethod
    def _pmid(cls, value: str | None) -> str | None:
        return _identifier(value, normalize_pmid, "a PubMed id (digits)")

    @field_validator("pmcid")
    @classmethod
    def _pmcid(cls, value: str | None) -> str | None:
        return _identifier(value, normalize_pmcid, "a PubMed Central id (PMC + digits)")

    @field_validator("full_text_url", "landing_url")
    @classmethod
    def _http(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not is_http_url(value):
            raise ValueError(f"{value[:80]!r} is not an http(s) URL")
        return value.strip()


def _str_or_none(value: object) -> str | None:
    return None if value is None else str(value)


def _identifier(value: str | None, normalize: Callable[[str], str | None], what: str) -> str | None:
    if value is None:
        return None
    normalized = normalize(value)
    if normalized is None:
        raise ValueError(f"{str(value)[:80]!r} is not {what}")
    return normalized


class CandidateVariant(_Part):
    """One address of a work: a landing page or an open-access full text, with the providers
    that named it. Kept for audit when several results are collapsed into one work."""

    url: NonEmptyStr
    role: Literal["landing", "full_text"] = "landing"
    providers: list[str] = Field(default_factory=list)


class SearchCandidate(Contract):
    """One search result as a provider (or a merge of providers) returned it.

    ``scholarly`` carries a scholarly index's metadata; ``variants`` lists every address of
    the work when results of one work were collapsed (``research.engine.works``).
    """

    url: NonEmptyStr
    title: str = ""
    snippet: str = ""
    provider: NonEmptyStr
    rank: int = Field(ge=1)
    published_at: str | None = None
    provider_ranks: dict[str, int] = Field(default_factory=dict)
    scholarly: ScholarlyMetadata | None = None
    variants: list[CandidateVariant] = Field(default_factory=list)


class Heading(_Part):
    """A heading of a snapshot, at a character offset of the snapshot text."""

    offset: int = Field(ge=0)
    level: int = Field(ge=1, le=6)
    text: str


class PageSpan(_Part):
    """The character range ``[start, end)`` of the snapshot text that came from one PDF page."""

    page: int = Field(ge=1)
    start: int = Field(ge=0)
    end: int = Field(ge=0)

    @model_validator(mode="after")
    def _ordered(self) -> "PageSpan":
        if self.end < self.start:
            raise ValueError("end must not be before start")
        return self


BlockKind = Literal["heading", "paragraph", "item", "term", "cell", "code"]
BLOCK_KINDS: tuple[str, ...] = get_args(BlockKind)


class Block(_Part):
    """One block of a snapshot: the characters ``[start, end)`` of the snapshot text that a
    reader sees as one unit (a heading, a paragraph, a list item, a definition term, a table
    cell or a code block). Blocks do not overlap and are in text order; what lies between two
    blocks is a separator (white space only). A code block keeps its line breaks and can be
    quoted only whole; no other excerpt may run from one block into the next unless it shows
    the line break between them. ``after_gap`` says that page text left out of the snapshot
    (navigation, boilerplate) stands between this block and the one before it, so no excerpt
    may run from that block into this one."""

    start: int = Field(ge=0)
    end: int = Field(ge=0)
    kind: BlockKind = "paragraph"
    after_gap: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> "Block":
        if self.end <= self.start:
            raise ValueError("end must be after start")
        return self


# Where a stored publication date came from; "unknown" dates are None with no source.
DateSource = Literal[
    "meta",  # a publication or modification meta tag (Open Graph, Dublin Core, citation_*)
    "json_ld",  # schema.org datePublished / dateModified
    "time",  # a <time datetime> element marked as the publication date or in a byline
    "byline",  # a dated line such as "Published 3 March 2024" at the top of the text
    "pdf_info",  # the creation date in a PDF's information dictionary
]


class SourceDocument(Contract):
    """An acquired, normalised snapshot of one source, as a source adapter returns it.

    ``blocks`` is the snapshot's block map (empty for PDFs and plain text, whose block
    structure is not known); ``date_source`` says where ``published_at`` was read.
    """

    requested_url: NonEmptyStr
    final_url: NonEmptyStr
    canonical_url: NonEmptyStr
    canonical_url_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    content_hash: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
    mime_type: NonEmptyStr
    kind: Literal["html", "pdf", "text"]
    title: str = ""
    author: str | None = None
    publisher: str | None = None
    published_at: str | None = None
    date_source: DateSource | None = None
    language: str | None = None
    text: str
    headings: list[Heading] = Field(default_factory=list)
    pages: list[PageSpan] = Field(default_factory=list)
    blocks: list[Block] = Field(default_factory=list)
    truncated: bool = False
    content_bytes: int = Field(ge=0)
    retrieved_at: datetime
    # A canonical link the page declared on *another* site: evidence of syndication, used by
    # the independence clustering even though canonical_url stays on the fetched site.
    declared_canonical_url: str | None = None


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
    """Hard limits of one run (DESIGN §5), plus the allowance set aside for synthesis."""

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


class ContradictionPosition(_Part):
    """One side of a contradiction: a value (or stance) and the evidence stating it."""

    value: str | None
    stance: Stance
    evidence_ids: list[str]
    scopes: list[EvidenceScope]


class ContradictionCandidate(Contract):
    """Evidence sharing a claim key but disagreeing; values are kept side by side."""

    key: NonEmptyStr
    claim_key: NonEmptyStr
    positions: Annotated[list[ContradictionPosition], Field(min_length=2)]
    evidence_ids: list[str]
    question_ids: list[str] = Field(default_factory=list)
    # Scope fields (as_of, geography, population, definition, methodology) whose values differ.
    scope_differences: dict[str, list[str]] = Field(default_factory=dict)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


class Statement(_Part):
    """One statement of the report; findings must cite verified evidence of the same run."""

    claim_id: Identifier
    kind: Literal["finding", "analysis", "caveat"]
    text: Annotated[str, Field(min_length=1, max_length=4000)]
    evidence_ids: list[NonEmptyStr] = Field(default_factory=list)
    confidence: Confidence = "medium"


class ReportSection(_Part):
    id: Identifier
    title: Annotated[str, Field(min_length=1, max_length=300)]
    statements: list[Statement] = Field(default_factory=list)


class ReportContradiction(_Part):
    summary: Annotated[str, Field(min_length=1, max_length=2000)]
    evidence_ids: list[NonEmptyStr] = Field(default_factory=list)
    resolution: str | None = None


class ReportGap(_Part):
    question_id: Identifier | None = None
    description: Annotated[str, Field(min_length=1, max_length=2000)]


class Report(Contract):
    """The synthesised report. It never contains a URL: citations are evidence ids."""

    title: Annotated[str, Field(min_length=1, max_length=300)]
    executive_summary: list[Statement] = Field(default_factory=list)
    sections: list[ReportSection] = Field(default_factory=list)
    contradictions: list[ReportContradiction] = Field(default_factory=list)
    gaps: list[ReportGap] = Field(default_factory=list)
    methodology: list[Annotated[str, Field(max_length=2000)]] = Field(default_factory=list)
    partial: bool = False
    mode: Literal["extractive", "model"] = "model"

    @model_validator(mode="after")
    def _unique_claim_ids(self) -> "Report":
        ids = [statement.claim_id for statement in self.statements()]
        duplicates = sorted({cid for cid in ids if ids.count(cid) > 1})
        if duplicates:
            raise ValueError(f"claim_id values must be unique; repeated: {', '.join(duplicates)}")
        return self

    def statements(self) -> list[Statement]:
        """Every statement in reading order: the executive summary, then each section."""
        found = list(self.executive_summary)
        for section in self.sections:
            found.extend(section.statements)
        return found


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
    snippet: str = ""
    preferred: bool = False


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
