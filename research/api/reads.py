"""What a run produced, read-only: its steps, sources and evidence, and its report with the
Markdown and PDF exports (the share-link routes in ``research.api.shared`` reuse these)."""

from __future__ import annotations

from uuid import UUID

from django.db.models import Count
from django.http import HttpRequest, HttpResponse
from django.utils.text import slugify
from ninja import Query, Schema
from pydantic import Field

from research.api import schemas as s
from research.api.base import (
    READ,
    E,
    Paging,
    _evidence_out,
    _page,
    _run,
    _run_links,
    _source_ref,
    _url,
    api,
)
from research.api.errors import ApiError, not_found
from research.engine.contracts import SourceStatus
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.web.exports import (
    pdf_unavailable_reason,
    report_document,
    report_markdown,
    report_pdf,
)

# ---------------------------------------------------------------------------------------------
# Steps, sources, evidence
# ---------------------------------------------------------------------------------------------


def _step_out(step: ResearchStep) -> dict:
    return {
        "id": step.pk,
        "kind": step.kind,
        "status": step.status,
        "iteration": step.iteration,
        "attempt": step.attempt,
        "summary": step.summary,
        "error": step.error,
        "question_ids": step.question_ids or [],
        "created_at": step.created_at,
        "started_at": step.started_at,
        "completed_at": step.completed_at,
    }


@api.get("/runs/{run_id}/steps", response={200: s.StepPage, **READ}, tags=["progress"])
def step_list(request: HttpRequest, run_id: UUID, paging: Query[Paging]):
    """The run's durable steps, oldest first."""
    run = _run(request, run_id)
    steps = (
        ResearchStep.objects.filter(run=run).defer("input", "output").order_by("created_at", "id")
    )
    return _page(steps, paging, _step_out)


def _source_out(source: ResearchSource) -> dict:
    return {
        "id": source.pk,
        "url": source.url,
        "canonical_url": source.canonical_url,
        "title": source.title,
        "publisher": source.publisher,
        "domain": source.domain,
        "author": source.author,
        "published_at": source.published_at,
        "kind": source.kind,
        "status": source.status,
        "source_class": source.source_class,
        "quality": source.quality,
        "retrieved_at": source.retrieved_at,
        "mime_type": source.mime_type,
        "content_bytes": source.content_bytes,
        "truncated": source.truncated,
        "duplicate_of_id": source.duplicate_of_id,
        "last_error": source.last_error,
        "evidence_count": source.evidence_count,
    }


class SourceFilters(Schema):
    status: SourceStatus | None = None


@api.get("/runs/{run_id}/sources", response={200: s.SourcePage, **READ}, tags=["progress"])
def source_list(
    request: HttpRequest, run_id: UUID, filters: Query[SourceFilters], paging: Query[Paging]
):
    """Every source the run found: metadata, status and quality."""
    run = _run(request, run_id)
    sources = (
        ResearchSource.objects.filter(run=run)
        .defer("snapshot_text", "snapshot_blocks", "metadata")
        .annotate(evidence_count=Count("evidence"))
        .order_by("created_at", "id")
    )
    if filters.status:
        sources = sources.filter(status=filters.status)
    return _page(sources, paging, _source_out)


_EVIDENCE = ResearchEvidence.objects.select_related("source").defer(
    "source__snapshot_text", "source__snapshot_blocks", "source__metadata"
)


class EvidenceFilters(Schema):
    source: UUID | None = Field(None, description="Only excerpts of this source.")


@api.get("/runs/{run_id}/evidence", response={200: s.EvidencePage, **READ}, tags=["progress"])
def evidence_list(
    request: HttpRequest, run_id: UUID, filters: Query[EvidenceFilters], paging: Query[Paging]
):
    """Verified excerpts: the exact text, where it is in the source, and the source."""
    run = _run(request, run_id)
    evidence = _EVIDENCE.filter(run=run).order_by("created_at", "id")
    if filters.source:
        evidence = evidence.filter(source_id=filters.source)
    return _page(evidence, paging, _evidence_out)


