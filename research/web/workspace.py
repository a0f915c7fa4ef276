"""What each part of a run's workspace shows, built from the database.

The ``*_context`` builders give each named part of ``research/run_detail.html`` its context
with a fixed number of queries. Pages render them over HTTP (``research.web.views``) and
the WebSocket consumer (``research.live.consumer``) pushes the same parts rendered here.
"""

from __future__ import annotations

import re
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, IntegerField, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.http import HttpRequest, HttpResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils import timezone

from accounts.models import User
from research import services
from research.access import can_control_run, can_edit_run
from research.engine.outcomes import LIMIT_LABELS, outcome_controls
from research.engine.states import RunStatus
from research.engine.steps import StepInput
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.report_templates import REPORT_TEMPLATES, template_sections
from research.selectors import runs_visible_to
from research.web.forms import (
    RefineForm,
    SharingForm,
)
from research.web.plan_editor import (
    PlanEditor,
    plan_editor_for,
)

# ---------------------------------------------------------------------------------------------
# Dashboard and composer
# ---------------------------------------------------------------------------------------------

TIMELINE_LIMIT = 300
EVIDENCE_PER_SOURCE = 40
LIVE_STATUSES = frozenset(RunStatus) - {RunStatus.COMPLETED, RunStatus.CANCELLED}
WORKSPACE = "research/run_detail.html"


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


@dataclass(frozen=True)
class Forecast:
    """How long the research has run and, while it runs, the budget limit it will meet
    first and when, at the pace so far (each limit's share used, per second elapsed)."""

    elapsed: float
    limit: str = ""
    percent: int = 0
    remaining: float | None = None


def forecast(run: ResearchRun, limits: list[tuple[str, int, int, str]], elapsed: float) -> Forecast:
    if run.status not in (RunStatus.RESEARCHING, RunStatus.SYNTHESIZING) or elapsed <= 0:
        return Forecast(elapsed=elapsed)
    shares = [(used / limit, key) for key, used, limit, _unit in limits if limit > 0]
    share, key = max(shares, default=(0.0, ""))
    if not 0 < share < 1:
        return Forecast(elapsed=elapsed)
    return Forecast(
        elapsed=elapsed,
        limit=LIMIT_LABELS[key],
        percent=round(share * 100),
        remaining=elapsed * (1 - share) / share,
    )


def progress_context(run: ResearchRun) -> dict[str, Any]:
    budget = run.budget_contract
    usage = run.usage_contract
    finished = (ResearchStep.Status.SUCCEEDED, ResearchStep.Status.FAILED)
    steps = Counter(run.steps.filter(status__in=finished).values_list("kind", flat=True).order_by())
    coverage = run.state_contract.coverage
    plan = run.plan_contract
    questions = len(plan.questions) if plan else 0
    covered = sum(1 for item in coverage.values() if item.evidence_count > 0)
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
        "forecast": forecast(run, limits, usage.elapsed_seconds),
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
    # The sub-questions a read serves ("1. …"): those its evidence answers once read, the
    # ones it was chosen for before.
    serves: tuple[str, ...] = ()


def _quoted(text: Any) -> str:
    return f"“{' '.join(str(text or '').split())[:160]}”"


@dataclass(frozen=True)
class SourceName:
    title: str
    domain: str

    def __str__(self) -> str:
        if self.title and self.domain:
            return f"{_quoted(self.title)} ({self.domain})"
        return _quoted(self.title) if self.title else self.domain


_PLAN_KEY = re.compile(r"^plan:v(\d+)$")


def plan_step_version(step: ResearchStep) -> int | None:
    """The plan version a plan step produced: its dedupe key is ``plan:v<version>``."""
    match = _PLAN_KEY.match(step.dedupe_key or "")
    return int(match.group(1)) if match else None


def step_label(step: ResearchStep, titles: dict[str, Any]) -> str:
    """What a durable step did, in words: “Searching …”, “Reading “Title” (domain)”."""
    payload = StepInput.read(step.input).payload
    refused = payload.refused
    if step.kind == ResearchStep.Kind.PLAN:
        refinement = payload.refinement
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
            if payload.finish
            else "Choosing what to search and read next"
        )
    if step.kind == ResearchStep.Kind.SEARCH:
        query = payload.target_query
        if refused:
            return f"Search not run: {_quoted(query)}"
        if payload.follow_up:
            return f"Comparing conflicting figures: searching {_quoted(query)}"
        return f"Searching {_quoted(query)}"
    if step.kind == ResearchStep.Kind.READ:
        name = str(titles.get(payload.target_source_id) or "") or _host(payload.url) or "a source"
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
            "dedupe_key",
            "created_at",
            "started_at",
            "completed_at",
        ).order_by("-created_at")[:TIMELINE_LIMIT]
    )[::-1]
    earlier = run.steps.count() - len(steps) if len(steps) == TIMELINE_LIMIT else 0
    names, answered = _read_sources(run, steps)
    numbered = _numbered_questions(run)
    now = timezone.now()
    rows = [
        StepRow(
            id=str(step.pk),
            label=step_label(step, names),
            detail=_step_detail(step, run),
            rationale=StepInput.read(step.input).rationale,
            status=step.status,
            status_label=step.get_status_display(),
            elapsed=_elapsed(step, now),
            iteration=step.iteration,
            serves=_serves(step, answered, numbered),
        )
        for step in steps
    ]
    return {"run": run, "steps": rows, "earlier_steps": earlier}


