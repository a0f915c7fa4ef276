"""Background work: Dramatiq actors that take only a run id.

An actor claims the run with a lease (compare-and-set), keeps the lease alive with a
heartbeat, asks the orchestrator to advance the run as far as it can go, and releases
the lease. Running the same message twice is harmless: the second claim fails, or the
orchestrator finds the work already committed. Each network and model call has its own
timeout (Dramatiq's time limit cannot interrupt a blocking socket). An attempt that ends in
an unexpected error is counted on the run and, after ``RESEARCH_WORKER_MAX_ATTEMPTS`` in a
row, fails it (``research.worker.crashes``) instead of being re-sent forever.
"""

from __future__ import annotations

import logging

import dramatiq
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db.models import Q
from django.utils import timezone
from django.utils.module_loading import import_string
from dramatiq.middleware import TimeLimitExceeded

from research import telemetry
from research.engine import observe
from research.engine.ports import LeaseLost, ModelClient, SystemClock, Verifier
from research.engine.run.orchestrator import Orchestrator
from research.engine.states import RunStatus, is_terminal
from research.lifecycle import run_transition
from research.llm.extractive import ExtractiveModelClient
from research.llm.factory import llm_config_from_settings, model_client_from_config
from research.models import ResearchRun
from research.sources import WebSourceAdapter
from research.sources.config import sources_config_from_settings
from research.worker import webhooks
from research.worker.answers import ANSWER_TIME_LIMIT_SECONDS, answer_turn
from research.worker.crashes import clear_crashes, record_crash
from research.worker.documents import LibraryCatalog
from research.worker.events import ChannelLayerEvents
from research.worker.leases import Heartbeat, claim_run, new_owner_id, release_lease
from research.worker.store import DjangoStore

logger = logging.getLogger(__name__)

# Work that needs an execution slot (the per-user and per-deployment limits).
_SLOT_STATUSES = (RunStatus.QUEUED, RunStatus.RESEARCHING, RunStatus.SYNTHESIZING)
# The longest budget is 45 minutes of research; the orchestrator stops itself well before.
_TIME_LIMIT_MS = 70 * 60 * 1000


def build_orchestrator(
    *, lease_owner: str | None, model: ModelClient | None = None
) -> Orchestrator:
    """The orchestrator wired to the database, the web and ``model`` (default: the one the
    ``RESEARCH_MODEL_CLIENT`` setting names, else the configured model endpoint, or the
    extractive backend when none is configured)."""
    client = model or configured_model_client()
    return Orchestrator(
        store=DjangoStore(lease_owner=lease_owner),
        model=client,
        sources=WebSourceAdapter(sources_config_from_settings(), documents=LibraryCatalog()),
        events=telemetry.ObservedEvents(ChannelLayerEvents()),
        clock=SystemClock(),
        # A backend with a language model verifies findings; the extractive one is no Verifier.
        verifier=client if isinstance(client, Verifier) else None,
        # A model endpoint may need one repair call per request; the extractive backend never does.
        calls_per_request=1 if isinstance(client, ExtractiveModelClient) else 2,
    )


def configured_model_client() -> ModelClient:
    """The model client this deployment's settings choose (docs/configuration.md)."""
    path = settings.RESEARCH_MODEL_CLIENT
    if not path:
        return model_client_from_config(llm_config_from_settings())
    try:
        factory = import_string(path)
    except ImportError as exc:
        raise ImproperlyConfigured(
            f"RESEARCH_MODEL_CLIENT names {path!r}, which cannot be imported: {exc}"
        ) from None
    return factory()


@dramatiq.actor(queue_name="research", max_retries=3, min_backoff=5_000, time_limit=_TIME_LIMIT_MS)
def advance_run(run_id: str) -> None:
    """Advance one run as far as it can go without a person; safe to run twice."""
    # Log lines and spans of this attempt name the run. Spans leave in the background
    # (batched every few seconds, and at exit), never holding up the next message.
    with observe.working_on(run_id):
        _advance(run_id)


