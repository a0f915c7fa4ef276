"""The research loop: planning, program-controlled research and synthesis.

The orchestrator talks to the world only through the ports (``Store``, ``ModelClient``,
``SourceAdapter``, ``EventSink``, ``Clock``) and decides everything with the engine's own
rules: the decision model proposes actions, :func:`validate_actions` and the
:class:`BudgetLedger` decide which run, every action becomes a durable step before it runs,
and every excerpt is verified against the stored snapshot before it counts.

Threads: searches, fetches and model extraction calls run on a small thread pool; every
store call happens on the calling thread, because the Django store keeps one database
connection per thread. The store may raise :class:`LeaseLost` from any write; it is never
caught here, so a worker that lost its run stops writing at once.

The orchestrator itself holds the entry points (``advance``, ``revise_plan``), the controls
(pause, cancel) and the status transitions; the work of each phase lives in the phase
classes it is composed of (:mod:`.planning`, :mod:`.iterations`, :mod:`.deciding`,
:mod:`.execution`, :mod:`.extraction`, :mod:`.synthesis`), which share the per-run state of :mod:`.context`,
pay for model calls through :mod:`.metering` and report through :mod:`.progress`.
"""

from research.engine import observe
from research.engine.contracts import ResearchPlan
from research.engine.guards import MAX_CONCURRENT_FETCHES, MAX_CONCURRENT_SEARCHES
from research.engine.ports import Clock, EventSink, ModelClient, SourceAdapter, Store, Verifier
from research.engine.quality import SourceClassifier, classify_source
from research.engine.run.context import CANCEL, PAUSE, Halt
from research.engine.run.deciding import Deciding
from research.engine.run.execution import Execution
from research.engine.run.extraction import Extraction
from research.engine.run.iterations import Iterations
from research.engine.run.metering import CALLS_PER_REQUEST, Meter
from research.engine.run.planning import Planning, PlanningFailed
from research.engine.run.progress import Progress, display_text
from research.engine.run.synthesis import Synthesis
from research.engine.states import IllegalTransition, RunStatus

__all__ = ["Orchestrator", "PlanningFailed"]

_S = RunStatus


