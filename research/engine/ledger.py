"""The evidence ledger: excerpt verification and locators, evidence hashing, duplicate and
mirror detection, independence clusters and contradiction candidates.

Nothing a model says about a source is trusted: an excerpt becomes evidence only after it has
been found in the stored snapshot, and its locator is computed here from the snapshot itself.
"""

import hashlib
import re
import unicodedata
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Literal

from research.engine.contracts import (
    BASIS_POINTS,
    EXCERPT_MAX_CHARS,
    Block,
    ContradictionCandidate,
    ContradictionPosition,
    Evidence,
    EvidenceCandidate,
    EvidenceScope,
    Heading,
    PageSpan,
    PdfLocator,
    SourceDocument,
    SourceRecord,
    TextLocator,
)
from research.engine.urls import UnsupportedURLError, hostname, registrable_domain
from research.engine.works import work_cluster_keys

# --------------------------------------------------------------------------------------------
# Text normalisation for matching
# --------------------------------------------------------------------------------------------

# Typographic variants a model (or a copy-paste) often swaps for their plain forms.
_PLAIN_FORMS = {
    "\u2018": "'",
    "\u2019": "'",
    "\u201a": "'",
    "\u201b": "'",
    "\u2032": "'",
    "\u201c": '"',
    "\u201d": '"',
    "\u201e": '"',
    "\u201f": '"',
    "\u2033": '"',
    "\u00ab": '"',
    "\u00bb": '"',
    "\u2010": "-",
    "\u2011": "-",
    "\u2012": "-",
    "\u2013": "-",
    "\u2014": "-",
    "\u2015": "-",
    "\u2212": "-",
    "\u2043": "-",
}
# Invisible characters that carry no text (zero-width spaces and joiners, soft hyphen, BOM).
_INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\ufeff\u00ad")
# Runs of printable ASCII map to themselves; only the rest needs the
# per-character path. This keeps building an index of a 200 KB page in the milliseconds.
_PLAIN_RUN = re.compile(r"[!-~]+")

_FORM_CACHE: dict[str, str] = {}


def _char_form(char: str) -> str:
    """The matching form of one character: compatibility-decomposed (NFKD, so NFKC-equal
    characters match), typographic quotes and dashes made plain, whitespace as a space."""
    cached = _FORM_CACHE.get(char)
    if cached is not None:
        return cached
    if char in _INVISIBLE:
        form = ""
    elif char.isspace():
        form = " "
    else:
        decomposed = unicodedata.normalize("NFKD", _PLAIN_FORMS.get(char, char))
        form = "".join(
            " " if part.isspace() else _PLAIN_FORMS.get(part, part)
            for part in decomposed
            if part not in _INVISIBLE
        )
    _FORM_CACHE[char] = form
    return form


def normalize_for_matching(text: str) -> str:
    """The form excerpts and snapshots are compared in: compatibility-normalised, plain quotes
    and dashes, invisible characters dropped, whitespace runs collapsed, ends stripped."""
    if not text.isascii():
        # Every whitespace character becomes a plain space here, so the split below sees
        # exactly the runs the snapshot index collapses.
        text = "".join([_char_form(char) for char in text])
    return " ".join(text.split())


# --------------------------------------------------------------------------------------------
# Excerpt verification
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class VerifiedExcerpt:
    """An excerpt found in the snapshot: ``text[start:end]`` of the original snapshot text.

    ``code`` is true when the excerpt is one whole code block; ``text`` then keeps its line
    breaks, as it does for an excerpt of consecutive blocks.
    """

    start: int
    end: int
    text: str
    heading: str | None = None
    page: int | None = None
    code: bool = False

    @property
    def verified(self) -> bool:
        return True


@dataclass(frozen=True)
class RejectedExcerpt:
    """An excerpt that could not become evidence, with the reason."""

    excerpt: str
    reason: str

    @property
    def verified(self) -> bool:
        return False


NOT_IN_SNAPSHOT = "The excerpt does not occur in the stored snapshot."
CROSSES_BLOCKS = (
    "The excerpt runs from one block of the page into the next (a paragraph, list item, table "
    "cell or line) as if they were one sentence; quote one block, or keep the line break "
    "between blocks."
)
PART_OF_CODE = (
    "The excerpt quotes part of a code sample or mixes it with prose; code is quoted whole."
)
ACROSS_GAP = (
    "The excerpt joins two blocks that are not next to each other on the page (text between "
    "them was left out of the snapshot)."
)

