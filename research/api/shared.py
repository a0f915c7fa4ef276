"""A run behind a share link: the run, its report, an excerpt and the exports, read-only and
with no token."""

from __future__ import annotations

from django.http import Http404, HttpRequest
from django.urls import reverse

from research.api import schemas as s
from research.api.base import E, _evidence_out, _url, api, run_out
from research.api.errors import not_found
from research.api.reads import _EVIDENCE, _MARKDOWN_DOC, _PDF_DOC, _markdown, _pdf, _report_out
from research.models import ResearchRun
from research.selectors import run_get_by_share_token


def _shared(share_token: str) -> ResearchRun:
    try:
        return run_get_by_share_token(share_token[:100])
    except Http404:
        raise not_found("This share link is not valid.") from None


SHARED = {404: E, 422: E}


@api.get("/shared/{share_token}", response={200: s.RunOut, **SHARED}, auth=None, tags=["shared"])
def shared_run(request: HttpRequest, share_token: str):
    """A run behind a share link, read-only; no token needed."""
    run = _shared(share_token)
    out = run_out(request, run, may_act=False)
    out["links"] = {
        "report": _url(request, f"/api/v1/shared/{share_token}/report"),
        "report_markdown": _url(request, f"/api/v1/shared/{share_token}/report.md"),
        "report_pdf": _url(request, f"/api/v1/shared/{share_token}/report.pdf"),
        "web": _url(request, reverse("research:run_shared", args=[run.share_token])),
    }
    return out


@api.get(
    "/shared/{share_token}/report",
    response={200: s.ReportOut, **SHARED},
    auth=None,
    tags=["shared"],
)
def shared_report(request: HttpRequest, share_token: str):
    run = _shared(share_token)
    return _report_out(request, run, lambda eid: f"/api/v1/shared/{share_token}/evidence/{eid}")


@api.get(
    "/shared/{share_token}/evidence/{evidence_id}",
    response={200: s.EvidenceOut, **SHARED},
    auth=None,
    tags=["shared"],
)
def shared_evidence(request: HttpRequest, share_token: str, evidence_id: str):
    run = _shared(share_token)
    item = _EVIDENCE.filter(run=run, pk=evidence_id[:40]).first()
    if item is None:
        raise not_found("No such evidence in this run.")
    return _evidence_out(item)


@api.get(
    "/shared/{share_token}/report.md",
    response={200: None, **SHARED},
    auth=None,
    tags=["shared"],
    openapi_extra=_MARKDOWN_DOC,
)
def shared_markdown(request: HttpRequest, share_token: str):
    return _markdown(_shared(share_token))


@api.get(
    "/shared/{share_token}/report.pdf",
    response={200: None, 503: E, **SHARED},
    auth=None,
    tags=["shared"],
    openapi_extra=_PDF_DOC,
)
def shared_pdf(request: HttpRequest, share_token: str):
    return _pdf(_shared(share_token))
