"""The evidence ledger: excerpt verification and locators, evidence hashing, duplicate and
mirror detection, independence clusters and contradiction candidates.

Nothing a model says about a source is trusted: an excerpt becomes evidence only after it has
been found in the stored snapshot, and its locator is computed here from the snapshot itself.
"""

from research.engine.ledger.contradictions import comparable_value, find_contradictions
from research.engine.ledger.evidence import (
    VerificationOutcome,
    content_order,
    evidence_hash,
    evidence_id_for,
    normalize_claim_key,
    to_basis_points,
    verify_candidates,
)
from research.engine.ledger.excerpts import (
    ACROSS_GAP,
    CROSSES_BLOCKS,
    NOT_IN_SNAPSHOT,
    PART_OF_CODE,
    RejectedExcerpt,
    SnapshotIndex,
    VerifiedExcerpt,
    clip_blocks,
    normalize_for_matching,
    verify_excerpt,
)
from research.engine.ledger.independence import (
    DuplicateMatch,
    assign_independence_clusters,
    find_duplicate,
    normalize_publisher,
    snapshot_content_hash,
)

__all__ = [
    "content_order",
    "ACROSS_GAP",
    "CROSSES_BLOCKS",
    "DuplicateMatch",
    "NOT_IN_SNAPSHOT",
    "PART_OF_CODE",
    "RejectedExcerpt",
    "SnapshotIndex",
    "VerificationOutcome",
    "VerifiedExcerpt",
    "assign_independence_clusters",
    "clip_blocks",
    "comparable_value",
    "evidence_hash",
    "evidence_id_for",
    "find_contradictions",
    "find_duplicate",
    "normalize_claim_key",
    "normalize_for_matching",
    "normalize_publisher",
    "snapshot_content_hash",
    "to_basis_points",
    "verify_candidates",
    "verify_excerpt",
]