class Orchestrator(Planning, Iterations, Deciding, Execution, Extraction, Synthesis):
    """Runs research runs through their lifecycle using only the ports.

    ``advance(run_id)`` does whatever the run's status calls for and returns when the run
    needs a person (awaiting approval, paused, failed, budget exhausted) or is finished.
    It is safe to call again after a crash: steps are found by their dedupe keys, sources
    by canonical URL and evidence by hash, so nothing is done or counted twice.

    Options: ``max_parallel_searches`` (1–2) and ``max_parallel_fetches`` (1–3) may only
    lower the design's limits; ``max_parallel_extractions`` bounds concurrent extraction
    calls (set it to the model endpoint's concurrency); ``search_results`` is the number of
    results asked of a search; ``extraction_max_items`` caps evidence per source;
    ``calls_per_request`` is how many model calls one request may cost (2 for a client that
    repairs invalid output once, 1 for one that never retries, such as the extractive
    backend); ``verifier`` judges findings against their excerpts before a model-written
    report is published (None: the deterministic checks alone); ``classify`` labels acquired documents (default :func:`classify_source`).
    """

    def __init__(
        self,
        *,
        store: Store,
        model: ModelClient,
        sources: SourceAdapter,
        events: EventSink,
        clock: Clock,
        verifier: Verifier | None = None,
        max_parallel_searches: int = MAX_CONCURRENT_SEARCHES,
        max_parallel_fetches: int = MAX_CONCURRENT_FETCHES,
        max_parallel_extractions: int = 3,
        search_results: int = 8,
        extraction_max_items: int = 12,
        calls_per_request: int = CALLS_PER_REQUEST,
        classify: SourceClassifier | None = None,
    ) -> None:
        if not 1 <= max_parallel_searches <= MAX_CONCURRENT_SEARCHES:
            raise ValueError(
                f"max_parallel_searches must be between 1 and {MAX_CONCURRENT_SEARCHES}."
            )
        if not 1 <= max_parallel_fetches <= MAX_CONCURRENT_FETCHES:
            raise ValueError(
                f"max_parallel_fetches must be between 1 and {MAX_CONCURRENT_FETCHES}."
            )
        if max_parallel_extractions < 1:
            raise ValueError("max_parallel_extractions must be at least 1.")
        if not 1 <= calls_per_request <= 3:
            raise ValueError("calls_per_request must be between 1 and 3.")
        if not 1 <= extraction_max_items <= 40:
            raise ValueError("extraction_max_items must be between 1 and 40.")
        self._store = store
        self._model = model
        self._verifier = verifier
        self._sources = sources
        self._clock = clock
        self._progress = Progress(events)
        self._meter = Meter(clock=clock, calls=calls_per_request)
        self._max_searches = max_parallel_searches
        self._max_fetches = max_parallel_fetches
        self._max_extractions = max_parallel_extractions
        self._search_results = search_results
        self._extraction_max_items = extraction_max_items
        self._calls = calls_per_request
        self._classify = classify or (lambda document: classify_source(document, now=clock.now()))

    # ----------------------------------------------------------------------------------------
    # Public API
    # ----------------------------------------------------------------------------------------

    def advance(self, run_id: str) -> RunStatus:
        """Do the work the run's status calls for until it needs a person or is finished.

        created/planning → a plan (awaiting_approval, or failed); queued/researching →
        research, then synthesis (completed, or budget_exhausted with a partial report);
        synthesizing → synthesis from stored evidence. Any other status is returned as is.
        Pause and cancel requests are honoured at every safe boundary.
        """
        with (
            observe.working_on(run_id),
            observe.observer().span("research.attempt", {"run_id": run_id}),
        ):
            run = self._store.load_run(run_id)
            while True:
                self._store.heartbeat(run_id)
                status = run.status
                if status in (_S.CREATED, _S.PLANNING):
                    phase, work = "planning", self._plan_phase
                elif status in (_S.QUEUED, _S.RESEARCHING):
                    phase, work = "research", self._research_phase
                elif status == _S.SYNTHESIZING:
                    phase, work = "synthesis", self._synthesis_phase
                else:
                    return status
                with observe.observer().span(
                    f"research.phase.{phase}", {"run_id": run_id, "phase": phase}
                ):
                    work(run)
                run = self._store.load_run(run_id)
                if run.status == status:
                    # Nothing moved (another worker or a control changed the run under us).
                    return run.status

    def revise_plan(self, run_id: str, instruction: str) -> ResearchPlan:
        """Revise the plan of a paused run (or one awaiting approval) with ``instruction``.

        The planner sees the previous plan and the instruction; the new plan gets the next
        version and the run returns to awaiting_approval. Steps that have not run are
        cancelled (they belonged to the old plan) and evidence addressing no question of
        the new plan is marked out of scope, never deleted. Raises
        :class:`IllegalTransition` when the run is in another status and
        :class:`PlanningFailed` (the run is then ``failed``) when the planner fails.
        """
        with (
            observe.working_on(run_id),
            observe.observer().span("research.phase.revise_plan", {"run_id": run_id}),
        ):
            run = self._store.load_run(run_id)
            if run.status in (_S.PAUSED, _S.AWAITING_APPROVAL):
                if not self._transition(run_id, run.status, _S.PLANNING, "Revising the plan."):
                    raise IllegalTransition(self._store.load_run(run_id).status, _S.PLANNING)
            elif run.status != _S.PLANNING:
                raise IllegalTransition(run.status, _S.PLANNING)
            self._store.cancel_pending_steps(run_id)
            run = self._store.load_run(run_id)
            return self._draft_plan(run, refinement=instruction.strip() or None)

    def _pending_control(self, run_id: str) -> Halt | None:
        controls = self._store.controls(run_id)
        if controls.cancel_requested:
            return CANCEL
        if controls.pause_requested:
            return PAUSE
        return None

    def _honour_controls(self, run_id: str, status: RunStatus) -> RunStatus | None:
        """Apply a pending cancel or pause before work starts in ``status``."""
        control = self._pending_control(run_id)
        if control is CANCEL:
            self._cancel(run_id, status)
            return _S.CANCELLED
        if control is PAUSE:
            self._pause(run_id, status)
            return _S.PAUSED
        return None

    def _pause(self, run_id: str, status: RunStatus) -> None:
        if self._transition(run_id, status, _S.PAUSED, "Paused at the user's request."):
            self._progress.phase(run_id, "paused", _S.PAUSED, "Paused")

    def _cancel(self, run_id: str, status: RunStatus) -> None:
        self._store.cancel_pending_steps(run_id)
        if self._transition(run_id, status, _S.CANCELLED, "Cancelled at the user's request."):
            self._progress.phase(run_id, "cancelled", _S.CANCELLED, "Cancelled")

    def _fail(
        self, run_id: str, status: RunStatus, reason: str, *, stop: str | None = None
    ) -> None:
        if self._transition(
            run_id, status, _S.FAILED, display_text(reason, 1000), stop_reason=stop
        ):
            self._progress.phase(run_id, "failed", _S.FAILED, reason)

    def _transition(
        self,
        run_id: str,
        expected: RunStatus,
        to: RunStatus,
        reason: str,
        *,
        stop_reason: str | None = None,
        stop_limit: str | None = None,
    ) -> bool:
        return self._store.transition(
            run_id,
            expected=expected,
            to=to,
            reason=reason,
            stop_reason=stop_reason or "",
            stop_limit=stop_limit or "",
        )
