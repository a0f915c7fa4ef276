"""The snapshot of a scholarly work that has no open-access full text: its abstract.

When no index names a full text we may read, the record itself is the source: title, authors,
venue, year, identifiers and the abstract the index gave, as a plain-text snapshot with the
same normalisation, bounds and hashing as a fetched page, so excerpts are verified against it
like any other. The snapshot is marked ``abstract_only``, so the source's quality notes and the report
say that only the abstract was read (``research.engine.quality.ABSTRACT_ONLY_NOTE``).
"""

from __future__ import annotations

from datetime import UTC, datetime

from research.engine.contracts import SearchCandidate, SourceDocument
from research.engine.urls import canonical_url, url_hash
from research.engine.works import reference_text
from research.sources.errors import unsupported
from research.sources.snapshot import SnapshotBuilder, bound_snapshot

ABSTRACT_HEADING = "Abstract"


def abstract_document(
    candidate: SearchCandidate, *, max_bytes: int, retrieved_at: datetime | None = None
) -> SourceDocument:
    """A ``SourceDocument`` made of a scholarly candidate's record, at the candidate's URL.

    Raises ``SourceError`` (unsupported) when the candidate has no scholarly metadata or its
    index gave no abstract: a bare title is not something to quote evidence from.
    """
    metadata = candidate.scholarly
    if metadata is None or not metadata.abstract:
        raise unsupported(f"{candidate.url} has no abstract to read and no open-access full text.")
    builder = SnapshotBuilder()
    builder.heading(metadata.title or candidate.title, 1)
    builder.paragraph(reference_text(metadata, title=False))
    builder.heading(ABSTRACT_HEADING, 2)
    builder.paragraph(metadata.abstract)
    snapshot = bound_snapshot(builder.text, builder.headings, [], max_bytes)
    identity = canonical_url(candidate.url)
    return SourceDocument(
        requested_url=candidate.url,
        final_url=candidate.url,
        canonical_url=identity,
        canonical_url_hash=url_hash(identity),
        content_hash=snapshot.content_hash,
        mime_type="text/plain",
        kind="text",
        title=(metadata.title or candidate.title)[:500],
        author=", ".join(metadata.authors) or None,
        publisher=metadata.venue,
        published_at=candidate.published_at or (str(metadata.year) if metadata.year else None),
        text=snapshot.text,
        headings=snapshot.headings,
        truncated=snapshot.truncated,
        content_bytes=snapshot.content_bytes,
        retrieved_at=retrieved_at or datetime.now(UTC),
        abstract_only=True,
    )