# White space that breaks a line (or a table row into cells) in an excerpt: where an excerpt
# has one, it may pass from one block of the snapshot to the next.
_BREAK_RUN = re.compile(r"\s*[\n\r\t\v\f\x1c-\x1e\x85\u2028\u2029]\s*")
# Stands for such a break while the excerpt is normalised: a private-use character, which
# the matching form keeps as it is and no excerpt a model writes should contain.
_BREAK_MARK = "\ue000"


def clip_blocks(blocks: Sequence[Block], end: int) -> list[Block]:
    """The block map of a text cut at ``end``: blocks past the cut dropped, a prose block cut
    short, a code block cut in two dropped (code is quoted whole or not at all)."""
    kept: list[Block] = []
    for block in blocks:
        if block.end <= end:
            kept.append(block)
            continue
        if block.start < end and block.kind != "code":
            kept.append(block.model_copy(update={"end": end}))
        break
    return kept


class SnapshotIndex:
    """A snapshot prepared for fast excerpt lookups.

    Builds the normalised text once, with a map from every normalised character back to the
    original character it came from; each lookup is then one substring search. Build one index
    per snapshot and verify all of its excerpts against it.

    With a block map (``blocks``), an excerpt must also respect the page's structure: it stays
    inside one block, or shows a line break wherever it passes into the next block, and a code
    block is quoted only whole, on its own. Without one (PDFs, plain text) only the text counts.
    """

    def __init__(
        self,
        text: str,
        *,
        headings: Sequence[Heading] = (),
        pages: Sequence[PageSpan] = (),
        blocks: Sequence[Block] = (),
    ) -> None:
        self.text = text
        self._build(text)
        ordered = sorted(headings, key=lambda heading: heading.offset)
        self._heading_offsets = [heading.offset for heading in ordered]
        self._headings = [heading.text for heading in ordered]
        self._pages = sorted(pages, key=lambda span: span.start)
        self._page_starts = [span.start for span in self._pages]
        self._blocks = [block for block in sorted(blocks, key=lambda b: b.start)]
        self._block_starts = [block.start for block in self._blocks]

    def _build(self, text: str) -> None:
        pieces: list[str] = []
        origin = array("q")
        space = True  # a leading space is never emitted, matching the stripped excerpt

        def slow(begin: int, end: int) -> None:
            nonlocal space
            for index in range(begin, end):
                for part in _char_form(text[index]):
                    if part == " ":
                        if space:
                            continue
                        space = True
                    else:
                        space = False
                    pieces.append(part)
                    origin.append(index)

        position = 0
        for run in _PLAIN_RUN.finditer(text):
            if run.start() > position:
                slow(position, run.start())
            pieces.append(run.group())
            origin.extend(range(run.start(), run.end()))
            space = False
            position = run.end()
        slow(position, len(text))
        self.normalized = "".join(pieces)
        self._origin = origin

    def locate(self, excerpt: str, *, near: int | None = None) -> tuple[int, int] | None:
        """Offsets ``(start, end)`` of ``excerpt`` in the original text, or ``None``.

        With several occurrences, the first one is returned, or the one starting closest to
        ``near`` when given (used when re-checking a stored locator). Block rules are not
        applied here; :meth:`verify` applies them.
        """
        return self._locate_normalized(normalize_for_matching(excerpt), near)

    def _occurrences(self, needle: str) -> Iterable[int]:
        found = self.normalized.find(needle)
        while found >= 0:
            yield found
            found = self.normalized.find(needle, found + 1)

    def _span(self, found: int, needle: str) -> tuple[int, int]:
        return self._origin[found], self._origin[found + len(needle) - 1] + 1

    def _locate_normalized(self, needle: str, near: int | None) -> tuple[int, int] | None:
        if not needle:
            return None
        best: int | None = None
        for found in self._occurrences(needle):
            if near is None:
                best = found
                break
            if best is None or abs(self._origin[found] - near) < abs(self._origin[best] - near):
                best = found
        return None if best is None else self._span(best, needle)

    def heading_at(self, offset: int) -> str | None:
        """The nearest heading at or before ``offset``."""
        position = bisect_right(self._heading_offsets, offset) - 1
        return self._headings[position] if position >= 0 else None

    def page_at(self, offset: int) -> int | None:
        """The PDF page whose text contains ``offset``, if page spans are known."""
        position = bisect_right(self._page_starts, offset) - 1
        if position < 0:
            return None
        span = self._pages[position]
        return span.page if span.start <= offset < max(span.end, span.start + 1) else None

    def block_at(self, offset: int) -> int | None:
        """The position in the block map of the block containing ``offset``, or ``None``."""
        position = bisect_right(self._block_starts, offset) - 1
        if position >= 0 and offset < self._blocks[position].end:
            return position
        return None

    def verify(self, excerpt: str, *, near: int | None = None) -> VerifiedExcerpt | RejectedExcerpt:
        """Find ``excerpt`` and describe where it is, or say why it cannot be evidence.

        Of several occurrences the first that respects the block rules is taken (the one
        nearest ``near`` when given); the reason given for a refusal is that of the first
        occurrence.
        """
        needle = normalize_for_matching(excerpt)
        if not needle:
            return RejectedExcerpt(excerpt, "The excerpt is empty.")
        breaks = self._breaks(excerpt, needle) if self._blocks else frozenset()
        reason: str | None = None
        chosen: tuple[int, int, bool] | None = None
        for found in self._occurrences(needle):
            start, end = self._span(found, needle)
            problem, code = self._block_problem(found, needle, start, end, breaks)
            if problem is not None:
                reason = reason or problem
                continue
            if chosen is None or (near is not None and abs(start - near) < abs(chosen[0] - near)):
                chosen = (start, end, code)
            if near is None:
                break
        if chosen is None:
            return RejectedExcerpt(excerpt, reason or NOT_IN_SNAPSHOT)
        start, end, code = chosen
        # Blocks are stored normalised, so with a block map the exact slice reads as the page
        # does, with the separators (line breaks, tabs) an excerpt of consecutive blocks shows.
        text = self.text[start:end] if self._blocks else " ".join(self.text[start:end].split())
        return VerifiedExcerpt(
            start=start,
            end=end,
            text=text,
            heading=self.heading_at(start),
            page=self.page_at(start),
            code=code,
        )

    @staticmethod
    def _breaks(excerpt: str, needle: str) -> frozenset[int]:
        """Positions of ``needle`` (the excerpt's matching form) where the excerpt itself
        breaks the line."""
        marked = normalize_for_matching(_BREAK_RUN.sub(_BREAK_MARK, excerpt.strip()))
        if len(marked) != len(needle) or marked.replace(_BREAK_MARK, " ") != needle:
            return frozenset()  # the excerpt carries the marker itself; no break is known
        return frozenset(i for i, char in enumerate(marked) if char == _BREAK_MARK)

    def _block_problem(
        self, found: int, needle: str, start: int, end: int, breaks: frozenset[int]
    ) -> tuple[str | None, bool]:
        """Why the occurrence at ``found`` (original span ``[start, end)``) breaks the block
        rules, or ``None``; and whether it is a whole code block."""
        if not self._blocks:
            return None, False
        first, last = self.block_at(start), self.block_at(end - 1)
        if first is None or last is None:
            # Text outside every block (only separators are, and excerpts are stripped).
            return NOT_IN_SNAPSHOT, False
        spanned = self._blocks[first : last + 1]
        if any(block.kind == "code" for block in spanned):
            whole = len(spanned) == 1 and (start, end) == (spanned[0].start, spanned[0].end)
            return (None, True) if whole else (PART_OF_CODE, False)
        for block, following in zip(spanned, spanned[1:], strict=False):
            if following.after_gap:
                return ACROSS_GAP, False
            # The separator after ``block`` is one space of the normalised text.
            position = bisect_left(self._origin, block.end) - found
            if position not in breaks:
                return CROSSES_BLOCKS, False
        return None, False


