"""Freezing a report version: the report and the evidence it was written from, as of now.

Called by the store in the transaction that saves a report, so a report is never visible
without its frozen evidence. The record is content-addressed: saving the same report over the
same evidence again (a worker repeating its last step) finds the existing version instead of
adding one, and any change — a retried synthesis, new evidence — becomes the next version.
"""

from __future__ import annotations

from collections.abc import Callable

from research.engine.answers import FrozenEvidence, FrozenSource, citation_map, frozen_digest
from research.engine.contracts import Evidence, Report
from research.engine.urls import safe_source_url
from research.models import ReportSnapshot, ResearchEvidence, ResearchRun

EvidenceContract = Callable[[ResearchEvidence], Evidence]


def frozen_evidence_of(
    run_id: object, report: Report, *, as_contract: EvidenceContract
) -> FrozenEvidence:
    """The run's in-scope verified evidence and its sources, with ``report``, as one record."""
    rows = list(
        ResearchEvidence.objects.filter(run_id=run_id, out_of_scope=False)
        .select_related("source")
        .order_by("created_at", "id")
    )
    sources: dict[str, FrozenSource] = {}
    for row in rows:
        source = row.source
        sources.setdefault(
            str(source.pk),
            FrozenSource(
                id=str(source.pk),
                title=source.title,
                url=safe_source_url(source.canonical_url or source.url) or "",
                domain=source.domain,
            ),
        )
    return FrozenEvidence(
        run_id=str(run_id),
        report=report,
        evidence=[as_contract(row) for row in rows],
        sources=list(sources.values()),
        citations=citation_map(report),
    )


def snapshot_freeze(
    run_id: object, report: Report, *, as_contract: EvidenceContract
) -> ReportSnapshot:
    """Store the frozen record of ``report`` unless this exact record is already stored.

    Call inside the transaction that saves the report, holding the run's row lock (the store's
    write does), so two saves cannot both take the same version number. ``as_contract`` turns
    an evidence row into the engine's contract (the store's ``evidence_from_row``)."""
    content = frozen_evidence_of(run_id, report, as_contract=as_contract)
    digest = frozen_digest(content)
    existing = ReportSnapshot.objects.filter(run_id=run_id, content_hash=digest).first()
    if existing is not None:
        return existing
    ResearchRun.objects.select_for_update().filter(pk=run_id).first()
    latest = ReportSnapshot.objects.filter(run_id=run_id).order_by("-version").first()
    return ReportSnapshot.objects.create(
        run_id=run_id,
        version=(latest.version + 1) if latest else 1,
        content_hash=digest,
        content=content.model_dump(mode="json"),
    )


def latest_snapshot(run: ResearchRun) -> ReportSnapshot | None:
    """The newest frozen version of the run's report, or None."""
    return ReportSnapshot.objects.filter(run=run).order_by("-version").first()
