"""Writes on research runs: creation and the controls the UI and the API both call.

Callers check permissions first (``research.access``); these functions check the
lifecycle. Every status change is a compare-and-set on (status[, plan_version]), so a
control that raced with a worker or another user fails with a clear sentence instead
of overwriting. Work is handed to the background only after commit.
"""

from __future__ import annotations

import logging
import math
import secrets
import uuid
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from pydantic import ValidationError as PydanticValidationError

from accounts.models import Membership, Team, User
from research.access import can_create_team_run
from research.engine.contracts import Budget, ResearchPlan, SourcePolicy
from research.engine.guards import budget_for
from research.engine.outcomes import outcome_controls, run_outcome
from research.engine.plans import plans_equal, policies_equal
from research.engine.states import (
    Control,
    RunStatus,
    can_pause,
    is_terminal,
    resume_target,
    retry_target,
)
from research.libraries import LibraryError, check_policy_documents
from research.lifecycle import run_transition
from research.llm.clarify import CLARIFY_ANSWER_MAX_CHARS, MAX_CLARIFYING_QUESTIONS
from research.models import ResearchEvidence, ResearchRun, ResearchSource
from research.worker.store import evidence_from_row, write_evidence_row

# QueueUnavailable is part of what the controls raise (callers catch services.QueueUnavailable).
from research.worker.tasks import QueueUnavailable as QueueUnavailable
from research.worker.tasks import enqueue_advance

logger = logging.getLogger(__name__)

QUESTION_MAX_CHARS = 4000
INSTRUCTION_MAX_CHARS = 2000
# The column's width (ResearchRun.client_request_id); pages send a 32-character hex id.
CLIENT_REQUEST_ID_MAX_CHARS = 64
# Statuses of a run whose plan the planner is drafting (each costs a planner call).
PLANNING_STATUSES = (RunStatus.CREATED, RunStatus.PLANNING)


class RunActionError(Exception):
    """A control that cannot be applied now; the message says why, in one sentence."""


class QuotaExceeded(RunActionError):
    """The user reached a per-user limit on new research (HTTP 429); the sentence says which
    and when it frees up."""


class PlanVersionConflict(RunActionError):
    """The plan changed since the user loaded it (HTTP 409 in the API)."""

    def __init__(self, *, expected: int, current: int, current_plan: dict | None) -> None:
        self.expected = expected
        self.current = current
        self.current_plan = current_plan
        super().__init__(
            f"The plan was changed by someone else while you were editing (you edited version "
            f"{expected}, it is now version {current}); review the current plan and edit again."
        )


def _validation_sentence(exc: PydanticValidationError) -> str:
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error["loc"]) or "plan"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


def _has_live_lease(run: ResearchRun) -> bool:
    return bool(run.lease_owner) and (
        run.lease_expires_at is not None and run.lease_expires_at > timezone.now()
    )


def _refused(run: ResearchRun, action: str) -> RunActionError:
    if run.status == RunStatus.BUDGET_EXHAUSTED:
        return RunActionError(f"A run that ended with a partial report cannot be {action}.")
    label = run.get_status_display().lower()
    return RunActionError(f"A run that is {label} cannot be {action}.")


def check_creation_quota(owner: User, *, planning: bool) -> None:
    """Raise ``QuotaExceeded`` when ``owner`` created ``RESEARCH_MAX_RUNS_PER_USER_PER_HOUR`` runs in
    the last hour, or (``planning``) has ``RESEARCH_MAX_PLANNING_RUNS_PER_USER`` plans being
    drafted. Each new run costs at least one planner call, which these limits bound."""
    hour_ago = timezone.now() - timedelta(hours=1)
    mine = ResearchRun.objects.filter(owner=owner)
    recent = mine.filter(created_at__gte=hour_ago)
    per_hour = settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR
    if recent.count() >= per_hour:
        oldest = recent.order_by("created_at").values_list("created_at", flat=True).first()
        wait = oldest + timedelta(hours=1) - timezone.now()
        minutes = max(1, math.ceil(wait.total_seconds() / 60))
        raise QuotaExceeded(
            f"You started {per_hour} research run{'s' if per_hour > 1 else ''} in the last "
            "hour, the most this server "
            f"allows; you can start another in about {minutes} minute{'s' if minutes > 1 else ''}."
        )
    at_once = settings.RESEARCH_MAX_PLANNING_RUNS_PER_USER
    if planning and mine.filter(status__in=PLANNING_STATUSES).count() >= at_once:
        raise QuotaExceeded(
            f"{at_once} of your research plans are still being drafted, the most this server "
            "drafts at once for one person; start this one when one of them is ready."
        )