def verify_excerpt(
    excerpt: str,
    snapshot_text: str,
    *,
    headings: Sequence[Heading] = (),
    pages: Sequence[PageSpan] = (),
    blocks: Sequence[Block] = (),
) -> VerifiedExcerpt | RejectedExcerpt:
    """Verify one excerpt against a snapshot (builds a throw-away :class:`SnapshotIndex`;
    use the index directly to verify many excerpts of the same snapshot)."""
    return SnapshotIndex(snapshot_text, headings=headings, pages=pages, blocks=blocks).verify(
        excerpt
    )


# --------------------------------------------------------------------------------------------
# Evidence construction
# --------------------------------------------------------------------------------------------


def to_basis_points(value: float) -> int:
    """A 0–1 score as basis points (0–10000), clamped."""
    return max(0, min(BASIS_POINTS, round(value * BASIS_POINTS)))


def normalize_claim_key(claim_key: str | None) -> str | None:
    """A claim key in comparable form: ``"France GDP (2023)"`` → ``"france_gdp_2023"``."""
    if claim_key is None:
        return None
    decomposed = unicodedata.normalize("NFKD", claim_key)
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
    key = re.sub(r"[^0-9a-z]+", "_", folded).strip("_")
    return key[:200] or None


def evidence_hash(run_id: str, source_id: str, excerpt: str, claim_key: str | None) -> str:
    """The idempotency key of evidence: stable over run, source, normalised excerpt and claim
    key, so re-extracting a source after a resume never duplicates evidence."""
    parts = (
        "evidence-v1",
        run_id,
        source_id,
        normalize_for_matching(excerpt),
        normalize_claim_key(claim_key) or "",
    )
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()