def _read_sources(
    run: ResearchRun, steps: list[ResearchStep]
) -> tuple[dict[str, SourceName], dict[str, set[str]]]:
    """The sources the timeline's reads name, and the sub-questions their evidence answers
    (two queries)."""
    read_ids = _valid_uuids(
        {StepInput.read(s.input).payload.source_id for s in steps if s.kind == "read"} - {""}
    )
    names = {
        str(pk): SourceName(title or "", domain or "")
        for pk, title, domain in ResearchSource.objects.filter(
            run=run, pk__in=read_ids
        ).values_list("id", "title", "domain")
    }
    answered: dict[str, set[str]] = {}
    for source_id, question_ids in ResearchEvidence.objects.filter(
        run=run, source_id__in=read_ids, out_of_scope=False
    ).values_list("source_id", "question_ids"):
        answered.setdefault(str(source_id), set()).update(question_ids or [])
    return names, answered


def _numbered_questions(run: ResearchRun) -> dict[str, str]:
    plan = run.plan_contract
    questions = plan.questions if plan else []
    return {q.id: f"{n}. {' '.join(q.text.split())[:90]}" for n, q in enumerate(questions, 1)}


def _serves(
    step: ResearchStep, answered: dict[str, set[str]], numbered: dict[str, str]
) -> tuple[str, ...]:
    if step.kind != ResearchStep.Kind.READ:
        return ()
    payload = StepInput.read(step.input).payload
    ids = answered.get(payload.source_id) or set(payload.question_ids)
    return tuple(numbered[qid] for qid in numbered if qid in ids)


def _step_detail(step: ResearchStep, run: ResearchRun) -> str:
    if step.status == ResearchStep.Status.FAILED and step.error:
        return step.error
    version = plan_step_version(step) if step.kind == ResearchStep.Kind.PLAN else None
    if version is None or step.status != ResearchStep.Status.SUCCEEDED:
        return step.summary
    detail = f"Produced plan version {version}"
    if run.plan_version > version:
        detail += f"; the plan is now version {run.plan_version}"
    return detail + "."


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
            run.plan_contract,
            run.plan_version,
            extra_sections=template_sections(run.report_template),
            policy=run.policy_contract,
        )
    plan = run.plan_contract
    required = set(plan.completion_criteria.required_question_ids) if plan else set()
    questions = [
        {**q.model_dump(mode="json"), "required": q.priority == "required" or q.id in required}
        for q in (plan.questions if plan else [])
    ]
    return {
        "run": run,
        "plan": run.plan or {},
        "plan_questions": questions,
        "editor": editor if editable else None,
        "template_sections": template_sections(run.report_template),
        "policy": run.policy_contract,
        "budget": run.budget_contract,
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


@dataclass(frozen=True)
class Section:
    """A named part of the workspace: what builds its context from the run and who looks
    (``request`` is None when the WebSocket pushes it), and whether the WebSocket pushes it
    rendered (parts with forms load themselves over HTTP instead)."""

    build: Callable[[ResearchRun, User | AnonymousUser, HttpRequest | None], dict[str, Any]]
    pushed: bool = False


SECTIONS: dict[str, Section] = {
    "header": Section(lambda run, user, request: header_context(run, user), pushed=True),
    "progress": Section(lambda run, user, request: progress_context(run), pushed=True),
    "timeline": Section(lambda run, user, request: timeline_context(run), pushed=True),
    "sources": Section(lambda run, user, request: sources_context(run), pushed=True),
    "controls": Section(lambda run, user, request: controls_context(request, run)),
    "sharing": Section(lambda run, user, request: sharing_context(request, run)),
    "plan": Section(lambda run, user, request: plan_context(request, run)),
}
# Parts with forms the WebSocket asks the page to reload over HTTP, so their CSRF token and
# the user's permissions come from a normal request.
RELOADED = ("controls", "plan")


def section_context(name: str, request: HttpRequest, run: ResearchRun) -> dict[str, Any]:
    return SECTIONS[name].build(run, request.user, request)


def live_fragments(run: ResearchRun, user: User | AnonymousUser, sections: Iterable[str]) -> str:
    """HTML the WebSocket pushes: the named workspace parts, rendered from the database.
    Parts with forms (plan, controls) are sent as empty containers that load themselves over
    HTTP (``RELOADED``)."""
    parts = [
        render_to_string(f"{WORKSPACE}#{name}", {**section.build(run, user, None), "oob": True})
        for name, section in SECTIONS.items()
        if section.pushed and name in sections
    ]
    loaders = [
        render_to_string(f"{WORKSPACE}#loader", {"run": run, "section": name})
        for name in RELOADED
        if name in sections
    ]
    if loaders:
        parts.append(
            '<div id="live-triggers" hidden hx-swap-oob="innerHTML">' + "".join(loaders) + "</div>"
        )
    return "".join(parts)


def section_response(
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
        f"{WORKSPACE}#{first}", {**section_context(first, request, run), **extra}, request
    )
    for name in also:
        context = {**section_context(name, request, run), "oob": True}
        html += render_to_string(f"{WORKSPACE}#{name}", context, request)
    return HttpResponse(html, status=status)