def depth_allowed(depth: str) -> bool:
    """Whether this deployment's budget cap (``RESEARCH_MAX_DEPTH``) allows ``depth`` (one
    of ``ResearchRun.Depth``); the composer and ``run_create`` both ask this."""
    order = list(ResearchRun.Depth.values)
    return order.index(depth) <= order.index(settings.RESEARCH_MAX_DEPTH)


def deployment_budget_cap() -> Budget:
    """The largest budget this deployment allows (a depth preset, ``RESEARCH_MAX_DEPTH``)."""
    return budget_for(settings.RESEARCH_MAX_DEPTH)


def run_create(
    *,
    owner: User,
    question: str,
    depth: str = ResearchRun.Depth.STANDARD,
    source_policy: dict | None = None,
    team: Team | None = None,
    visibility: str = ResearchRun.Visibility.PRIVATE,
    report_template: str = "",
    client_request_id: str | None = None,
    auto_approve: bool = False,
    clarifications: Sequence[dict[str, str]] = (),
) -> ResearchRun:
    """Create a run and start planning it in the background. With ``auto_approve`` the
    worker approves the plan as soon as it is drafted (``research.worker.actors``).
    ``clarifications`` are answered clarifying questions (``{"question", "answer"}``), given
    to the planner and kept in the plan's assumptions."""
    question = question.strip()
    if not question:
        raise RunActionError("Write the question you want researched.")
    if len(question) > QUESTION_MAX_CHARS:
        raise RunActionError(
            f"The question is too long; keep it under {QUESTION_MAX_CHARS} characters."
        )
    if depth not in ResearchRun.Depth.values:
        raise RunActionError(f"{depth!r} is not a depth; choose quick, standard or thorough.")
    if not depth_allowed(depth):
        raise RunActionError(
            f"This server allows research up to “{settings.RESEARCH_MAX_DEPTH}” depth; "
            f"choose a smaller depth."
        )
    try:
        policy = SourcePolicy.model_validate(source_policy or {})
    except PydanticValidationError as exc:
        raise RunActionError(
            f"The source controls are not valid: {_validation_sentence(exc)}."
        ) from None
    _check_documents(owner, policy)
    if team is not None and not can_create_team_run(owner, team):
        if not Membership.objects.filter(team=team, user=owner).exists():
            raise RunActionError("You can only share research with a team you belong to.")
        raise RunActionError(
            "Only the team's owners and editors can start research for it; choose one of "
            "your teams where you are an editor or owner, or keep the research private."
        )
    # Link sharing needs no team: the link reads the report; a team adds its members.
    if visibility == ResearchRun.Visibility.TEAM and team is None:
        raise RunActionError("Choose a team to share this research with.")
    if client_request_id and len(client_request_id) > CLIENT_REQUEST_ID_MAX_CHARS:
        raise RunActionError(
            "This form's request id is not one this page made; reload the page and submit "
            "your question again."
        )
    with transaction.atomic():
        # One creation per user at a time, so two quick submissions cannot both pass the
        # quota or both miss each other's request id.
        User.objects.select_for_update().filter(pk=owner.pk).first()
        if client_request_id:
            existing = ResearchRun.objects.filter(
                owner=owner, client_request_id=client_request_id
            ).first()
            if existing is not None:
                return existing  # the same submission twice (double click, retry) is one run
        check_creation_quota(owner, planning=True)
        run = ResearchRun.objects.create(
            owner=owner,
            question=question,
            title=question[:200],
            depth=depth,
            source_policy=policy.model_dump(mode="json"),
            budget=budget_for(depth).model_dump(mode="json"),
            team=team,
            visibility=visibility,
            share_token=secrets.token_urlsafe(24)
            if visibility == ResearchRun.Visibility.LINK
            else None,
            report_template=report_template,
            client_request_id=client_request_id,
            auto_approve=auto_approve,
            clarifications=_clean_clarifications(clarifications),
        )
        enqueue_advance(run.pk)
    return run


def _check_documents(owner: User, policy: SourcePolicy) -> None:
    try:
        check_policy_documents(owner, policy)
    except LibraryError as error:
        raise RunActionError(str(error)) from None


