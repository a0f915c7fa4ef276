"""Work identity: which search results are copies of one scholarly work.

A paper reaches a run through many doors: its publisher page from OpenAlex, a ``doi.org``
address from Crossref, a Semantic Scholar page, the arXiv abstract, HTML and PDF, a PubMed
record. ``merge_works`` collapses such results into one ``Work`` before they are budgeted,
keeping every address (a ``CandidateVariant`` with the providers that named it) for audit.

Identity comes from strong identifiers — DOI, arXiv id (without version), PMID, PMCID — taken
from the scholarly metadata of a result and from well-known scholarly URLs. Two results are one
work when they share a strong identifier or an address. Results that conflict — both carry a
DOI (or an arXiv id, a PMID, a PMCID) and the values differ — are never merged, whatever else
they share: two papers with one title are two papers. Normalised title and year is the weakest
key, used only between results that have no strong identifier at all.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field, fields

from research.engine.contracts import (
    CandidateVariant,
    ScholarlyMetadata,
    SearchCandidate,
    SourceRecord,
)
from research.engine.identifiers import (
    arxiv_id_from_doi,
    doi_url,
    ids_from_url,
    normalize_doi,
    normalize_pmcid,
    normalize_pmid,
    parse_arxiv_id,
    title_key,
)
from research.engine.urls import safe_source_url

__all__ = [
    "STRONG_KINDS",
    "Work",
    "WorkIdentity",
    "collapse_candidates",
    "identity_from_url",
    "merge_works",
    "reference_text",
    "work_cluster_keys",
    "work_identity",
]

# The identifier kinds that can make two results one work, strongest first (the first one a
# work has names it).
STRONG_KINDS: tuple[str, ...] = ("doi", "arxiv", "pmid", "pmcid")


@dataclass(frozen=True)
class WorkIdentity:
    """The identifiers known for one result or one work; all fields are normalised."""

    doi: str | None = None
    arxiv: str | None = None
    pmid: str | None = None
    pmcid: str | None = None
    title_key: str | None = None

    @property
    def strong(self) -> dict[str, str]:
        """The strong identifiers present, by kind."""
        return {kind: value for kind in STRONG_KINDS if (value := getattr(self, kind))}

    @property
    def has_strong_id(self) -> bool:
        return bool(self.strong)

    def keys(self) -> list[str]:
        """``kind:value`` for every strong identifier (``doi:10.5555/x``, ``arxiv:2403.01234``)."""
        return [f"{kind}:{value}" for kind, value in self.strong.items()]

    @property
    def key(self) -> str:
        """The work's name: its strongest identifier, else ``title:<title>|<year>``, else ``""``."""
        keys = self.keys()
        if keys:
            return keys[0]
        return f"title:{self.title_key}" if self.title_key else ""

    def conflicts_with(self, other: "WorkIdentity") -> bool:
        """Whether both name an identifier of one kind with different values."""
        mine, theirs = self.strong, other.strong
        return any(kind in theirs and theirs[kind] != value for kind, value in mine.items())

    def shares_strong_id(self, other: "WorkIdentity") -> bool:
        theirs = other.strong
        return any(theirs.get(kind) == value for kind, value in self.strong.items())

    def combined(self, other: "WorkIdentity") -> "WorkIdentity":
        """Both identities' identifiers; where both have one of a kind, this one's is kept."""
        return WorkIdentity(
            **{f.name: getattr(self, f.name) or getattr(other, f.name) for f in fields(self)}
        )


def identity_from_url(url: str | None) -> WorkIdentity:
    """The identity a URL alone reveals (a DOI resolver, an arXiv page, a PubMed record...)."""
    if not url:
        return WorkIdentity()
    return WorkIdentity(**ids_from_url(url))


def _metadata_identity(metadata: ScholarlyMetadata) -> dict[str, str]:
    found: dict[str, str] = {}
    if metadata.doi:
        preprint = arxiv_id_from_doi(metadata.doi)
        if preprint:
            found["arxiv"] = preprint.base
        elif doi := normalize_doi(metadata.doi):
            found["doi"] = doi
    if metadata.arxiv_id and (arxiv := parse_arxiv_id(metadata.arxiv_id)):
        # An explicit arXiv id wins over one read from an arXiv DOI.
        found["arxiv"] = arxiv.base
    if metadata.pmid and (pmid := normalize_pmid(metadata.pmid)):
        found["pmid"] = pmid
    if metadata.pmcid and (pmcid := normalize_pmcid(metadata.pmcid)):
        found["pmcid"] = pmcid
    return found


