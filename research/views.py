from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from research.access import (
    can_control_run,
    can_edit_run,
    run_get_by_share_token,
    run_get_for_user,
    runs_visible_to,
)
from research.models import ResearchRun

RUNS_PER_PAGE = 25


@login_required
def dashboard(request: HttpRequest) -> HttpResponse:
    runs = runs_visible_to(request.user).select_related("owner", "team").order_by("-created_at")
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    return render(request, "research/dashboard.html", {"page": page})


@login_required
def run_detail(request: HttpRequest, run_id: str) -> HttpResponse:
    run = run_get_for_user(request.user, run_id, need="view")
    return _render_run(request, run, read_only=False)


def run_shared(request: HttpRequest, share_token: str) -> HttpResponse:
    run = run_get_by_share_token(share_token)
    return _render_run(request, run, read_only=True)


def _render_run(request: HttpRequest, run: ResearchRun, *, read_only: bool) -> HttpResponse:
    context = {
        "run": run,
        "read_only": read_only,
        "may_edit": not read_only and can_edit_run(request.user, run),
        "may_control": not read_only and can_control_run(request.user, run),
        "sources": run.sources.order_by("created_at"),
        "evidence_count": run.evidence.count(),
    }
    return render(request, "research/run_detail.html", context)