def _clean_clarifications(items: Sequence[dict[str, str]]) -> list[dict[str, str]]:
    kept = []
    for item in list(items)[:MAX_CLARIFYING_QUESTIONS]:
        question = " ".join(str(item.get("question", "")).split())[:300]
        answer = " ".join(str(item.get("answer", "")).split())[:CLARIFY_ANSWER_MAX_CHARS]
        if question and answer:
            kept.append({"question": question, "answer": answer})
    return kept


@transaction.atomic
def plan_update(
    *,
    run: ResearchRun,
    plan: dict,
    expected_version: int,
    source_policy: dict | None = None,
    by: Any = None,
) -> ResearchRun:
    """Save an edited plan (and, when given, source policy) as a new version; refused when
    the edit was based on an old version. The policy may change only before approval."""
    try:
        validated = ResearchPlan.model_validate(plan)
    except PydanticValidationError as exc:
        raise RunActionError(f"The plan is not valid: {_validation_sentence(exc)}.") from None
    fields: dict[str, Any] = {}
    if source_policy is not None:
        try:
            policy = SourcePolicy.model_validate(source_policy)
        except PydanticValidationError as exc:
            raise RunActionError(
                f"The source controls are not valid: {_validation_sentence(exc)}."
            ) from None
        _check_documents(run.owner, policy)
        fields["source_policy"] = policy.model_dump(mode="json")
    updated = ResearchRun.objects.filter(
        pk=run.pk, status=RunStatus.AWAITING_APPROVAL, plan_version=expected_version
    ).update(
        plan=validated.model_dump(mode="json"),
        plan_version=F("plan_version") + 1,
        plan_saved_by=by,
        updated_at=timezone.now(),
        **fields,
    )
    run.refresh_from_db()
    if updated == 1:
        return run
    if run.status != RunStatus.AWAITING_APPROVAL:
        raise _refused(run, "edited; only a plan awaiting approval can change")
    raise PlanVersionConflict(
        expected=expected_version, current=run.plan_version, current_plan=run.plan
    )


@transaction.atomic
def plan_approve(*, run: ResearchRun, expected_version: int) -> ResearchRun:
    """Approve the plan the user saw; research starts in the background."""
    if run.status != RunStatus.AWAITING_APPROVAL:
        raise _refused(run, "approved")
    if not run_transition(
        run,
        expected=RunStatus.AWAITING_APPROVAL,
        to=RunStatus.QUEUED,
        plan_version=expected_version,
        approved_at=timezone.now(),
    ):
        run.refresh_from_db()
        if run.status == RunStatus.AWAITING_APPROVAL:
            raise PlanVersionConflict(
                expected=expected_version, current=run.plan_version, current_plan=run.plan
            )
        raise _refused(run, "approved")
    enqueue_advance(run.pk)
    return run


@transaction.atomic
def plan_save(
    *,
    run: ResearchRun,
    plan: dict[str, Any],
    expected_version: int,
    source_policy: dict[str, Any] | None,
    approve: bool,
    by: Any = None,
) -> tuple[ResearchRun, bool]:
    """Save an edited plan (and source policy) as a new version when it changed, then
    approve it if asked; returns the run and whether anything changed. Approving therefore
    always approves exactly what the person saw in the form."""
    version = expected_version
    policy_changed = source_policy is not None and not policies_equal(
        source_policy, run.source_policy
    )
    changed = policy_changed or not plans_equal(plan, run.plan)
    if changed:
        run = plan_update(
            run=run,
            plan=plan,
            expected_version=version,
            source_policy=source_policy if policy_changed else None,
            by=by,
        )
        version = run.plan_version
    if approve:
        run = plan_approve(run=run, expected_version=version)
    return run, changed


@transaction.atomic
def run_pause(*, run: ResearchRun) -> ResearchRun:
    """Pause now when no worker holds the run, else ask the worker to pause at a safe point."""
    if not can_pause(run.status):
        raise _refused(run, "paused")
    idle = run.status in (RunStatus.CREATED, RunStatus.AWAITING_APPROVAL) or (
        run.status == RunStatus.QUEUED and not _has_live_lease(run)
    )
    if idle and run_transition(run, expected=run.status, to=RunStatus.PAUSED):
        return run
    ResearchRun.objects.filter(pk=run.pk).update(pause_requested=True, updated_at=timezone.now())
    run.refresh_from_db()
    return run