def _advance(run_id: str) -> None:
    run = ResearchRun.objects.filter(pk=run_id).first()
    if run is None or is_terminal(run.status):
        return
    owner = new_owner_id()
    if not claim_run(run_id, owner, needs_slot=run.status in _SLOT_STATUSES):
        # Held by another worker, or no slot free: the reaper and finishing runs re-send it.
        return
    try:
        with Heartbeat(run_id, owner):
            _advance_claimed(run_id, owner)
    except LeaseLost as exc:
        telemetry.lease_lost()
        logger.info("Stopped work on run %s: %s", run_id, exc)
    except (Exception, TimeLimitExceeded) as exc:
        _count_crash(run_id, owner, exc)
    else:
        clear_crashes(run_id)
    finally:
        release_lease(run_id, owner)
        wake_queued_runs()
    _emit_webhooks(run_id)


def _emit_webhooks(run_id: str) -> None:
    """Tell subscribed webhooks about the state the run was left in (never fails the run)."""
    try:
        webhooks.emit(run_id)
    except Exception:
        logger.exception("Could not queue the webhooks of run %s.", run_id)


def _count_crash(run_id: str, owner: str, error: BaseException) -> None:
    """Record an attempt that ended in an unexpected error, logging its traceback once.
    The error is not raised again: the count decides whether the run is tried again (the
    reaper re-sends it) or failed, so Dramatiq's own retries would only add attempts."""
    try:
        record = record_crash(run_id, owner, error)
    except Exception:
        # Recording needs the database; if it is down, Dramatiq's retries (with backoff)
        # and the reaper try the run again later.
        logger.exception("Run %s: could not record a worker error.", run_id)
        raise error from None
    if record is None:
        logger.error(
            "Run %s: unexpected error; another worker holds the run now.", run_id, exc_info=error
        )
    elif record.failed:
        logger.error(
            "Run %s: unexpected error on attempt %d of %d; the run is now failed.",
            run_id,
            record.attempts,
            record.limit,
            exc_info=error,
        )
    else:
        logger.error(
            "Run %s: unexpected error on attempt %d of %d; it will be tried again.",
            run_id,
            record.attempts,
            record.limit,
            exc_info=error,
        )


def _advance_claimed(run_id: str, owner: str) -> None:
    orchestrator = build_orchestrator(lease_owner=owner)
    run = ResearchRun.objects.get(pk=run_id)
    if run.refinement_instruction and run.status in (RunStatus.PAUSED, RunStatus.AWAITING_APPROVAL):
        orchestrator.revise_plan(run_id, run.refinement_instruction)
        return
    if run.status in (RunStatus.PAUSED, RunStatus.AWAITING_APPROVAL):
        return  # waiting for a person
    status = orchestrator.advance(run_id)
    if status == RunStatus.AWAITING_APPROVAL and run.auto_approve:
        _auto_approve(run)
        return
    run.refresh_from_db()
    if status == RunStatus.PAUSED and run.refinement_instruction:
        # A refinement asked the run to pause at a safe point; now revise the plan.
        orchestrator.revise_plan(run_id, run.refinement_instruction)


def _auto_approve(run: ResearchRun) -> None:
    """A run created with ``auto_approve`` goes on with the plan it just drafted, as if its
    owner had approved that version. A plan waiting for a refinement, or one a person already
    acted on, is left alone."""
    run.refresh_from_db()
    if (
        not run.auto_approve
        or run.status != RunStatus.AWAITING_APPROVAL
        or run.refinement_instruction
    ):
        return
    if run_transition(
        run,
        expected=RunStatus.AWAITING_APPROVAL,
        to=RunStatus.QUEUED,
        plan_version=run.plan_version,
        approved_at=timezone.now(),
    ):
        wake_queued_runs()


def wake_queued_runs() -> None:
    """Offer free execution slots to the longest-waiting approved runs."""
    now = timezone.now()
    waiting = (
        ResearchRun.objects.filter(status=RunStatus.QUEUED)
        .filter(Q(lease_owner="") | Q(lease_expires_at__lte=now))
        .order_by("approved_at")
        .values_list("pk", flat=True)[: settings.RESEARCH_MAX_ACTIVE_RUNS]
    )
    for pk in waiting:
        advance_run.send(str(pk))


@dramatiq.actor(
    queue_name="questions",
    max_retries=3,
    min_backoff=5_000,
    time_limit=ANSWER_TIME_LIMIT_SECONDS * 1000,
)
def answer_question(turn_id: str) -> None:
    """Answer one question about a report from its frozen evidence; safe to run twice."""
    answer_turn(turn_id, model=configured_model_client())
