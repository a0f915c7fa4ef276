"""The library tables behind the sources adapter's ``DocumentCatalog``.

The policy names the documents (a whole library or chosen documents); who may name which was
checked when the policy was saved (``research.libraries.check_policy_documents``). Indexes are
built from the stored snapshots and kept for the few document sets in use, keyed by every
document's id and file hash, so an upload or a deletion is seen by the next search.
"""

from __future__ import annotations

import threading
import uuid
from collections import OrderedDict
from collections.abc import Sequence

from django.db.models import QuerySet

from research.engine.contracts import SearchCandidate, SourceDocument, SourcePolicy
from research.engine.urls import document_address
from research.models import LibraryDocument
from research.sources.documents.search import DocumentIndex, document_candidates

# Passages asked of the index per search: several per document, so that the documents with
# the best passages are found even when one long document holds many good ones.
_PASSAGES_PER_RESULT = 5
# Index sets kept in memory: a worker serves a few runs at once, each with one document set.
_CACHED_INDEXES = 8


def _uuid(value: str | None) -> uuid.UUID | None:
    try:
        return uuid.UUID(str(value))
    except ValueError:
        return None


def documents_for_policy(policy: SourcePolicy) -> QuerySet[LibraryDocument]:
    """The documents a source policy names (none when it names none)."""
    if policy.documents == "library" and (library := _uuid(policy.library_id)):
        return LibraryDocument.objects.filter(library_id=library)
    if policy.documents == "selected":
        ids = [i for i in map(_uuid, policy.document_ids) if i is not None]
        return LibraryDocument.objects.filter(pk__in=ids)
    return LibraryDocument.objects.none()


class LibraryCatalog:
    """Searches and loads the documents of a run's source policy (``DocumentCatalog``)."""

    def __init__(self) -> None:
        self._indexes: OrderedDict[tuple[tuple[str, str], ...], DocumentIndex] = OrderedDict()
        self._lock = threading.Lock()

    def index(self, policy: SourcePolicy) -> DocumentIndex:
        rows = documents_for_policy(policy).order_by("pk")
        key = tuple((str(pk), digest) for pk, digest in rows.values_list("pk", "file_sha256"))
        with self._lock:
            if key in self._indexes:
                self._indexes.move_to_end(key)
                return self._indexes[key]
        built = DocumentIndex(load_snapshots(rows.filter(pk__in=[pk for pk, _ in key])))
        with self._lock:
            self._indexes[key] = built
            while len(self._indexes) > _CACHED_INDEXES:
                self._indexes.popitem(last=False)
        return built

    def search(self, query: str, *, policy: SourcePolicy, limit: int) -> list[SearchCandidate]:
        hits = self.index(policy).search(query, limit=limit * _PASSAGES_PER_RESULT)
        return document_candidates(hits, limit=limit)

    def load(self, url: str, *, policy: SourcePolicy) -> SourceDocument | None:
        address = document_address(url)
        document_id = _uuid(address[1]) if address else None
        if document_id is None:
            return None
        row = documents_for_policy(policy).filter(pk=document_id).first()
        return SourceDocument.model_validate(row.snapshot) if row is not None else None


def load_snapshots(rows: QuerySet[LibraryDocument]) -> Sequence[SourceDocument]:
    """The stored snapshots of ``rows``, read back as the engine's contract."""
    return [
        SourceDocument.model_validate(snapshot)
        for snapshot in rows.values_list("snapshot", flat=True)
    ]