@transaction.atomic
def run_resume(*, run: ResearchRun) -> ResearchRun:
    if run.status != RunStatus.PAUSED:
        raise _refused(run, "resumed")
    target = resume_target(run.resume_phase or RunStatus.QUEUED)
    if not run_transition(
        run, expected=RunStatus.PAUSED, to=target, pause_requested=False, resume_phase=""
    ):
        raise _refused(run, "resumed")
    if target != RunStatus.AWAITING_APPROVAL:
        enqueue_advance(run.pk)
    return run


@transaction.atomic
def run_cancel(*, run: ResearchRun, reason: str = "Cancelled by a user.") -> ResearchRun:
    """Cancel for good: pending steps are cancelled and no report is written."""
    if is_terminal(run.status):
        raise _refused(run, "cancelled")
    if _has_live_lease(run):
        ResearchRun.objects.filter(pk=run.pk).update(
            cancel_requested=True, updated_at=timezone.now()
        )
        run.refresh_from_db()
        return run
    if not run_transition(
        run,
        expected=run.status,
        to=RunStatus.CANCELLED,
        reason=reason,
        cancel_requested=True,
    ):
        raise _refused(run, "cancelled")
    return run


@transaction.atomic
def run_refine(*, run: ResearchRun, instruction: str, user: User) -> ResearchRun:
    """Ask for a revised plan. A completed run is never changed: a new run refines it."""
    instruction = instruction.strip()
    if not instruction:
        raise RunActionError("Say how the research should change.")
    if len(instruction) > INSTRUCTION_MAX_CHARS:
        raise RunActionError(
            f"The instruction is too long; keep it under {INSTRUCTION_MAX_CHARS} characters."
        )
    if run.status == RunStatus.COMPLETED:
        User.objects.select_for_update().filter(pk=user.pk).first()
        check_creation_quota(user, planning=False)
        # The follow-up stays with the team only when its new owner may create team runs.
        shared = (
            run.visibility != ResearchRun.Visibility.PRIVATE
            and run.team is not None
            and can_create_team_run(user, run.team)
        )
        child = ResearchRun.objects.create(
            owner=user,
            parent_run=run,
            question=run.question,
            title=run.title,
            depth=run.depth,
            source_policy=run.source_policy,
            budget=run.budget,
            team=run.team if shared else None,
            visibility=ResearchRun.Visibility.TEAM if shared else ResearchRun.Visibility.PRIVATE,
            report_template=run.report_template,
            plan=run.plan,
            plan_version=1,
            status=RunStatus.PAUSED,
            resume_phase=RunStatus.PLANNING,
            refinement_instruction=instruction,
        )
        _carry_over_evidence(parent=run, child=child)
        enqueue_advance(child.pk)
        return child
    if run.status not in (RunStatus.AWAITING_APPROVAL, RunStatus.PAUSED, RunStatus.RESEARCHING):
        raise _refused(run, "refined")
    ResearchRun.objects.filter(pk=run.pk).update(
        refinement_instruction=instruction,
        pause_requested=run.status == RunStatus.RESEARCHING,
        updated_at=timezone.now(),
    )
    run.refresh_from_db()
    if run.status != RunStatus.RESEARCHING:
        # Nobody is working on it: revise the plan straight away in the background.
        enqueue_advance(run.pk)
    return run


def _carry_over_evidence(*, parent: ResearchRun, child: ResearchRun) -> int:
    """Give a follow-up run the parent's acquired sources and verified evidence.

    Copies, not links: each run owns its rows, evidence ids and hashes are re-derived for
    the new run (they include the run id), and the snapshots come along so every excerpt
    still verifies at its stored offsets. Returns how many excerpts were carried over.
    """
    from research.engine.ledger import evidence_hash, evidence_id_for

    kept = (ResearchSource.Status.FETCHED, ResearchSource.Status.DUPLICATE)
    new_ids: dict[Any, Any] = {}
    sources = list(
        ResearchSource.objects.filter(run=parent, status__in=kept).order_by("created_at")
    )
    for source in sources:
        old_id = source.pk
        source.pk = None
        source.id = uuid.uuid4()
        source.run = child
        source.discovered_by_step = None
        source.duplicate_of_id = new_ids.get(source.duplicate_of_id)
        source._state.adding = True
        source.save()
        new_ids[old_id] = source.pk
    copied = 0
    for item in ResearchEvidence.objects.filter(
        run=parent, out_of_scope=False, source_id__in=new_ids
    ):
        source_id = new_ids[item.source_id]
        digest = evidence_hash(str(child.pk), str(source_id), item.excerpt, item.claim_key or None)
        carried = evidence_from_row(item).model_copy(
            update={
                "id": evidence_id_for(digest),
                "run_id": str(child.pk),
                "source_id": str(source_id),
                "evidence_hash": digest,
            }
        )
        write_evidence_row(carried, step_id=None)
        copied += 1
    return copied


