"""Evidence construction: basis points, claim keys, evidence hashes and verified candidates."""

import hashlib
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field

from research.engine.contracts import (
    BASIS_POINTS,
    EXCERPT_MAX_CHARS,
    Evidence,
    EvidenceCandidate,
    PdfLocator,
    SourceDocument,
    TextLocator,
)
from research.engine.ledger.excerpts import (
    RejectedExcerpt,
    SnapshotIndex,
    VerifiedExcerpt,
    normalize_for_matching,
)
from research.engine.text import fold


def to_basis_points(value: float) -> int:
    """A 0–1 score as basis points (0–10000), clamped."""
    return max(0, min(BASIS_POINTS, round(value * BASIS_POINTS)))


def normalize_claim_key(claim_key: str | None) -> str | None:
    """A claim key in comparable form: ``"France GDP (2023)"`` → ``"france_gdp_2023"``."""
    if claim_key is None:
        return None
    key = re.sub(r"[^0-9a-z]+", "_", fold(claim_key)).strip("_")
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


def content_order(item: Evidence) -> tuple[str, int, int, str, str]:
    """A tie-break for evidence of equal rank that does not depend on the run: the excerpt's
    matching form, where it sits, then the page it was quoted from (the snapshot's content
    hash), and only then the id. Ids hash the run id and the source id (random per run), so
    ordering ties by id gave the same question on the same web a different report every run;
    the same sentence at the same offset of two copies of one page (a mirror, a syndicated
    copy) still tied on text and place, and the report led with either copy by chance."""
    locator = item.locator
    return (
        normalize_for_matching(item.excerpt),
        locator.start,
        locator.end,
        locator.snapshot_hash,
        item.id,
    )


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
