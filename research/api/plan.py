"""The plan (read it, replace it with a version check) and the controls on a run: approve,
pause, resume, cancel, refine, retry and a bigger budget."""

from __future__ import annotations

from uuid import UUID

from django.http import HttpRequest

from research import services
from research.api import schemas as s
from research.api.base import READ, WRITE, _plan_out, _run, api, run_out
from research.api.errors import ApiError, ConflictOut, ErrorOut
from research.engine.contracts import ResearchPlan
from research.models import ResearchRun

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
            by=request.auth,
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