def evidence_id_for(hash_hex: str) -> str:
    """A short, stable, URL- and anchor-safe evidence id derived from the evidence hash."""
    return f"ev-{hash_hex[:20]}"


@dataclass
class VerificationOutcome:
    """The result of verifying one source's evidence candidates."""

    evidence: list[Evidence] = field(default_factory=list)
    rejected: list[RejectedExcerpt] = field(default_factory=list)
    duplicates: int = 0

    @property
    def rejected_count(self) -> int:
        return len(self.rejected)


def verify_candidates(
    candidates: Iterable[EvidenceCandidate],
    *,
    run_id: str,
    source_id: str,
    document: SourceDocument,
    index: SnapshotIndex | None = None,
    question_ids: Collection[str] | None = None,
    known_hashes: Collection[str] = (),
) -> VerificationOutcome:
    """Turn extraction output into verified :class:`Evidence` for one source.

    Each excerpt must occur in ``document.text`` and respect its block map (see
    :class:`SnapshotIndex`); the locator (offsets, nearest heading, PDF page, whether it is
    code, snapshot hash) is computed from the snapshot. Candidates naming no question of the
    plan (when ``question_ids`` is given) are rejected; candidates whose hash is in
    ``known_hashes`` or repeated within the batch are skipped and counted as duplicates.
    """
    index = index or SnapshotIndex(
        document.text, headings=document.headings, pages=document.pages, blocks=document.blocks
    )
    outcome = VerificationOutcome()
    seen = set(known_hashes)
    for candidate in candidates:
        relevant_questions = [
            qid for qid in candidate.question_ids if question_ids is None or qid in question_ids
        ]
        if not relevant_questions:
            outcome.rejected.append(
                RejectedExcerpt(candidate.excerpt, "The evidence names no question of the plan.")
            )
            continue
        result = index.verify(candidate.excerpt)
        if isinstance(result, RejectedExcerpt):
            outcome.rejected.append(result)
            continue
        if len(result.text) > EXCERPT_MAX_CHARS:
            outcome.rejected.append(
                RejectedExcerpt(
                    candidate.excerpt,
                    f"The excerpt is longer than {EXCERPT_MAX_CHARS} characters in the source.",
                )
            )
            continue
        claim_key = normalize_claim_key(candidate.claim_key)
        digest = evidence_hash(run_id, source_id, result.text, claim_key)
        if digest in seen:
            outcome.duplicates += 1
            continue
        seen.add(digest)
        outcome.evidence.append(
            Evidence(
                id=evidence_id_for(digest),
                run_id=run_id,
                source_id=source_id,
                excerpt=result.text,
                locator=_locator(document, result),
                question_ids=list(dict.fromkeys(relevant_questions)),
                stance=candidate.stance,
                claim_key=claim_key,
                normalized_value=(candidate.normalized_value or "").strip() or None,
                scope=candidate.scope,
                relevance_bp=to_basis_points(candidate.relevance),
                confidence_bp=to_basis_points(candidate.confidence),
                evidence_hash=digest,
            )
        )
    return outcome


