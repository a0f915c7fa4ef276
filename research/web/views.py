"""Research pages: dashboard, composer, run workspace, plan review, report, sharing.

Views are thin: every run is looked up through ``research.access`` (404 for anyone who may
not see it, in pages and HTMX partials alike), every change goes through
``research.services``, and one template serves a page and its named partials. The
``*_context`` helpers build what each part of the workspace shows from the database, with a
fixed number of queries; the WebSocket consumer renders the same partials with them.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django.views.decorators.vary import vary_on_headers
from django_htmx.http import HttpResponseClientRedirect

from research import services
from research.engine.states import Control, RunStatus
from research.models import ResearchRun, ResearchSource
from research.report_templates import REPORT_TEMPLATES, template_sections
from research.selectors import run_get_for_user, runs_visible_to
from research.services import PlanVersionConflict, QueueUnavailable, QuotaExceeded, RunActionError
from research.web.composer import (
    clarifications_from,
    clarify_available,
    clarifying_questions,
    gap_hints,
)
from research.web.forms import (
    ComposerForm,
    DashboardFilterForm,
    RefineForm,
    SharingForm,
    depth_options,
)
from research.web.plan_editor import (
    EditorOperation,
    PlanEditor,
    plan_editor_apply,
    plan_editor_bound,
    plan_from_editor,
    plan_merged_editor,
)
from research.web.plan_merge import Merge
from research.web.search import matching_passages
from research.web.workspace import (
    EVIDENCE_PER_SOURCE,
    WORKSPACE,
    plan_context,
    section_response,
    workspace_context,
)

RUNS_PER_PAGE = 25
# What a dashboard row shows (the report and working state stay unread).
DASHBOARD_FIELDS = (
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
# Cancelling has one wording wherever it shows: the button, its confirmation, the answer and
# the header's note while a worker finishes its step.
CANCEL_DONE = "Research cancelled. Collected sources and evidence are kept."
CANCEL_REQUESTED = (
    "Cancelling: the research stops when its current step finishes. "
    "Collected sources and evidence are kept."
)

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
        .only(*DASHBOARD_FIELDS)
        .order_by("-created_at")
    )
    page = Paginator(runs, RUNS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    template = "research/dashboard.html"
    if request.htmx and not request.htmx.boosted and not request.htmx.history_restore_request:
        template += "#run-list"
    page.object_list = list(page.object_list)
    searched = filters.cleaned_data.get("q", "").strip()
    passages = matching_passages(page.object_list, searched) if searched else {}
    for run in page.object_list:
        run.passage = passages.get(run.pk)
    context = {"page": page, "filters": filters, "filter_query": query.urlencode()}
    return render(request, template, context)


@login_required
@require_http_methods(["GET", "POST"])
def run_new(request: HttpRequest) -> HttpResponse:
    form = ComposerForm(
        request.POST or None, user=request.user, initial={"client_request_id": uuid.uuid4().hex}
    )
    status = 200
    context: dict[str, Any] = {}
    if request.method == "POST" and form.is_valid():
        question = form.cleaned_data["question"]
        asked = clarifying_questions(question) if request.POST.get("action") == "clarify" else []
        if asked:
            context["clarifying"] = asked
        else:
            response, status = _create_from_composer(request, form)
            if response is not None:
                return response
    if form.errors and status == 200:
        status = 422
    return render(request, "research/run_new.html", _composer_context(form, context), status=status)


def _composer_context(form: ComposerForm, extra: dict[str, Any]) -> dict[str, Any]:
    question = form.data.get("question", "") if form.is_bound else ""
    return {
        "form": form,
        "depths": depth_options(),
        "templates": REPORT_TEMPLATES.values(),
        "clarify_available": clarify_available(),
        "hints": gap_hints(question),
        **extra,
    }


def _create_from_composer(
    request: HttpRequest, form: ComposerForm
) -> tuple[HttpResponse | None, int]:
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
            clarifications=clarifications_from(request.POST),
        )
    except QueueUnavailable as exc:
        messages.warning(request, str(exc))
        return redirect("research:run_detail", run_id=exc.run_id), 302
    except QuotaExceeded as exc:
        form.add_error(None, str(exc))
        return None, 429
    except RunActionError as exc:
        form.add_error(None, str(exc))
        return None, 200
    messages.success(
        request, "Research created. The plan is being drafted.", extra_tags="transient"
    )
    return redirect("research:run_detail", run_id=run.pk), 302


@login_required
@require_POST
def composer_hints(request: HttpRequest) -> HttpResponse:
    """Optional hints about what the question leaves open (HTMX, while typing)."""
    question = request.POST.get("question", "")[: ComposerForm.base_fields["question"].max_length]
    return render(request, "research/run_new.html#hints", {"hints": gap_hints(question)})


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
    return section_response(request, run, section)


@login_required
@require_http_methods(["GET", "POST"])
def run_plan(request: HttpRequest, run_id: uuid.UUID) -> HttpResponse:
    if request.method == "GET":
        return run_section(request, run_id, "plan")
    run = run_get_for_user(request.user, run_id, need="edit")
    op = request.POST.get("op", "")
    if op in ("review", "merge"):
        return _plan_review(request, run, merge=op == "merge")
    operation = EditorOperation.parse(op)
    if operation is not None:
        editor, note = plan_editor_apply(request.POST, operation)
        return _plan_response(request, run, editor, notice=note)
    editor = plan_editor_bound(request.POST)
    if not editor.is_valid():
        return _plan_response(request, run, editor, status=422, errors=editor.errors())
    approve = request.POST.get("op") == "approve"
    queue_note = ""
    try:
        run, saved = _plan_save(run, editor, approve=approve, by=request.user)
    except QueueUnavailable as exc:  # approved and committed; only the message is late
        run.refresh_from_db()
        saved, queue_note = True, str(exc)
    except PlanVersionConflict as conflict:
        return _plan_conflict(request, run, conflict)
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
    return section_response(request, run, "plan", also, notice=message)


def _plan_save(
    run: ResearchRun, editor: PlanEditor, *, approve: bool, by: Any
) -> tuple[ResearchRun, bool]:
    """Save what the editor holds (``services.plan_save``), approving it if asked."""
    try:
        policy = editor.form.source_policy(current=run.source_policy)
    except forms.ValidationError as exc:
        raise RunActionError(" ".join(exc.messages)) from None
    return services.plan_save(
        run=run,
        plan=plan_from_editor(editor, current=run.plan_contract),
        expected_version=editor.form.cleaned_data["plan_version"],
        source_policy=policy,
        approve=approve,
        by=by,
    )


def _plan_response(
    request: HttpRequest, run: ResearchRun, editor: PlanEditor, *, status: int = 200, **extra: Any
) -> HttpResponse:
    if run.status != RunStatus.AWAITING_APPROVAL:
        editor = None  # approved, paused or cancelled meanwhile: the plan is read-only now
    if request.htmx:
        return section_response(request, run, "plan", status=status, editor=editor, **extra)
    context = {**workspace_context(request, run), **plan_context(request, run, editor, **extra)}
    return render(request, WORKSPACE, context, status=status)


def _plan_merge(request: HttpRequest, run: ResearchRun) -> tuple[Merge, PlanEditor]:
    """The person's submitted editor merged field by field into the current version."""
    return plan_merged_editor(
        request.POST,
        run.plan_contract,
        run.plan_version,
        extra_sections=template_sections(run.report_template),
        policy=run.policy_contract,
    )


