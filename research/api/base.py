"""The API object of ``/api/v1/`` and what every route shares.

The ``NinjaAPI`` itself, the one error shape (``{"code", "message", "field"}``), the access
checks (a run the caller may not see is a 404; one they may see but not change is a 403; a
team-scoped token sees only its team's runs) and the serialisers. The routes live in
``research.api.runs``, ``.plan``, ``.reads`` and ``.shared``; ``research.api.endpoints``
imports them in the order the OpenAPI document lists them.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import reverse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.openapi.docs import Swagger
from pydantic import Field

from research import services
from research.access import can_control_run, can_edit_run
from research.api.auth import api_auth
from research.api.errors import ApiError, ErrorOut, not_found
from research.engine.citations import describe_locator
from research.engine.outcomes import outcome_controls
from research.engine.states import Control, RunStatus
from research.models import ResearchEvidence, ResearchRun, ResearchSource
from research.selectors import run_get_for_user, runs_visible_to
from research.web.exports import evidence_contract


class _Api(NinjaAPI):
    def get_openapi_operation_id(self, operation) -> str:
        # The routes were once all in research.api.endpoints, and ninja derives an operation id
        # from the view's module; clients generated from the document name their methods after
        # those ids, so they stay as they were wherever a route now lives.
        return f"research_api_endpoints_{operation.view_func.__name__}"


api = _Api(
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
