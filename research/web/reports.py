"""Report pages, evidence pop-ups and the Markdown and PDF exports (signed-in and shared).

Every run is looked up through ``research.access``: a person who may not see the run gets a
404, and a share link shows only what its run holds.
"""

from __future__ import annotations

import uuid

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET
from django.views.decorators.vary import vary_on_headers

from research.access import can_control_run
from research.engine.citations import describe_locator
from research.models import ResearchEvidence, ResearchRun
from research.selectors import run_get_by_share_token, run_get_for_user
from research.web.charts import report_charts
from research.web.exports import (
    evidence_contract,
    pdf_unavailable_reason,
    report_document,
    report_markdown,
    report_pdf,
    statements_citing,
)
from research.web.forms import (
    RefineForm,
)

# ---------------------------------------------------------------------------------------------
# Dashboard and composer
# ---------------------------------------------------------------------------------------------


# ---------------------------------------------------------------------------------------------
# Report, evidence and exports (signed-in and shared)
# ---------------------------------------------------------------------------------------------


def _citation_number(request: HttpRequest) -> int | None:
    try:
        return int(request.GET.get("n", ""))
    except ValueError:
        return None


def _report_response(
    request: HttpRequest, run: ResearchRun, *, share_token: str = ""
) -> HttpResponse:
    if share_token:

        def evidence_url(evidence_id: str, number: int | None) -> str:
            path = reverse("research:shared_evidence", args=[share_token, evidence_id])
            return f"{path}?n={number}" if number else path
    else:

        def evidence_url(evidence_id: str, number: int | None) -> str:
            path = reverse("research:evidence_detail", args=[run.pk, evidence_id])
            return f"{path}?n={number}" if number else path

    document = report_document(run, evidence_url=evidence_url)
    context = {
        "run": run,
        "doc": document,
        "share_token": share_token,
        "read_only": bool(share_token),
        "may_control": not share_token and can_control_run(request.user, run),
        "refine_form": RefineForm(),
        "pdf_unavailable": pdf_unavailable_reason(),
        "charts": report_charts(run) if document else [],
    }
    return render(request, "research/report.html", context)


def _evidence_response(
    request: HttpRequest, run: ResearchRun, evidence_id: str, *, share_token: str = ""
) -> HttpResponse:
    evidence = get_object_or_404(
        ResearchEvidence.objects.select_related("source").defer(
            "source__snapshot_text", "source__snapshot_blocks", "source__metadata"
        ),
        run=run,
        pk=evidence_id,
    )
    contract = evidence_contract(evidence)
    template = "research/evidence_detail.html"
    if request.htmx:
        template += "#evidence"
    context = {
        "run": run,
        "item": evidence,
        "source": evidence.source,
        "locator": describe_locator(contract) if contract else "",
        "number": _citation_number(request),
        "share_token": share_token,
        "cited_by": statements_citing(run, evidence.pk),
    }
    return render(request, template, context)


def _markdown_response(run: ResearchRun) -> HttpResponse:
    text = report_markdown(run)
    if text is None:
        raise Http404("This research has no report yet.")
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{_export_name(run)}.md"'
    return response


def _pdf_response(request: HttpRequest, run: ResearchRun, *, back_url: str) -> HttpResponse:
    document = report_document(run, evidence_url=lambda evidence_id, number: f"#citation-{number}")
    if document is None:
        raise Http404("This research has no report yet.")
    reason = pdf_unavailable_reason()
    if reason is not None:
        context = {"run": run, "reason": reason, "back_url": back_url}
        return render(request, "research/pdf_unavailable.html", context, status=503)
    response = HttpResponse(report_pdf(document), content_type="application/pdf")
    response["Content-Disposition"] = f'attachment; filename="{_export_name(run)}.pdf"'
    return response


def _export_name(run: ResearchRun) -> str:
    return slugify(run.title or run.question)[:60] or f"research-{run.pk}"


@login_required
@require_GET
def run_report(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    return _report_response(request, run_get_for_user(request.user, run_id))


@login_required
@require_GET
@vary_on_headers("HX-Request")
def evidence_detail(request: HttpRequest, run_id: uuid.UUID, evidence_id: str) -> HttpResponse:
    return _evidence_response(request, run_get_for_user(request.user, run_id), evidence_id)


@login_required
@require_GET
def report_markdown_export(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    return _markdown_response(run_get_for_user(request.user, run_id))


@login_required
@require_GET
def report_pdf_export(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    return _pdf_response(request, run, back_url=reverse("research:run_report", args=[run.pk]))


@require_GET
def run_shared(request: HttpRequest, share_token: str) -> HttpResponse:
    """The read-only report behind a share link; no sign-in needed."""
    return _report_response(request, run_get_by_share_token(share_token), share_token=share_token)


@require_GET
@vary_on_headers("HX-Request")
def shared_evidence(request: HttpRequest, share_token: str, evidence_id: str) -> HttpResponse:
    run = run_get_by_share_token(share_token)
    return _evidence_response(request, run, evidence_id, share_token=share_token)


@require_GET
def shared_markdown(request: HttpRequest, share_token: str) -> HttpResponse:
    return _markdown_response(run_get_by_share_token(share_token))


@require_GET
def shared_pdf(request: HttpRequest, share_token: str) -> HttpResponse:
    run = run_get_by_share_token(share_token)
    return _pdf_response(request, run, back_url=reverse("research:run_shared", args=[share_token]))