def _changes_context(run: ResearchRun, merge: Merge, **extra: Any) -> dict[str, Any]:
    by = run.plan_saved_by.username if run.plan_saved_by_id else "the planner"
    return {"version": run.plan_version, "by": by, "changes": merge.changes, **extra}


def _plan_conflict(
    request: HttpRequest, run: ResearchRun, conflict: PlanVersionConflict
) -> HttpResponse:
    """Refuse a stale edit: name every field changed since the person loaded the plan, with
    both values, and give back their form merged into the current version (their edits
    kept, the other person's changes taken where they left a field alone)."""
    run.refresh_from_db()
    merge, editor = _plan_merge(request, run)
    conflict_info = _changes_context(run, merge, from_version=conflict.expected)
    return _plan_response(request, run, editor, status=409, conflict=conflict_info, unsaved=True)


def _plan_review(request: HttpRequest, run: ResearchRun, *, merge: bool) -> HttpResponse:
    """For a form with unsaved edits when a newer version arrives: compare it with that
    version ("review", into the form's review panel) or merge that version into it."""
    if run.status != RunStatus.AWAITING_APPROVAL or run.plan_contract is None:
        return render(request, f"{WORKSPACE}#plan_review", {"run": run, "review_closed": True})
    merged, editor = _plan_merge(request, run)
    if merge:
        notice = (
            f"Version {run.plan_version} merged into your form. Nothing is saved until you save."
        )
        return _plan_response(request, run, editor, notice=notice, unsaved=True)
    same_version = request.POST.get("plan_version") == str(run.plan_version)
    review = None if same_version else _changes_context(run, merged)
    return render(request, f"{WORKSPACE}#plan_review", {"run": run, "review": review})


@dataclass(frozen=True)
class ControlAction:
    control: Control
    done: str


CONTROL_ACTIONS: dict[str, ControlAction] = {
    "pause": ControlAction(Control.PAUSE, "Paused."),
    "resume": ControlAction(Control.RESUME, "Resumed."),
    "cancel": ControlAction(Control.CANCEL, CANCEL_DONE),
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
        return CANCEL_REQUESTED
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
        return section_response(
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
    return section_response(request, result, "controls", also, control_notice=message)


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
        return section_response(request, run, "sharing", status=422, sharing_form=form)
    notice = f"Who can see this research: {run.get_visibility_display().lower()}."
    if not request.htmx:
        messages.success(request, notice)
        return redirect("research:run_detail", run_id=run.pk)
    return section_response(request, run, "sharing", ("header",), sharing_notice=notice)


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
