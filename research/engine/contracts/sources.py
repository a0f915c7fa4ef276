"""Source policy and discovery: search candidates, scholarly metadata, fetched documents."""

from collections.abc import Callable
from datetime import datetime
from typing import Annotated, Literal, get_args

from pydantic import Field, field_validator, model_validator

from research.engine.contracts.base import Contract, NonEmptyStr, _Part, normalize_domain
from research.engine.identifiers import (
    normalize_doi,
    normalize_pmcid,
    normalize_pmid,
    parse_arxiv_id,
)
from research.engine.urls import DOCUMENT_IDENTIFIER, is_http_url

# --------------------------------------------------------------------------------------------
# Source policy and discovery
# --------------------------------------------------------------------------------------------


# A run searches at most this many hand-picked documents; a larger choice is a whole library.
POLICY_MAX_DOCUMENTS = 200


class SourcePolicy(Contract):
    """Which web domains (or addresses, see :func:`normalize_domain`) and which uploaded
    documents a run may use. Excluded domains always win over listed ones.

    ``documents`` is ``none`` (the web only), ``selected`` (the documents in
    ``document_ids``) or ``library`` (every document of ``library_id``); ``web`` says whether
    the web is searched as well. Identifiers are those of ``document://`` addresses; who may
    name which library is checked where a policy is saved (``research.services``).
    """

    mode: Literal["full_web", "only_domains", "prefer_domains"] = "full_web"
    domains: list[str] = Field(default_factory=list)
    excluded_domains: list[str] = Field(default_factory=list)
    documents: Literal["none", "selected", "library"] = "none"
    library_id: Annotated[str, Field(pattern=DOCUMENT_IDENTIFIER)] | None = None
    document_ids: Annotated[
        list[Annotated[str, Field(pattern=DOCUMENT_IDENTIFIER)]],
        Field(max_length=POLICY_MAX_DOCUMENTS),
    ] = Field(default_factory=list)
    web: bool = True

    @model_validator(mode="after")
    def _documents_named(self) -> "SourcePolicy":
        if self.documents == "library" and not self.library_id:
            raise ValueError("a library must be chosen when documents is library")
        if self.documents == "selected" and not self.document_ids:
            raise ValueError("at least one document must be chosen when documents is selected")
        if self.documents == "none" and not self.web:
            raise ValueError("a run needs the web, documents, or both")
        return self

    @property
    def uses_documents(self) -> bool:
        return self.documents != "none"

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


BlockKind = Literal["heading", "paragraph", "item", "term", "description", "cell", "code"]
BLOCK_KINDS: tuple[str, ...] = get_args(BlockKind)


class Block(_Part):
    """One block of a snapshot: the characters ``[start, end)`` of the snapshot text that a
    reader sees as one unit (a heading, a paragraph, a list item, a definition term, the text
    of a definition's description, a table cell or a code block). Blocks do not overlap and are in text order; what lies between two
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
    # The snapshot is a scholarly index's record (title, authors, abstract), not the work's
    # text: no open-access full text could be read. Reports say so.
    abstract_only: bool = False