@api.get(
    "/runs/{run_id}/evidence/{evidence_id}",
    response={200: s.EvidenceOut, **READ},
    tags=["progress"],
)
def evidence_get(request: HttpRequest, run_id: UUID, evidence_id: str):
    run = _run(request, run_id)
    item = _EVIDENCE.filter(run=run, pk=evidence_id[:40]).first()
    if item is None:
        raise not_found("No such evidence in this run.")
    return _evidence_out(item)


# ---------------------------------------------------------------------------------------------
# Report and exports (signed in, and behind a share link)
# ---------------------------------------------------------------------------------------------


def _report_out(request: HttpRequest, run: ResearchRun, evidence_path) -> dict:
    document = report_document(
        run, evidence_url=lambda eid, number: _url(request, evidence_path(eid))
    )
    if document is None:
        raise not_found("This research has no report yet.")
    numbers: dict[str, int] = {}
    citations = []
    for entry in document.citations:
        ids = [entry.evidence.pk, *entry.alias_ids]
        for evidence_id in ids:
            numbers[evidence_id] = entry.number
        citations.append(
            {
                "number": entry.number,
                "evidence_ids": ids,
                "excerpt": entry.evidence.excerpt,
                "locator": entry.locator,
                "source": _source_ref(entry.source),
                "link": entry.link,
                "evidence_url": entry.url,
            }
        )
    return {
        "run_id": run.pk,
        "status": run.status,
        "partial": document.report.partial,
        "report": document.report,
        "citations": citations,
        "citation_numbers": numbers,
        "missing_sections": document.missing_sections,
        "links": {},
    }


def _export_name(run: ResearchRun) -> str:
    return slugify(run.title or run.question)[:60] or f"research-{run.pk}"


def _markdown(run: ResearchRun) -> HttpResponse:
    text = report_markdown(run)
    if text is None:
        raise not_found("This research has no report yet.")
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_export_name(run)}.md"'
    return response


def _pdf(run: ResearchRun) -> HttpResponse:
    document = report_document(run, evidence_url=lambda eid, number: f"#citation-{number}")
    if document is None:
        raise not_found("This research has no report yet.")
    reason = pdf_unavailable_reason()
    if reason is not None:
        raise ApiError(503, "pdf_unavailable", reason)
    response = HttpResponse(report_pdf(document), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{_export_name(run)}.pdf"'
    return response


_MARKDOWN_DOC = {
    "responses": {
        200: {
            "description": "The report as Markdown.",
            "content": {"text/markdown": {"schema": {"type": "string"}}},
        }
    }
}
_PDF_DOC = {
    "responses": {
        200: {
            "description": "The report as PDF.",
            "content": {"application/pdf": {"schema": {"type": "string", "format": "binary"}}},
        }
    }
}


@api.get("/runs/{run_id}/report", response={200: s.ReportOut, **READ}, tags=["report"])
def report_get(request: HttpRequest, run_id: UUID):
    """The validated report with every citation resolved to its excerpt and source."""
    run = _run(request, run_id)
    out = _report_out(request, run, lambda eid: f"/api/v1/runs/{run.pk}/evidence/{eid}")
    out["links"] = {k: v for k, v in _run_links(request, run).items() if k.startswith("report")}
    return out


@api.get(
    "/runs/{run_id}/report.md",
    response={200: None, **READ},
    tags=["report"],
    openapi_extra=_MARKDOWN_DOC,
)
def report_markdown_get(request: HttpRequest, run_id: UUID):
    return _markdown(_run(request, run_id))


@api.get(
    "/runs/{run_id}/report.pdf",
    response={200: None, 503: E, **READ},
    tags=["report"],
    openapi_extra=_PDF_DOC,
)
def report_pdf_get(request: HttpRequest, run_id: UUID):
    return _pdf(_run(request, run_id))