def _locator(document: SourceDocument, found: VerifiedExcerpt) -> TextLocator | PdfLocator:
    if document.kind == "pdf":
        return PdfLocator(
            page=found.page,
            start=found.start,
            end=found.end,
            heading=found.heading,
            snapshot_hash=document.content_hash,
        )
    return TextLocator(
        kind=document.kind,
        start=found.start,
        end=found.end,
        heading=found.heading,
        snapshot_hash=document.content_hash,
        code=found.code,
    )


# --------------------------------------------------------------------------------------------
# Duplicates, mirrors and independence
# --------------------------------------------------------------------------------------------


def snapshot_content_hash(text: str) -> str:
    """SHA-256 of a snapshot's text after NFKC and whitespace normalisation, so that mirrors
    differing only in layout whitespace share a content hash."""
    normalized = " ".join(unicodedata.normalize("NFKC", text).split())
    return hashlib.sha256(normalized.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class DuplicateMatch:
    """An acquired document that repeats a source the run already has."""

    source_id: str
    reason: Literal["canonical_url", "content_hash"]


def find_duplicate(
    document: SourceDocument, sources: Iterable[SourceRecord], *, source_id: str | None = None
) -> DuplicateMatch | None:
    """The already fetched source ``document`` duplicates (same canonical URL hash, or the same
    content hash: a mirror or syndicated copy), or ``None``. ``source_id`` is the document's
    own source, which is never its own duplicate."""
    content_match: DuplicateMatch | None = None
    for record in sources:
        if record.id == source_id or record.status != "fetched":
            continue
        if record.canonical_url_hash and record.canonical_url_hash == document.canonical_url_hash:
            return DuplicateMatch(record.id, "canonical_url")
        if content_match is None and record.content_hash == document.content_hash:
            content_match = DuplicateMatch(record.id, "content_hash")
    return content_match


def normalize_publisher(publisher: str | None) -> str:
    """A publisher name in comparable form (case, accents and punctuation folded)."""
    if not publisher:
        return ""
    decomposed = unicodedata.normalize("NFKD", publisher)
    folded = "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()
    words = re.findall(r"[0-9a-z]+", folded)
    if words and words[0] == "the":
        words = words[1:]
    return " ".join(words)


def _site_of(url: str | None) -> str | None:
    if not url:
        return None
    try:
        return registrable_domain(hostname(url))
    except UnsupportedURLError:
        return None


class _UnionFind:
    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, item: str) -> str:
        self.parent.setdefault(item, item)
        while self.parent[item] != item:
            self.parent[item] = self.parent[self.parent[item]]
            item = self.parent[item]
        return item

    def union(self, first: str, second: str) -> None:
        root_a, root_b = self.find(first), self.find(second)
        if root_a != root_b:
            # The smaller root wins so cluster names do not depend on input order.
            low, high = sorted((root_a, root_b))
            self.parent[high] = low


def assign_independence_clusters(sources: Iterable[SourceRecord]) -> dict[str, str]:
    """Group sources that are not independent of each other; returns source id → cluster.

    Two sources share a cluster when they share a registrable domain, a publisher, a content
    hash (mirrors and syndicated copies), when one declares a canonical URL on the other's
    site, or when one is recorded as a duplicate of the other. A scholarly work (a source with
    a DOI, arXiv id, PMID or PMCID in its ``work_ids`` or its URL) is grouped by that identity
    instead of its domain and publisher: two copies of a paper are one cluster, while two
    papers on arXiv, in PubMed or in one journal are different studies. Grouping is
    transitive. The cluster name is the smallest ``domain:`` key of the group (else its
    smallest key), so it reads like ``domain:example.org``.
    """
    groups = _UnionFind()
    records = list(sources)
    for record in records:
        node = f"source:{record.id}"
        groups.find(node)
        keys = [f"work:{key}" for key in work_cluster_keys(record)]
        if not keys:
            site = _site_of(record.url) or (
                registrable_domain(record.domain) if record.domain else None
            )
            if site:
                keys.append(f"domain:{site}")
            publisher = normalize_publisher(record.publisher)
            if publisher:
                keys.append(f"publisher:{publisher}")
        if record.content_hash:
            keys.append(f"content:{record.content_hash}")
        declared = _site_of(record.declared_canonical_url)
        if declared:
            keys.append(f"domain:{declared}")
        if record.duplicate_of:
            keys.append(f"source:{record.duplicate_of}")
        for key in keys:
            groups.union(node, key)
    members: dict[str, list[str]] = {}
    for item in list(groups.parent):
        members.setdefault(groups.find(item), []).append(item)
    names: dict[str, str] = {}
    for root, items in members.items():
        domains = sorted(item for item in items if item.startswith("domain:"))
        names[root] = domains[0] if domains else sorted(items)[0]
    return {record.id: names[groups.find(f"source:{record.id}")] for record in records}