def work_identity(candidate: SearchCandidate) -> WorkIdentity:
    """The identity of one search result.

    Identifiers in its scholarly metadata come first; its own URL, landing page and full-text
    URL fill in kinds the metadata did not name (an OpenAlex record whose open-access copy is
    an arXiv PDF gains the arXiv id), never replace them. The title key needs metadata with a
    year.
    """
    metadata = candidate.scholarly
    found = _metadata_identity(metadata) if metadata else {}
    urls = [candidate.url]
    if metadata:
        urls += [metadata.landing_url, metadata.full_text_url]
    for url in urls:
        if url:
            for kind, value in ids_from_url(url).items():
                found.setdefault(kind, value)
    weakest = title_key(metadata.title or candidate.title, metadata.year) if metadata else None
    return WorkIdentity(**found, title_key=weakest)


def _candidate_variants(candidate: SearchCandidate) -> list[CandidateVariant]:
    """Every address a result names, with the providers behind it."""
    if candidate.variants:
        return list(candidate.variants)
    providers = list(candidate.provider_ranks) or [candidate.provider]
    metadata = candidate.scholarly
    full_text = safe_source_url(metadata.full_text_url) if metadata else None
    own = safe_source_url(candidate.url) or candidate.url.strip()
    variants = [
        CandidateVariant(
            url=own, role="full_text" if own == full_text else "landing", providers=providers
        )
    ]
    if metadata:
        landing = safe_source_url(metadata.landing_url)
        if landing and landing != own:
            variants.append(CandidateVariant(url=landing, role="landing", providers=providers))
        if full_text and full_text != own:
            variants.append(CandidateVariant(url=full_text, role="full_text", providers=providers))
    return variants


@dataclass
class Work:
    """Results that are copies of one work (``members``, in the order they joined) and every
    address they named (``variants``)."""

    identity: WorkIdentity
    members: list[SearchCandidate] = field(default_factory=list)
    variants: list[CandidateVariant] = field(default_factory=list)

    @property
    def key(self) -> str:
        """The work's name (``doi:…``, ``arxiv:…``, ``pmid:…``, ``pmcid:…``, ``title:…``), or
        ``""`` for a plain web result."""
        return self.identity.key

    @property
    def variant_urls(self) -> list[str]:
        return [variant.url for variant in self.variants]

    @property
    def metadata(self) -> ScholarlyMetadata | None:
        """The members' metadata combined: each field from the first member that has it, the
        longest abstract, identifiers from the work's identity."""
        described = [m.scholarly for m in self.members if m.scholarly is not None]
        if not described:
            return None
        merged: dict[str, object] = {}
        for name in ("title", "venue", "year", "full_text_url", "landing_url"):
            merged[name] = next(
                (getattr(m, name) for m in described if getattr(m, name)),
                ScholarlyMetadata.model_fields[name].default,
            )
        with_authors = next((m for m in described if m.authors), None)
        if with_authors:
            merged["authors"] = list(with_authors.authors)
            merged["more_authors"] = with_authors.more_authors
        abstracts = [m.abstract for m in described if m.abstract]
        merged["abstract"] = max(abstracts, key=len) if abstracts else None
        merged["doi"] = self.identity.doi or next((m.doi for m in described if m.doi), None)
        merged["arxiv_id"] = self._versioned_arxiv(described)
        merged["pmid"] = self.identity.pmid
        merged["pmcid"] = self.identity.pmcid
        return ScholarlyMetadata(**merged)

    def _versioned_arxiv(self, described: list[ScholarlyMetadata]) -> str | None:
        """The arXiv id as an index named it (with its version), else the bare identity."""
        for metadata in described:
            parsed = parse_arxiv_id(metadata.arxiv_id) if metadata.arxiv_id else None
            if parsed and parsed.base == self.identity.arxiv:
                return str(parsed)
        return self.identity.arxiv

    @property
    def full_text_url(self) -> str | None:
        """An open-access full text some provider named, or ``None`` (then only the abstract is
        known)."""
        return next((v.url for v in self.variants if v.role == "full_text"), None)

    def candidate(self, *, rank: int | None = None) -> SearchCandidate:
        """One search candidate standing for the whole work.

        Its URL is the open-access full text when one was named (that is what a read should
        fetch), else the best-ranked member's URL; it carries the combined metadata, the best
        rank of every provider and every variant. A single plain web result comes back as it
        was.
        """
        first = self.members[0]
        if len(self.members) == 1 and first.scholarly is None and len(self.variants) == 1:
            return first if rank is None else first.model_copy(update={"rank": rank})
        provider_ranks: dict[str, int] = {}
        for member in self.members:
            ranks = member.provider_ranks or {member.provider: member.rank}
            for name, value in ranks.items():
                provider_ranks[name] = min(value, provider_ranks.get(name, value))
        best = min(self.members, key=lambda m: m.rank)
        metadata = self.metadata
        return SearchCandidate(
            url=self.full_text_url or best.url,
            title=(metadata.title if metadata and metadata.title else best.title),
            snippet=best.snippet or next((m.snippet for m in self.members if m.snippet), ""),
            provider=best.provider,
            rank=rank if rank is not None else best.rank,
            published_at=next((m.published_at for m in self.members if m.published_at), None),
            provider_ranks=provider_ranks,
            scholarly=metadata,
            variants=list(self.variants),
        )

    def _absorb(self, candidate: SearchCandidate, identity: WorkIdentity) -> None:
        self.members.append(candidate)
        self.identity = self.identity.combined(identity)
        for variant in _candidate_variants(candidate):
            self._add_variant(variant)

    def _add_variant(self, variant: CandidateVariant) -> None:
        for index, known in enumerate(self.variants):
            if known.url == variant.url:
                providers = list(dict.fromkeys([*known.providers, *variant.providers]))
                role = "full_text" if "full_text" in (known.role, variant.role) else "landing"
                self.variants[index] = CandidateVariant(
                    url=known.url, role=role, providers=providers
                )
                return
        self.variants.append(variant)

    def _take(self, other: "Work") -> None:
        self.members.extend(other.members)
        self.identity = self.identity.combined(other.identity)
        for variant in other.variants:
            self._add_variant(variant)