@transaction.atomic
def run_retry(*, run: ResearchRun) -> ResearchRun:
    """Retry only the phase that failed; synthesis reruns from stored evidence."""
    if run.status != RunStatus.FAILED:
        raise _refused(run, "retried")
    target = retry_target(run.resume_phase or RunStatus.RESEARCHING)
    if not run_transition(
        run,
        expected=RunStatus.FAILED,
        to=target,
        last_error="",
        resume_phase="",
        terminal_reason="",
        # A retry is a person's decision to try again: earlier worker errors no longer count.
        worker_attempts=0,
        worker_error="",
    ):
        raise _refused(run, "retried")
    enqueue_advance(run.pk)
    return run


BUDGET_INCREASE_FACTOR = 1.5
_GROWING_LIMITS = (
    "iterations",
    "searches",
    "fetched_sources",
    "model_calls",
    "elapsed_seconds",
    "bytes_per_run",
    "input_tokens",
    "output_tokens",
)


@transaction.atomic
def budget_increase(*, run: ResearchRun, factor: float = BUDGET_INCREASE_FACTOR) -> ResearchRun:
    """Grow every hard limit by ``factor`` (capped by the deployment) and research on."""
    if run.status != RunStatus.BUDGET_EXHAUSTED:
        raise _refused(run, "given more budget")
    if Control.INCREASE_BUDGET not in outcome_controls(run.status, run.stop_reason):
        why = run_outcome(run.status, run.stop_reason).label.partition(": ")[2]
        raise RunActionError(
            f"This run did not stop at a budget limit ({why}), so more budget would not help."
        )
    if not 1 < factor <= 4:
        raise RunActionError("A budget can grow by more than 1× and at most 4× at a time.")
    current = run.budget_contract
    cap = deployment_budget_cap().model_dump()
    grown = current.model_dump()
    for name in _GROWING_LIMITS:
        grown[name] = max(grown[name], min(math.ceil(grown[name] * factor), cap[name] * 2))
    if all(grown[name] == getattr(current, name) for name in _GROWING_LIMITS):
        raise RunActionError("This run already has the largest budget this server allows.")
    if not run_transition(
        run,
        expected=RunStatus.BUDGET_EXHAUSTED,
        to=RunStatus.QUEUED,
        budget=Budget.model_validate(grown).model_dump(mode="json"),
        terminal_reason="",
    ):
        raise _refused(run, "given more budget")
    enqueue_advance(run.pk)
    return run


def queue_position(run: ResearchRun) -> int | None:
    """1-based place among approved runs still waiting for a worker, or None."""
    if run.status != RunStatus.QUEUED or run.approved_at is None:
        return None
    ahead = ResearchRun.objects.filter(
        Q(status=RunStatus.QUEUED),
        Q(lease_owner="") | Q(lease_expires_at__lt=timezone.now()),
        Q(approved_at__lt=run.approved_at),
    ).count()
    return ahead + 1


def sharing_update(*, run: ResearchRun, visibility: str, team: Team | None) -> ResearchRun:
    """Change who may see a run; a new link token is minted each time link sharing starts."""
    if visibility not in ResearchRun.Visibility.values:
        raise RunActionError(
            "Choose who may see this research: only you, your team, or anyone with the link."
        )
    # Link sharing needs no team: the link reads the report; a team adds its members.
    if visibility == ResearchRun.Visibility.TEAM and team is None:
        raise RunActionError("Choose a team to share this research with.")
    if team is not None and not can_create_team_run(run.owner, team):
        raise RunActionError(
            "The run's owner is not an owner or editor of that team, so it cannot be shared "
            "with it."
        )
    token = run.share_token if visibility == ResearchRun.Visibility.LINK else None
    if visibility == ResearchRun.Visibility.LINK and not token:
        token = secrets.token_urlsafe(24)
    ResearchRun.objects.filter(pk=run.pk).update(
        visibility=visibility, team=team, share_token=token, updated_at=timezone.now()
    )
    run.refresh_from_db()
    return run
