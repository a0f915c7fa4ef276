"""Runs: start research, list the runs you may see, get one."""

from __future__ import annotations

from uuid import UUID

from django.db.models import Q
from django.http import HttpRequest
from ninja import Query, Schema, Status
from pydantic import Field

from accounts.models import Membership, Team
from research import services
from research.api import schemas as s
from research.api.base import (
    READ,
    WRITE,
    E,
    Paging,
    _page,
    _run,
    _token,
    _visible_runs,
    api,
    run_out,
)
from research.api.errors import ApiError
from research.engine.states import RunStatus
from research.models import ResearchRun


class RunFilters(Schema):
    status: RunStatus | None = None
    depth: s.Depth | None = None
    team: str | None = Field(None, max_length=110, description="A team's slug.")
    mine: bool = Field(False, description="Only runs you own.")
    q: str | None = Field(None, max_length=200, description="Words in the question or title.")


def _team_for_create(request: HttpRequest, slug: str | None) -> Team | None:
    token = _token(request)
    if slug is None:
        if token is not None and token.team_id is not None:
            return token.team
        return None
    membership = (
        Membership.objects.select_related("team")
        .filter(team__slug=slug, user_id=request.auth.pk)
        .first()
    )
    if membership is None:
        raise ApiError(422, "invalid", f"You are not a member of a team “{slug}”.", field="team")
    if token is not None and token.team_id not in (None, membership.team_id):
        raise ApiError(422, "invalid", "This token is limited to another team.", field="team")
    return membership.team


@api.post(
    "/runs",
    response={202: s.RunOut, 403: E, **WRITE},
    tags=["runs"],
    summary="Start research",
)
def run_create(request: HttpRequest, payload: s.RunCreateIn):
    """Create a durable run and start planning it. The plan then waits for approval, unless
    `auto_approve`. Sending the same `client_request_id` again returns the same run (202)."""
    team = _team_for_create(request, payload.team)
    visibility = payload.visibility or ("team" if team is not None else "private")
    if visibility == "team" and team is None:
        raise ApiError(422, "invalid", "Choose a team to share this research with.", field="team")
    if payload.report_template and payload.report_template not in s.REPORT_TEMPLATES:
        raise ApiError(422, "invalid", "No such report template.", field="report_template")
    try:
        run = services.run_create(
            owner=request.auth,
            question=payload.question,
            depth=payload.depth,
            source_policy=payload.source_policy.model_dump(mode="json")
            if payload.source_policy
            else None,
            team=team,
            visibility=visibility,
            report_template=payload.report_template,
            client_request_id=payload.client_request_id,
            auto_approve=payload.auto_approve,
        )
    except services.QueueUnavailable as exc:
        run = ResearchRun.objects.select_related("owner", "team").get(pk=exc.run_id)
    except services.QuotaExceeded as exc:
        raise ApiError(429, "quota_exceeded", str(exc), headers={"Retry-After": "60"}) from None
    except services.RunActionError as exc:
        raise ApiError(422, "invalid", str(exc)) from None
    run = ResearchRun.objects.select_related("owner", "team").get(pk=run.pk)
    return Status(202, run_out(request, run))


@api.get("/runs", response={200: s.RunPage, **READ}, tags=["runs"], summary="List runs")
def run_list(request: HttpRequest, filters: Query[RunFilters], paging: Query[Paging]):
    """Runs you may see, newest first."""
    runs = _visible_runs(request).select_related("owner", "team").order_by("-created_at")
    if filters.status:
        runs = runs.filter(status=filters.status)
    if filters.depth:
        runs = runs.filter(depth=filters.depth)
    if filters.team:
        runs = runs.filter(team__slug=filters.team)
    if filters.mine:
        runs = runs.filter(owner_id=request.auth.pk)
    if filters.q:
        for word in filters.q.split()[:10]:
            runs = runs.filter(Q(question__icontains=word) | Q(title__icontains=word))
    return _page(runs, paging, lambda run: run_out(request, run))


@api.get("/runs/{run_id}", response={200: s.RunOut, **READ}, tags=["runs"], summary="Get a run")
def run_get(request: HttpRequest, run_id: UUID):
    return run_out(request, _run(request, run_id))