def _same_work(work: Work, identity: WorkIdentity, urls: set[str]) -> bool:
    """Whether a result with ``identity`` and addresses ``urls`` points at ``work``."""
    if identity.shares_strong_id(work.identity):
        return True
    if urls & set(work.variant_urls):
        return True
    return (
        identity.title_key is not None
        and not identity.has_strong_id
        and not work.identity.has_strong_id
        and identity.title_key == work.identity.title_key
    )


def merge_works(candidates: Sequence[SearchCandidate]) -> list[Work]:
    """Group search results into works, in order of each work's first result.

    A result joins every work it shares a strong identifier or an address with (or, when
    neither has a strong identifier, the title key), unless that would put two different
    values of one identifier kind into one work: then it joins the first of them it does not
    conflict with, and a work it conflicts with stays apart. A result that links two works
    joins them into one when they do not conflict. Every result ends in exactly one work.
    """
    works: list[Work] = []
    for candidate in candidates:
        identity = work_identity(candidate)
        urls = {variant.url for variant in _candidate_variants(candidate)}
        target: Work | None = None
        for work in [w for w in works if _same_work(w, identity, urls)]:
            if work.identity.conflicts_with(identity):
                continue
            if target is None:
                target = work
            elif not target.identity.combined(identity).conflicts_with(work.identity):
                target._take(work)
                works.remove(work)
        if target is None:
            target = Work(identity=WorkIdentity())
            works.append(target)
        target._absorb(candidate, identity)
    return works


def collapse_candidates(candidates: Sequence[SearchCandidate]) -> list[SearchCandidate]:
    """One candidate per work (see ``Work.candidate``), ranked 1… in order of first appearance.

    Call it on ranked search results before they are budgeted: copies of one paper then cost
    one source, and every address stays in ``SearchCandidate.variants``.
    """
    return [
        work.candidate(rank=position)
        for position, work in enumerate(merge_works(candidates), start=1)
    ]


def work_cluster_keys(record: SourceRecord) -> list[str]:
    """The work keys of a stored source for the independence clustering: its recorded
    ``work_ids`` and the identifiers its own URLs reveal. Sources that share one are copies of
    one work and so not independent of each other."""
    keys = list(record.work_ids)
    for url in (record.url, record.canonical_url):
        keys += identity_from_url(url).keys()
    return list(dict.fromkeys(keys))


# Reference lists in the Vancouver style name up to six authors before "et al."; enough to
# recognise a paper, short enough for a bibliography line.
REFERENCE_AUTHORS = 6


def reference_text(metadata: ScholarlyMetadata, *, title: bool = True) -> str:
    """A bibliography line for a work: authors (year). Title. Venue. then its identifiers, the
    DOI as its resolver address (as Crossref asks DOIs to be displayed)."""
    parts: list[str] = []
    authors = metadata.authors[:REFERENCE_AUTHORS]
    byline = ", ".join(authors)
    if authors and (metadata.more_authors or len(metadata.authors) > REFERENCE_AUTHORS):
        byline += " et al."
    if metadata.year:
        byline = f"{byline} ({metadata.year})" if byline else f"({metadata.year})"
    if byline:
        parts.append(byline if byline.endswith(".") else byline + ".")
    if title and metadata.title:
        parts.append(metadata.title.rstrip(".") + ".")
    if metadata.venue:
        parts.append(metadata.venue.rstrip(".") + ".")
    identifiers = []
    if metadata.doi:
        identifiers.append(doi_url(metadata.doi))
    if metadata.arxiv_id:
        identifiers.append(f"arXiv:{metadata.arxiv_id}")
    if metadata.pmid:
        identifiers.append(f"PMID {metadata.pmid}")
    if metadata.pmcid:
        identifiers.append(f"PMCID {metadata.pmcid}")
    if identifiers:
        parts.append(" · ".join(identifiers))
    return " ".join(parts)
