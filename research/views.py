"""Research pages: dashboard, composer, run workspace, plan review, report, sharing.

Views are thin: every run is looked up through ``research.access`` (404 for anyone who may
not see it, in pages and HTMX partials alike), every change goes through
``research.services``, and one template serves a page and its named partials. The
``*_context`` helpers build what each part of the workspace shows from the database, with a
fixed number of queries; the WebSocket consumer renders the same partials with them.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.paginator import Paginator
from django.db import transaction
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect
from pydantic import ValidationError as PydanticValidationError

from accounts.models import User
from research import services
from research.access import (
    can_control_run,
    can_edit_run,
    run_get_by_share_token,
    run_get_for_user,
    runs_visible_to,
)
from research.engine.citations import describe_locator
from research.engine.contracts import Budget, SourcePolicy, Usage
from research.engine.outcomes import LIMIT_LABELS, outcome_controls
from research.engine.states import Control, RunStatus
from research.exports import (
    evidence_contract,
    pdf_unavailable_reason,
    report_document,
    report_markdown,
    report_pdf,
)
from research.forms import (
    ComposerForm,
    DashboardFilterForm,
    EditorOperation,
    PlanEditor,
    RefineForm,
    SharingForm,
    depth_options,
    describe_plan_changes,
    plan_editor_apply,
    plan_editor_bound,
    plan_editor_for,
    plan_from_editor,
    plans_equal,
)
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.report_templates import REPORT_TEMPLATES, template_sections
from research.services import PlanVersionConflict, QueueUnavailable, QuotaExceeded, RunActionError

RUNS_PER_PAGE = 25
TIMELINE_LIMIT = 300
EVIDENCE_PER_SOURCE = 40
LIVE_STATUSES = frozenset(RunStatus) - {RunStatus.COMPLETED, RunStatus.CANCELLED}
WORKSPACE = "research/run_detail.html"

# ---------------------------------------------------------------------------------------------
# Dashboard and composer
# ---------------------------------------------------------------------------------------------


@login_required
@require_GET
@vary_on_headers("HX-Request")
def dashboard(request: HttpRequest) -> HttpResponse:
    filters = DashboardFilterForm(request.GET, user=request.user)
    runs = (
        filters.filter(runs_visible_to(request.user))
        .select_related("owner", "team")
        .only(
            "id",
            "question",
            "title",
            "status",
            "stop_reason",
            "stop_limit",
            "terminal_reason",
            "last_error",
            "depth",
            "visibility",
            "created_at",
            "updated_at",
            "usage",
            "budget",
            "owner__username",
            "owner__display_name",
            "team__name",
        )
        .order_by("-created_at")
    )
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    template = "research/dashboard.html"
    if request.htmx and not request.htmx.boosted and not request.htmx.history_restore_request:
        template += "#run-list"
    context = {"page": page, "filters": filters, "filter_query": query.urlencode()}
    return render(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    form = ComposerForm(
        request.POST or None, user=request.user, initial={"client_request_id": uuid.uuid4().hex}
    )
    status = 200
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = services.run_create(
                owner=request.user,
                question=data["question"],
                depth=data["depth"],
                source_policy=form.source_policy(),
                team=data["team"],
                visibility=data["visibility"],
                report_template=data["report_template"],
                client_request_id=data["client_request_id"] or None,
            )
        except QueueUnavailable as exc:
            messages.warning(request, str(exc))
            return redirect("research:run_detail", run_id=exc.run_id)
        except QuotaExceeded as exc:
            form.add_error(None, str(exc))
            status = 429
        except RunActionError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, "Research created. The plan is being drafted.")
            return redirect("research:run_detail", run_id=run.pk)
    context = {
        "form": form,
        "depths": depth_options(),
        "templates": REPORT_TEMPLATES.values(),
    }
    if form.errors and status == 200:
        status = 422
    return render(request, "research/run_new.html", context, status=status)


# ---------------------------------------------------------------------------------------------
# What each part of the workspace shows
# ---------------------------------------------------------------------------------------------


# What a run's outcome is described from (ResearchRun.outcome).
_OUTCOME_FIELDS = ("status", "stop_reason", "stop_limit", "budget", "terminal_reason", "last_error")


def header_context(run: ResearchRun, user: User | AnonymousUser) -> dict[str, Any]:
    visible = runs_visible_to(user)
    current = (
        run.steps.filter(status=ResearchStep.Status.RUNNING)
        .only("id", "run_id", "kind", "input", "summary", "status", "created_at")
        .order_by("-created_at")
        .first()
    )
    return {
        "run": run,
        "template_label": REPORT_TEMPLATES[run.report_template].label
        if run.report_template in REPORT_TEMPLATES
        else "",
        "parent": visible.filter(pk=run.parent_run_id).only("id", "title", "question").first()
        if run.parent_run_id
        else None,
        "children": list(
            visible.filter(parent_run=run).only(*_OUTCOME_FIELDS, "id", "title", "question")[:20]
        ),
        "current_step": step_label(current, {}) if current else "",
        "queue_position": services.queue_position(run),
        "has_report": bool(run.report),
        "outcome": run.outcome,
        "worker_attempts_limit": settings.RESEARCH_WORKER_MAX_ATTEMPTS,
    }


@dataclass(frozen=True)
class Meter:
    label: str
    used: float
    limit: float
    unit: str = ""
    # The budget limit that stopped the run.
    reached: bool = False

    @property
    def percent(self) -> int:
        return min(100, round(100 * self.used / self.limit)) if self.limit else 0


def progress_context(run: ResearchRun) -> dict[str, Any]:
    budget = Budget.model_validate(run.budget)
    usage = Usage.model_validate(run.usage or {})
    finished = (ResearchStep.Status.SUCCEEDED, ResearchStep.Status.FAILED)
    steps = Counter(run.steps.filter(status__in=finished).values_list("kind", flat=True).order_by())
    coverage = (run.working_state or {}).get("coverage") or {}
    questions = len((run.plan or {}).get("questions") or [])
    covered = sum(1 for item in coverage.values() if item.get("evidence_count", 0) > 0)
    outcome = run.outcome
    stopped_at = {outcome.stop_limit} if outcome.budget_stop else set()
    if "searches" in stopped_at:
        stopped_at.add(
            "fetched_sources"
        )  # research stops on searches only when reads are spent too
    # Every hard limit that can stop research is listed, so the one that did is visible.
    limits = [
        ("iterations", usage.iterations, budget.iterations, ""),
        ("searches", max(usage.searches, steps["search"]), budget.searches, ""),
        ("fetched_sources", max(usage.fetched_sources, steps["read"]), budget.fetched_sources, ""),
        ("model_calls", usage.model_calls, budget.model_calls, ""),
        ("elapsed_seconds", round(usage.elapsed_seconds), budget.elapsed_seconds, "seconds"),
        ("bytes_fetched", usage.bytes_fetched, budget.bytes_per_run, "bytes"),
        ("input_tokens", usage.input_tokens, budget.input_tokens, "tokens"),
        ("output_tokens", usage.output_tokens, budget.output_tokens, "tokens"),
    ]
    return {
        "run": run,
        "meters": [
            Meter(LIMIT_LABELS[key].capitalize(), used, limit, unit, reached=key in stopped_at)
            for key, used, limit, unit in limits
        ],
        "evidence_count": run.evidence.filter(out_of_scope=False).count(),
        "questions_total": questions,
        "questions_covered": min(covered, questions),
        "usage": usage,
    }


@dataclass(frozen=True)
class StepRow:
    id: str
    label: str
    detail: str
    rationale: str
    status: str
    status_label: str
    elapsed: float | None
    iteration: int


def _quoted(text: Any) -> str:
    return f"“{' '.join(str(text or '').split())[:160]}”"


def step_label(step: ResearchStep, titles: dict[str, str]) -> str:
    """What a durable step did, in words: “Searching …”, “Reading …”."""
    payload = (step.input or {}).get("payload") or {}
    refused = payload.get("refused")
    action = payload.get("action") or {}
    if step.kind == ResearchStep.Kind.PLAN:
        refinement = payload.get("refinement")
        return (
            f"Revising the plan: {_quoted(refinement)}"
            if refinement
            else "Drafting the research plan"
        )
    if step.kind == ResearchStep.Kind.DECIDE:
        if refused:
            return "Finishing proposed too early"
        return (
            "Checking whether the research can finish"
            if payload.get("finish")
            else "Choosing what to search and read next"
        )
    if step.kind == ResearchStep.Kind.SEARCH:
        query = payload.get("query") or action.get("query")
        if refused:
            return f"Search not run: {_quoted(query)}"
        if payload.get("follow_up"):
            return f"Comparing conflicting figures: searching {_quoted(query)}"
        return f"Searching {_quoted(query)}"
    if step.kind == ResearchStep.Kind.READ:
        source_id = str(payload.get("source_id") or action.get("source_id") or "")
        name = titles.get(source_id) or _host(payload.get("url", "")) or "a source"
        return f"Source not read: {name}" if refused else f"Reading {name}"
    if step.kind == ResearchStep.Kind.EXTRACT:
        return "Extracting evidence"
    return "Writing the report"


def _host(url: str) -> str:
    return (urlsplit(url).hostname or "") if url else ""


def _elapsed(step: ResearchStep, now: datetime) -> float | None:
    if step.started_at is None:
        return None
    end = step.completed_at or now
    return max((end - step.started_at).total_seconds(), 0.0)


def timeline_context(run: ResearchRun) -> dict[str, Any]:
    steps = list(
        run.steps.only(
            "id",
            "run_id",
            "kind",
            "status",
            "summary",
            "input",
            "error",
            "iteration",
            "created_at",
            "started_at",
            "completed_at",
        ).order_by("-created_at")[:TIMELINE_LIMIT]
    )[::-1]
    earlier = run.steps.count() - len(steps) if len(steps) == TIMELINE_LIMIT else 0
    read_ids = {
        str(((s.input or {}).get("payload") or {}).get("source_id") or "")
        for s in steps
        if s.kind == ResearchStep.Kind.READ
    } - {""}
    titles = dict(
        ResearchSource.objects.filter(run=run, pk__in=_valid_uuids(read_ids)).values_list(
            "id", "title"
        )
    )
    titles = {str(pk): title for pk, title in titles.items() if title}
    now = timezone.now()
    rows = [
        StepRow(
            id=str(step.pk),
            label=step_label(step, titles),
            detail=step.error
            if step.status == ResearchStep.Status.FAILED and step.error
            else step.summary,
            rationale=str((step.input or {}).get("rationale") or ""),
            status=step.status,
            status_label=step.get_status_display(),
            elapsed=_elapsed(step, now),
            iteration=step.iteration,
        )
        for step in steps
    ]
    return {"run": run, "steps": rows, "earlier_steps": earlier}


def _valid_uuids(values: Iterable[str]) -> list[uuid.UUID]:
    found = []
    for value in values:
        try:
            found.append(uuid.UUID(value))
        except ValueError:
            continue
    return found


SOURCE_STATUS_ORDER = ["fetched", "duplicate", "candidate", "blocked", "failed", "unsupported"]


def sources_context(run: ResearchRun) -> dict[str, Any]:
    evidence_count = (
        ResearchEvidence.objects.filter(source=OuterRef("pk"), out_of_scope=False)
        .order_by()
        .values("source")
        .annotate(n=Count("*"))
        .values("n")
    )
    sources = list(
        run.sources.only(
            "id",
            "run_id",
            "status",
            "url",
            "canonical_url",
            "title",
            "publisher",
            "domain",
            "published_at",
            "source_class",
            "quality",
            "last_error",
            "duplicate_of_id",
            "kind",
            "created_at",
        )
        .annotate(evidence_count=Coalesce(Subquery(evidence_count, output_field=IntegerField()), 0))
        .order_by("created_at")
    )
    rank = {status: n for n, status in enumerate(SOURCE_STATUS_ORDER)}
    sources.sort(key=lambda s: (rank.get(s.status, 99), -s.evidence_count))
    counts = Counter(source.status for source in sources)
    return {
        "run": run,
        "sources": sources,
        "source_counts": [
            (status, counts[status]) for status in SOURCE_STATUS_ORDER if counts[status]
        ],
    }


def controls_context(request: HttpRequest, run: ResearchRun, **extra: Any) -> dict[str, Any]:
    """The controls legal in the run's status, if the user's role permits controlling it."""
    permitted = can_control_run(request.user, run)
    controls = outcome_controls(run.status, run.stop_reason) if permitted else frozenset()
    return {
        "run": run,
        "controls": {control.value for control in controls},
        "refine_form": RefineForm(),
        **extra,
    }


def sharing_context(request: HttpRequest, run: ResearchRun, **extra: Any) -> dict[str, Any]:
    share_url = (
        request.build_absolute_uri(reverse("research:run_shared", args=[run.share_token]))
        if run.visibility == ResearchRun.Visibility.LINK and run.share_token
        else ""
    )
    context = {
        "run": run,
        "may_share": can_edit_run(request.user, run),
        "share_url": share_url,
        "sharing_form": SharingForm(
            initial={"visibility": run.visibility, "team": run.team_id}, run=run
        ),
    }
    return {**context, **extra}


def plan_context(
    request: HttpRequest, run: ResearchRun, editor: PlanEditor | None = None, **extra: Any
) -> dict[str, Any]:
    editable = run.status == RunStatus.AWAITING_APPROVAL and can_edit_run(request.user, run)
    if editable and editor is None and run.plan:
        editor = plan_editor_for(
            run.plan,
            run.plan_version,
            extra_sections=template_sections(run.report_template),
            policy=run.source_policy,
        )
    plan = run.plan or {}
    required = set((plan.get("completion_criteria") or {}).get("required_question_ids") or [])
    questions = [
        {**q, "required": q.get("priority") == "required" or q.get("id") in required}
        for q in plan.get("questions") or []
    ]
    return {
        "run": run,
        "plan": plan,
        "plan_questions": questions,
        "editor": editor if editable else None,
        "template_sections": template_sections(run.report_template),
        "policy": SourcePolicy.model_validate(run.source_policy or {}),
        "budget": Budget.model_validate(run.budget),
        "planning_failed": run.status == RunStatus.FAILED
        and run.resume_phase == RunStatus.PLANNING,
        "may_control": can_control_run(request.user, run),
        **extra,
    }


def workspace_context(request: HttpRequest, run: ResearchRun) -> dict[str, Any]:
    return {
        **header_context(run, request.user),
        **progress_context(run),
        **timeline_context(run),
        **sources_context(run),
        **controls_context(request, run),
        **sharing_context(request, run),
        **plan_context(request, run),
        "live_url": live_url(run) if run.status in LIVE_STATUSES else "",
    }


def run_shape(run: ResearchRun) -> str:
    """What decides the plan's and the controls' markup: the status and the plan version."""
    return f"{run.status}.{run.plan_version}"


def live_url(run: ResearchRun) -> str:
    """The WebSocket address of a run page. It carries the shape the page was rendered in,
    so a socket connecting after the run moved on knows the plan and controls are stale."""
    return f"/ws/runs/{run.pk}/?shape={run_shape(run)}"


SECTION_CONTEXTS = {
    "header": lambda request, run: header_context(run, request.user),
    "progress": lambda request, run: progress_context(run),
    "timeline": lambda request, run: timeline_context(run),
    "sources": lambda request, run: sources_context(run),
    "controls": controls_context,
    "sharing": sharing_context,
    "plan": plan_context,
}


def live_fragments(run: ResearchRun, user: User | AnonymousUser, sections: Iterable[str]) -> str:
    """HTML the WebSocket pushes: the named workspace parts, rendered from the database.
    Parts with forms (plan, controls) are sent as placeholders that load themselves over
    HTTP, so their CSRF token and the user's permissions come from a normal request."""
    builders = {
        "header": lambda: header_context(run, user),
        "progress": lambda: progress_context(run),
        "timeline": lambda: timeline_context(run),
        "sources": lambda: sources_context(run),
    }
    parts = [
        render_to_string(f"{WORKSPACE}#{name}", {**build(), "oob": True})
        for name, build in builders.items()
        if name in sections
    ]
    loaders = [
        render_to_string(f"{WORKSPACE}#loader", {"run": run, "section": name})
        for name in ("controls", "plan")
        if name in sections
    ]
    if loaders:
        parts.append(
            '<div id="live-triggers" hidden hx-swap-oob="innerHTML">' + "".join(loaders) + "</div>"
        )
    return "".join(parts)


