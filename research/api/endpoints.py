"""The routes of ``/api/v1/``.

Every run is looked up through ``research.access`` (404 for a run the caller may not see,
403 when they may see it but not act on it) and every change is the same
``research.services`` call the pages make. A team-scoped token sees only its team's runs.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from django.utils.text import slugify
from ninja import NinjaAPI, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.docs import Swagger
from pydantic import Field

from accounts.models import Membership, Team
from research import services
from research.access import can_control_run, can_edit_run
from research.api import schemas as s
from research.api.auth import api_auth
from research.api.errors import ApiError, ConflictOut, ErrorOut, not_found
from research.engine.citations import describe_locator
from research.engine.contracts import ResearchPlan, SourceStatus
from research.engine.outcomes import outcome_controls
from research.engine.states import Control, RunStatus
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.selectors import run_get_by_share_token, run_get_for_user, runs_visible_to
from research.web.exports import (
    evidence_contract,
    pdf_unavailable_reason,
    report_document,
    report_markdown,
    report_pdf,
)

api = NinjaAPI(
    title="Deep Research API",
    version="1",
    description=(
        "Research runs with reviewed plans and verified citations. Authenticate with "
        "`Authorization: Bearer <personal API token>` (Settings → API tokens); our own pages "
        "may also call it with their session cookie and a CSRF token. Errors are always "
        '`{"code", "message", "field"}`. See docs/api.md.'
    ),
    auth=api_auth,
    urls_namespace="api-v1",
    docs=Swagger(settings={"validatorUrl": None, "persistAuthorization": False}),
    docs_url="/docs",
    openapi_url="/openapi.json",
)

E = ErrorOut
READ = {401: E, 404: E, 422: E, 429: E}
WRITE = {**READ, 400: E, 403: E, 409: E}


# ---------------------------------------------------------------------------------------------
# Errors: one shape
# ---------------------------------------------------------------------------------------------


def _error(request: HttpRequest, status: int, body: dict[str, Any], headers=None) -> HttpResponse:
    response = api.create_response(request, body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
    return _error(request, exc.status, exc.body(), exc.headers)


def _field(loc: list[Any] | tuple[Any, ...]) -> str | None:
    # ninja puts where the value came from first ("body", "query", "path") and the parameter
    # name second ("payload"); the caller knows only the field path inside it.
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header", "cookie", "form"):
        parts = parts[1:]
        if parts and parts[0] in ("payload", "filters", "page"):
            parts = parts[1:]
    return ".".join(parts) or None


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, exc: ValidationError) -> HttpResponse:
    errors = list(exc.errors) or [{"loc": (), "msg": "The request is not valid."}]
    first = errors[0]
    field = _field(first.get("loc", ()))
    sentences = []
    for error in errors[:5]:
        where = _field(error.get("loc", ()))
        message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
        sentences.append(f"{where}: {message}" if where else message)
    message = "; ".join(sentences).rstrip(".") + "."
    return _error(request, 422, {"code": "invalid", "message": message, "field": field})


@api.exception_handler(AuthenticationError)
def _unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
    body = {
        "code": "unauthenticated",
        "message": "Sign in, or send “Authorization: Bearer <token>” with a personal API token.",
        "field": None,
    }
    return _error(request, 401, body, {"WWW-Authenticate": "Bearer"})


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
    message = str(exc) if str(exc) else "Not found."
    return _error(request, 404, {"code": "not_found", "message": message, "field": None})


@api.exception_handler(PermissionDenied)
def _forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
    message = str(exc) or "You may not do that."
    return _error(request, 403, {"code": "forbidden", "message": message, "field": None})


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
    if exc.status_code == 400:
        body = {
            "code": "malformed",
            "message": "The request body is not valid JSON; send a JSON object.",
            "field": None,
        }
    else:
        body = {"code": f"http_{exc.status_code}", "message": str(exc), "field": None}
    return _error(request, exc.status_code, body)


# ---------------------------------------------------------------------------------------------
# Access
# ---------------------------------------------------------------------------------------------


def _token(request: HttpRequest):
    return getattr(request, "api_token", None)


def _in_token_scope(request: HttpRequest, run: ResearchRun) -> bool:
    token = _token(request)
    return token is None or token.team_id is None or run.team_id == token.team_id


def _run(request: HttpRequest, run_id: UUID, *, need: str = "view") -> ResearchRun:
    """The run when the caller may see it (else 404) and, for ``edit``/``control``, act on it
    (else 403: they can see it, so saying so reveals nothing)."""
    run = run_get_for_user(request.auth, run_id)
    if not _in_token_scope(request, run):
        raise not_found()
    if need != "view" and not can_edit_run(request.auth, run):
        raise ApiError(
            403, "forbidden", "You can view this run but not change it; ask its owner or an editor."
        )
    return run


def _visible_runs(request: HttpRequest) -> QuerySet[ResearchRun]:
    runs = runs_visible_to(request.auth)
    token = _token(request)
    if token is not None and token.team_id is not None:
        runs = runs.filter(team_id=token.team_id).exclude(visibility=ResearchRun.Visibility.PRIVATE)
    return runs


# ---------------------------------------------------------------------------------------------
# Serialisers (plain dicts; the response schemas validate them)
# ---------------------------------------------------------------------------------------------


_CONTROL_NAMES = {
    Control.APPROVE: "approve",
    Control.EDIT_PLAN: "edit_plan",
    Control.PAUSE: "pause",
    Control.RESUME: "resume",
    Control.CANCEL: "cancel",
    Control.REFINE: "refine",
    Control.RETRY: "retry",
    Control.INCREASE_BUDGET: "increase_budget",
}


def _url(request: HttpRequest | None, path: str) -> str:
    return request.build_absolute_uri(path) if request is not None else path


def _run_links(request: HttpRequest, run: ResearchRun) -> dict[str, str]:
    base = f"/api/v1/runs/{run.pk}"
    return {
        "self": _url(request, base),
        "plan": _url(request, f"{base}/plan"),
        "steps": _url(request, f"{base}/steps"),
        "sources": _url(request, f"{base}/sources"),
        "evidence": _url(request, f"{base}/evidence"),
        "report": _url(request, f"{base}/report"),
        "report_markdown": _url(request, f"{base}/report.md"),
        "report_pdf": _url(request, f"{base}/report.pdf"),
        "web": _url(request, reverse("research:run_detail", args=[run.pk])),
    }


def run_out(request: HttpRequest, run: ResearchRun, *, may_act: bool | None = None) -> dict:
    outcome = run.outcome
    if may_act is None:
        may_act = can_control_run(request.auth, run) and not (
            _token(request) is not None and _token(request).read_only
        )
    controls = (
        sorted(_CONTROL_NAMES[c] for c in outcome_controls(run.status, run.stop_reason))
        if may_act
        else []
    )
    share_url = None
    if run.visibility == ResearchRun.Visibility.LINK and run.share_token and may_act:
        share_url = _url(request, reverse("research:run_shared", args=[run.share_token]))
    return {
        "id": run.pk,
        "question": run.question,
        "title": run.title,
        "status": run.status,
        "outcome": {
            "key": outcome.key.value,
            "label": outcome.label,
            "sentence": outcome.sentence,
            "detail": outcome.detail,
        },
        "depth": run.depth,
        "visibility": run.visibility,
        "team": run.team.slug if run.team_id else None,
        "owner": run.owner.username,
        "report_template": run.report_template,
        "auto_approve": run.auto_approve,
        "plan_version": run.plan_version,
        "pause_requested": run.pause_requested,
        "cancel_requested": run.cancel_requested,
        "parent_run_id": run.parent_run_id,
        "queue_position": services.queue_position(run),
        "controls": controls,
        "usage": run.usage or {},
        "budget": run.budget or {},
        "source_policy": run.source_policy or {},
        "share_url": share_url,
        "links": _run_links(request, run),
        "created_at": run.created_at,
        "updated_at": run.updated_at,
        "approved_at": run.approved_at,
        "completed_at": run.completed_at,
    }


def _plan_out(request: HttpRequest, run: ResearchRun) -> dict:
    return {
        "run_id": run.pk,
        "status": run.status,
        "version": run.plan_version,
        "editable": run.status == RunStatus.AWAITING_APPROVAL
        and can_edit_run(request.auth, run)
        and not (_token(request) is not None and _token(request).read_only),
        "plan": run.plan,
        "source_policy": run.source_policy or {},
    }


def _source_ref(source: ResearchSource) -> dict:
    return {
        "id": source.pk,
        "url": source.canonical_url or source.url,
        "title": source.title,
        "publisher": source.publisher,
        "published_at": source.published_at,
        "source_class": source.source_class,
    }


def _evidence_out(item: ResearchEvidence) -> dict:
    contract = evidence_contract(item)
    return {
        "id": item.pk,
        "source": _source_ref(item.source),
        "excerpt": item.excerpt,
        "locator": item.locator or {},
        "locator_text": describe_locator(contract) if contract else "",
        "stance": item.stance,
        "claim_key": item.claim_key,
        "normalized_value": item.normalized_value,
        "question_ids": item.question_ids or [],
        "relevance": item.relevance_bp / 10_000,
        "confidence": item.confidence_bp / 10_000,
        "out_of_scope": item.out_of_scope,
        "evidence_hash": item.evidence_hash,
    }


class Paging(Schema):
    limit: int = Field(25, ge=1, le=100)
    offset: int = Field(0, ge=0, le=1_000_000)


def _page(rows: QuerySet, paging: Paging, serialise) -> dict:
    count = rows.count()
    items = [serialise(row) for row in rows[paging.offset : paging.offset + paging.limit]]
    following = paging.offset + len(items)
    return {
        "count": count,
        "limit": paging.limit,
        "offset": paging.offset,
        "next_offset": following if following < count else None,
        "items": items,
    }


# ---------------------------------------------------------------------------------------------
# Runs
# ---------------------------------------------------------------------------------------------


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
    if visibility != "private" and team is None:
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


# ---------------------------------------------------------------------------------------------
# Plan
# ---------------------------------------------------------------------------------------------


@api.get("/runs/{run_id}/plan", response={200: s.PlanOut, **READ}, tags=["plan"])
def plan_get(request: HttpRequest, run_id: UUID):
    """The current plan and its version (send the version back when you edit or approve)."""
    return _plan_out(request, _run(request, run_id))


def _changed_fields(sent: dict, current: dict | None) -> list[str]:
    current = current or {}
    keys = dict.fromkeys([*current, *sent])
    return [key for key in keys if key != "schema_version" and sent.get(key) != current.get(key)]


@api.put(
    "/runs/{run_id}/plan",
    response={
        200: s.PlanOut,
        409: ConflictOut | ErrorOut,
        **{k: v for k, v in WRITE.items() if k != 409},
    },
    tags=["plan"],
)
def plan_replace(request: HttpRequest, run_id: UUID, payload: s.PlanIn):
    """Replace the plan. Refused with 409 when it changed since `expected_version`; the
    answer then carries `current_version` and the plan fields that differ from yours."""
    run = _run(request, run_id, need="edit")
    plan = payload.plan.model_dump(mode="json")
    try:
        run = services.plan_update(
            run=run,
            plan=plan,
            expected_version=payload.expected_version,
            source_policy=payload.source_policy.model_dump(mode="json")
            if payload.source_policy
            else None,
        )
    except services.PlanVersionConflict as conflict:
        current = (
            ResearchPlan.model_validate(conflict.current_plan).model_dump(mode="json")
            if conflict.current_plan
            else {}
        )
        raise ApiError(
            409,
            "plan_version_conflict",
            str(conflict),
            field="expected_version",
            current_version=conflict.current,
            changed_fields=_changed_fields(plan, current),
        ) from None
    except services.RunActionError as exc:
        raise ApiError(409, "not_allowed_now", str(exc)) from None
    return _plan_out(request, run)


# ---------------------------------------------------------------------------------------------
# Actions
# ---------------------------------------------------------------------------------------------


def _act(request: HttpRequest, run_id: UUID, action) -> dict:
    run = _run(request, run_id, need="control")
    try:
        result = action(run)
    except services.QueueUnavailable as exc:
        result = ResearchRun.objects.get(pk=exc.run_id)
    except services.PlanVersionConflict as conflict:
        raise ApiError(
            409,
            "plan_version_conflict",
            str(conflict),
            field="version",
            current_version=conflict.current,
            changed_fields=[],
        ) from None
    except services.QuotaExceeded as exc:
        raise ApiError(429, "quota_exceeded", str(exc), headers={"Retry-After": "60"}) from None
    except services.RunActionError as exc:
        raise ApiError(409, "not_allowed_now", str(exc)) from None
    result = ResearchRun.objects.select_related("owner", "team").get(pk=result.pk)
    return run_out(request, result)


ACTION = {
    200: s.RunOut,
    409: ConflictOut | ErrorOut,
    **{k: v for k, v in WRITE.items() if k != 409},
}


@api.post("/runs/{run_id}/approve", response=ACTION, tags=["actions"])
def run_approve(request: HttpRequest, run_id: UUID, payload: s.ApproveIn):
    """Approve the plan version you reviewed; research is queued."""
    return _act(
        request,
        run_id,
        lambda run: services.plan_approve(run=run, expected_version=payload.version),
    )


@api.post("/runs/{run_id}/pause", response=ACTION, tags=["actions"])
def run_pause(request: HttpRequest, run_id: UUID):
    """Pause now, or at the next safe point when a worker holds the run (`pause_requested`)."""
    return _act(request, run_id, lambda run: services.run_pause(run=run))


@api.post("/runs/{run_id}/resume", response=ACTION, tags=["actions"])
def run_resume(request: HttpRequest, run_id: UUID):
    return _act(request, run_id, lambda run: services.run_resume(run=run))


@api.post("/runs/{run_id}/cancel", response=ACTION, tags=["actions"])
def run_cancel(request: HttpRequest, run_id: UUID):
    """Cancel for good; collected sources and evidence are kept."""
    return _act(request, run_id, lambda run: services.run_cancel(run=run))


@api.post("/runs/{run_id}/refine", response=ACTION, tags=["actions"])
def run_refine(request: HttpRequest, run_id: UUID, payload: s.RefineIn):
    """Ask for a revised plan. A completed run is never changed: the answer is then a new
    run (its `parent_run_id` is this run) that builds on this one's evidence."""
    return _act(
        request,
        run_id,
        lambda run: services.run_refine(
            run=run, instruction=payload.instruction, user=request.auth
        ),
    )


@api.post("/runs/{run_id}/retry", response=ACTION, tags=["actions"])
def run_retry(request: HttpRequest, run_id: UUID):
    """Retry only the phase that failed."""
    return _act(request, run_id, lambda run: services.run_retry(run=run))


@api.post("/runs/{run_id}/budget", response=ACTION, tags=["actions"])
def run_budget(request: HttpRequest, run_id: UUID, payload: s.BudgetIn):
    """Grow a run that stopped at a budget limit, and research on."""
    return _act(
        request, run_id, lambda run: services.budget_increase(run=run, factor=payload.factor)
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