def count_independent(source_ids: Iterable[str], clusters: dict[str, str]) -> int:
    """How many independent clusters the given sources represent."""
    return len({clusters.get(source_id, f"source:{source_id}") for source_id in source_ids})


# --------------------------------------------------------------------------------------------
# Contradictions
# --------------------------------------------------------------------------------------------

_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(.*)$")
_SCOPE_FIELDS = ("as_of", "geography", "population", "definition", "methodology")


def comparable_value(value: str) -> str:
    """A value in comparable form: ``"3.10 %"`` and ``"3.1%"`` compare equal, as do
    ``"1,000 people"`` and ``"1000 people"``. Values are compared, never combined."""
    folded = " ".join(unicodedata.normalize("NFKC", value).casefold().split())
    match = _NUMBER.match(folded.replace(",", ""))
    if not match:
        return folded
    try:
        number = Decimal(match.group(1)).normalize()
    except InvalidOperation:
        return folded
    unit = match.group(2).replace(" ", "")
    return f"{number:f}{unit}"


def find_contradictions(evidence: Iterable[Evidence]) -> list[ContradictionCandidate]:
    """Contradiction candidates: evidence sharing a claim key that reports different values,
    or that both supports and contradicts the claim.

    Every position is kept with its own evidence and scope; the scope fields that differ
    (date, geography, population, definition, methodology) are listed so the decision model
    and the reader can tell a scope difference from a genuine conflict.
    """
    by_claim: dict[str, list[Evidence]] = {}
    for item in evidence:
        if item.claim_key:
            by_claim.setdefault(item.claim_key, []).append(item)
    found: list[ContradictionCandidate] = []
    for claim_key in sorted(by_claim):
        items = by_claim[claim_key]
        positions: dict[tuple[str, str], list[Evidence]] = {}
        for item in items:
            if item.normalized_value:
                positions.setdefault(("value", comparable_value(item.normalized_value)), []).append(
                    item
                )
            elif item.stance in ("supports", "contradicts"):
                positions.setdefault(("stance", item.stance), []).append(item)
        values = [key for key in positions if key[0] == "value"]
        stance_conflict = {key[1] for key in positions if key[0] == "stance"} == {
            "supports",
            "contradicts",
        }
        if len(values) < 2 and not stance_conflict:
            continue
        if not stance_conflict:
            # Value-less support for one side adds nothing to a conflict between values.
            positions = {key: group for key, group in positions.items() if key[0] == "value"}
        involved = [item for group in positions.values() for item in group]
        found.append(
            ContradictionCandidate(
                key=f"claim:{claim_key}",
                claim_key=claim_key,
                positions=[
                    ContradictionPosition(
                        value=group[0].normalized_value,
                        stance=group[0].stance,
                        evidence_ids=[item.id for item in group],
                        scopes=[item.scope for item in group],
                    )
                    for _, group in sorted(positions.items())
                ],
                evidence_ids=sorted(item.id for item in involved),
                question_ids=sorted({qid for item in involved for qid in item.question_ids}),
                scope_differences=_scope_differences(item.scope for item in involved),
            )
        )
    return found


def _scope_differences(scopes: Iterable[EvidenceScope]) -> dict[str, list[str]]:
    collected: dict[str, set[str]] = {name: set() for name in _SCOPE_FIELDS}
    for scope in scopes:
        for name in _SCOPE_FIELDS:
            value = getattr(scope, name)
            if value:
                collected[name].add(value.strip())
    return {name: sorted(values) for name, values in collected.items() if len(values) > 1}