def _sections_response(
    request: HttpRequest,
    run: ResearchRun,
    first: str,
    also: Iterable[str] = (),
    *,
    status: int = 200,
    **extra: Any,
) -> HttpResponse:
    """One workspace part (``first``) plus others swapped out of band by HTMX."""
    html = render_to_string(
        f"{WORKSPACE}#{first}", {**SECTION_CONTEXTS[first](request, run), **extra}, request
    )
    for name in also:
        context = {**SECTION_CONTEXTS[name](request, run), "oob": True}
        html += render_to_string(f"{WORKSPACE}#{name}", context, request)
    return HttpResponse(html, status=status)


# ---------------------------------------------------------------------------------------------
# The run workspace
# ---------------------------------------------------------------------------------------------


@login_required
@require_GET
def run_detail(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    return render(request, WORKSPACE, workspace_context(request, run))


@login_required
@require_GET
@vary_on_headers("HX-Request")
def run_section(request: HttpRequest, run_id: uuid.UUID, section: str) -> HttpResponse:
    """One part of the workspace for HTMX; the whole page for anyone else."""
    run = run_get_for_user(request.user, run_id)
    if not request.htmx:
        return redirect("research:run_detail", run_id=run.pk)
    return _sections_response(request, run, section)


@login_required
@require_http_methods(["GET", "POST"])
def run_plan(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    if request.method == "GET":
        return run_section(request, run_id, "plan")
    run = run_get_for_user(request.user, run_id, need="edit")
    operation = EditorOperation.parse(request.POST.get("op", ""))
    if operation is not None:
        editor, note = plan_editor_apply(request.POST, operation)
        return _plan_response(request, run, editor, notice=note)
    editor = plan_editor_bound(request.POST)
    if not editor.is_valid():
        return _plan_response(request, run, editor, status=422, errors=editor.errors())
    approve = request.POST.get("op") == "approve"
    queue_note = ""
    try:
        run, saved = _plan_save(run, editor, approve=approve)
    except QueueUnavailable as exc:  # approved and committed; only the message is late
        run.refresh_from_db()
        saved, queue_note = True, str(exc)
    except PlanVersionConflict as conflict:
        return _plan_conflict(request, run, editor, conflict)
    except RunActionError as exc:
        run.refresh_from_db()
        return _plan_response(request, run, editor, status=409, errors=[str(exc)])
    if queue_note:
        message = f"Plan approved. {queue_note}"
    elif approve:
        message = "Plan approved. Research is queued and starts as soon as a worker is free."
    elif saved:
        message = f"Plan saved as version {run.plan_version}."
    else:
        message = f"Nothing changed; the plan is still version {run.plan_version}."
    if not request.htmx:
        messages.success(request, message)
        return redirect("research:run_detail", run_id=run.pk)
    also = ("header", "controls", "progress") if approve else ()
    return _sections_response(request, run, "plan", also, notice=message)


@transaction.atomic
def _plan_save(run: ResearchRun, editor: PlanEditor, *, approve: bool) -> tuple[ResearchRun, bool]:
    """Save the edited plan as a new version when it changed, then approve it if asked.
    Approving therefore always approves exactly what the person saw in the form."""
    version = editor.form.cleaned_data["plan_version"]
    plan = plan_from_editor(editor, current=run.plan or {})
    try:
        policy = editor.form.source_policy()
    except forms.ValidationError as exc:
        raise RunActionError(" ".join(exc.messages)) from None
    policy_changed = policy is not None and not policies_equal(policy, run.source_policy)
    changed = policy_changed or not plans_equal(plan, run.plan)
    if changed:
        run = services.plan_update(
            run=run,
            plan=plan,
            expected_version=version,
            source_policy=policy if policy_changed else None,
        )
        version = run.plan_version
    if approve:
        run = services.plan_approve(run=run, expected_version=version)
    return run, changed


def _plan_response(
    request: HttpRequest, run: ResearchRun, editor: PlanEditor, *, status: int = 200, **extra: Any
) -> HttpResponse:
    if run.status != RunStatus.AWAITING_APPROVAL:
        editor = None  # approved, paused or cancelled meanwhile: the plan is read-only now
    if request.htmx:
        return _sections_response(request, run, "plan", status=status, editor=editor, **extra)
    context = {**workspace_context(request, run), **plan_context(request, run, editor, **extra)}
    return render(request, WORKSPACE, context, status=status)


def _plan_conflict(
    request: HttpRequest, run: ResearchRun, editor: PlanEditor, conflict: PlanVersionConflict
) -> HttpResponse:
    """Refuse a stale edit: keep what the person typed, say what changed since they loaded
    the plan, and base the form on the current version so they can decide and save again."""
    run.refresh_from_db()
    base = editor.form.cleaned_data.get("base_plan") or plan_from_editor(
        editor, current=run.plan or {}
    )
    changes = describe_plan_changes(base, conflict.current_plan or {})
    data = request.POST.copy()
    data["plan_version"] = str(conflict.current)
    data["base_plan"] = plan_editor_for(conflict.current_plan or {}, conflict.current).form.initial[
        "base_plan"
    ]
    return _plan_response(
        request,
        run,
        plan_editor_bound(data),
        status=409,
        errors=[str(conflict)],
        conflict_changes=changes or ["The plan was saved again without visible changes."],
    )


@dataclass(frozen=True)
class ControlAction:
    control: Control
    done: str


CONTROL_ACTIONS: dict[str, ControlAction] = {
    "pause": ControlAction(Control.PAUSE, "Paused."),
    "resume": ControlAction(Control.RESUME, "Resumed."),
    "cancel": ControlAction(Control.CANCEL, "Cancelled. Collected sources and evidence are kept."),
    "retry": ControlAction(Control.RETRY, "Retrying the phase that failed."),
    "budget": ControlAction(Control.INCREASE_BUDGET, "Budget increased; research continues."),
    "refine": ControlAction(Control.REFINE, "Refinement sent; a revised plan is being drafted."),
}


def _apply_control(request: HttpRequest, run: ResearchRun, action: str) -> ResearchRun:
    """Call the service behind ``action``; raises RunActionError with a sentence."""
    if action == "pause":
        return services.run_pause(run=run)
    if action == "resume":
        return services.run_resume(run=run)
    if action == "cancel":
        return services.run_cancel(run=run)
    if action == "retry":
        return services.run_retry(run=run)
    if action == "budget":
        return services.budget_increase(run=run)
    form = RefineForm(request.POST)
    if not form.is_valid():
        raise RunActionError(" ".join(form.errors["instruction"]))
    return services.run_refine(
        run=run, instruction=form.cleaned_data["instruction"], user=request.user
    )


def _control_message(action: str, before: ResearchRun, after: ResearchRun) -> str:
    if action == "pause" and after.status != RunStatus.PAUSED:
        return "Pause requested; the run pauses when its current step finishes."
    if action == "cancel" and after.status != RunStatus.CANCELLED:
        return "Cancel requested; the run stops when its current step finishes."
    if action == "refine" and after.pk != before.pk:
        return "A new run that builds on this one was created; review its plan."
    return CONTROL_ACTIONS[action].done


@login_required
@require_POST
def run_control(request: HttpRequest, run_id: uuid.UUID, action: str) -> HttpResponse:
    run = run_get_for_user(request.user, run_id, need="control")
    if action not in CONTROL_ACTIONS:
        raise Http404("No such control.")
    queue_note = ""
    try:
        result = _apply_control(request, run, action)
    except QueueUnavailable as exc:  # the control is committed; only the message is late
        result = ResearchRun.objects.get(pk=exc.run_id)
        queue_note = str(exc)
    except RunActionError as exc:
        if not request.htmx:
            messages.error(request, str(exc))
            return redirect("research:run_detail", run_id=run.pk)
        run.refresh_from_db()
        status = 429 if isinstance(exc, QuotaExceeded) else 409
        return _sections_response(
            request, run, "controls", ("header",), status=status, control_error=str(exc)
        )
    message = queue_note or _control_message(action, run, result)
    if result.pk != run.pk:
        messages.success(request, message)
        if request.htmx:
            return HttpResponseClientRedirect(reverse("research:run_detail", args=[result.pk]))
        return redirect("research:run_detail", run_id=result.pk)
    if not request.htmx:
        messages.success(request, message)
        return redirect("research:run_detail", run_id=run.pk)
    also = ("header", "progress", "plan", "timeline")
    return _sections_response(request, result, "controls", also, control_notice=message)


@login_required
@require_http_methods(["GET", "POST"])
def run_sharing(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    if request.method == "GET":
        return run_section(request, run_id, "sharing")
    run = run_get_for_user(request.user, run_id, need="edit")
    form = SharingForm(request.POST, run=run)
    if form.is_valid():
        try:
            run = services.sharing_update(
                run=run, visibility=form.cleaned_data["visibility"], team=form.cleaned_data["team"]
            )
        except RunActionError as exc:
            form.add_error(None, str(exc))
    if form.errors:
        if not request.htmx:
            context = {**workspace_context(request, run), "sharing_form": form}
            return render(request, WORKSPACE, context, status=422)
        return _sections_response(request, run, "sharing", status=422, sharing_form=form)
    notice = f"Who can see this research: {run.get_visibility_display().lower()}."
    if not request.htmx:
        messages.success(request, notice)
        return redirect("research:run_detail", run_id=run.pk)
    return _sections_response(request, run, "sharing", ("header",), sharing_notice=notice)


@login_required
@require_GET
@vary_on_headers("HX-Request")
def source_detail(request: HttpRequest, run_id: uuid.UUID, source_id: uuid.UUID) -> HttpResponse:
    run = run_get_for_user(request.user, run_id)
    source = get_object_or_404(
        ResearchSource.objects.defer("snapshot_text", "snapshot_blocks", "metadata"),
        run=run,
        pk=source_id,
    )
    evidence = list(
        source.evidence.only(
            "id", "excerpt", "locator", "stance", "normalized_value", "out_of_scope"
        ).order_by("-relevance_bp", "created_at")[:EVIDENCE_PER_SOURCE]
    )
    template = "research/source_detail.html"
    if request.htmx:
        template += "#source"
    return render(request, template, {"run": run, "source": source, "evidence": evidence})


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


def policies_equal(first: dict[str, Any], second: dict[str, Any] | None) -> bool:
    """Whether two source policies say the same thing (domains normalised, defaults filled)."""
    try:
        return (
            SourcePolicy.model_validate(first).model_dump()
            == SourcePolicy.model_validate(second or {}).model_dump()
        )
    except PydanticValidationError:
        return False
