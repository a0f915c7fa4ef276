"""The research phase: the loop of iterations, why it stops, closing an iteration."""

from collections.abc import Mapping

from research.engine.contracts import (
    ContradictionCandidate,
    Evidence,
    RunSnapshot,
    SourceRecord,
    Usage,
)
from research.engine.guards import (
    PRIMARY_CLASSES,
    STOP_MESSAGES,
    SYSTEMIC_FAILURE_LIMIT,
    ActionVerdict,
    BudgetRefused,
    StopReason,
    advance_iteration,
    research_stop_reason,
    unmet_questions,
)
from research.engine.outcomes import BUDGET_STOPS, NOTHING_NEW_STOPS
from research.engine.run.context import (
    Batch,
    Halt,
    Phase,
    RunContext,
    as_stop,
    budget_halt,
    stop_message,
)
from research.engine.states import RunStatus
from research.engine.steps import StepPayload

_S = RunStatus


def contradiction_resolved(
    contradiction: ContradictionCandidate,
    evidence: Mapping[str, Evidence],
    sources: Mapping[str, SourceRecord],
) -> bool:
    """Whether a followed-up contradiction counts as resolved: its values differ in scope
    (date, place, definition, method — not a genuine conflict), or exactly one position is
    backed by a primary or official source."""
    if contradiction.scope_differences:
        return True
    backed = 0
    for position in contradiction.positions:
        classes = set()
        for evidence_id in position.evidence_ids:
            item = evidence.get(evidence_id)
            source = sources.get(item.source_id) if item else None
            if source is not None:
                classes.add(source.quality.source_class)
        if classes & PRIMARY_CLASSES:
            backed += 1
    return backed == 1


class Iterations(Phase):
    """Runs research iteration by iteration until a stop, a control or a failure."""

    def _research_phase(self, snapshot: RunSnapshot) -> None:
        run_id = snapshot.id
        ledger = self._meter.ledger(snapshot)
        if snapshot.status == _S.QUEUED:
            if self._honour_controls(run_id, _S.QUEUED) is not None:
                return
            if not self._transition(run_id, _S.QUEUED, _S.RESEARCHING, "Research started."):
                return
            self._progress.phase(run_id, "searching", _S.RESEARCHING, "Research started")
            snapshot = self._store.load_run(run_id)
        if snapshot.plan is None:
            self._fail(run_id, _S.RESEARCHING, "The run has no approved plan to research.")
            return
        run = self._context(snapshot, ledger)
        if run.state.stop_reason:
            # Researching again after research had stopped (a retry, or more budget): the
            # person asked for more, so earlier streaks do not stop it at once.
            run.state = run.state.model_copy(
                update={
                    "stop_reason": None,
                    "stop_limit": None,
                    "zero_gain_streak": 0,
                    "duplicate_proposal_streak": 0,
                    "systemic_failure_streak": 0,
                }
            )
        self._settle_finished_steps(run)
        halt = self._research_loop(run)
        if halt.kind == "stop":
            nothing_new = as_stop(halt.stop) in NOTHING_NEW_STOPS
            halt = self._follow_up_before_synthesis(run, gaps=nothing_new) or halt
        if halt.kind == "pause":
            self._checkpoint(run)
            self._pause(run_id, _S.RESEARCHING)
        elif halt.kind == "cancel":
            self._checkpoint(run)
            self._cancel(run_id, _S.RESEARCHING)
        elif halt.kind == "fail":
            run.state = run.state.model_copy(update={"stop_reason": halt.stop, "stop_limit": None})
            self._checkpoint(run)
            self._fail(run_id, _S.RESEARCHING, halt.reason, stop=halt.stop)
        else:
            stop = self._explained_stop(run, halt.stop)
            message = stop_message(stop)
            for step in self._store.list_steps(run_id):
                if step.kind in ("search", "read") and step.status in ("pending", "running"):
                    self._skip(run, step, f"Research stopped first. {message}")
            run.state = run.state.model_copy(update={"stop_reason": stop, "stop_limit": halt.limit})
            self._checkpoint(run)
            if self._transition(run_id, _S.RESEARCHING, _S.SYNTHESIZING, message):
                self._progress.phase(
                    run_id, "synthesizing", _S.SYNTHESIZING, f"{message} Writing the report."
                )

    def _explained_stop(self, run: RunContext, stop: str | None) -> str | None:
        """The stop reason a person can act on. Research that ran dry without a single
        readable source did not run out of things to learn: nothing could be read at all."""
        if stop is None or as_stop(stop) not in NOTHING_NEW_STOPS:
            return stop
        readable = any(
            s.status in ("fetched", "duplicate") for s in self._store.list_sources(run.id)
        )
        return stop if readable else StopReason.NO_READABLE_SOURCES.value

    def _research_loop(self, run: RunContext) -> Halt:
        while True:
            self._store.heartbeat(run.id)
            control = self._pending_control(run.id)
            if control is not None:
                return control
            halt = self._iteration(run)
            if halt is not None:
                return halt

    def _iteration(self, run: RunContext) -> Halt | None:
        """One iteration: decide (or pick up a decision made before an interruption), run
        the accepted steps, measure what they added. Returns why to leave the loop, if so."""
        number = run.state.iteration
        decided = next(
            (
                step
                for step in self._store.list_steps(run.id)
                if step.dedupe_key == f"decide:{number}" and step.status == "succeeded"
            ),
            None,
        )
        iteration_key = f"iteration:{number}"
        finishing = False
        new_steps: list[str] = []
        if decided is not None:
            # Decided before an interruption: make sure every step it accepted exists.
            decision = StepPayload.of(decided)
            finishing = decision.finish
            self._meter.reserve_logical(run, iteration_key, Usage(iterations=1), strict=False)
            new_steps = self._persist_steps(run, number, decision.steps)
        else:
            stop = _stop_reason(run)
            if stop is not None:
                return self._stop_halt(run, stop)
            try:
                self._meter.reserve_logical(run, iteration_key, Usage(iterations=1))
            except BudgetRefused as refusal:
                return budget_halt(refusal)
            outcome = self._decide_iteration(run, number)
            if isinstance(outcome, Halt):
                run.ledger.release(iteration_key)
                return outcome
            finishing, new_steps = outcome
        batch = self._unfinished_batch(run, also=new_steps)
        control = self._run_batch(run, batch)
        if control is not None:
            return control
        self._close_iteration(run, batch, iteration_key)
        if finishing:
            return Halt("stop", stop=StopReason.FINISH_GATE_PASSED.value)
        return None

    def _stop_halt(self, run: RunContext, stop: StopReason) -> Halt:
        """Leave the loop for ``stop``: a budget stop names the limit that ran out, and
        failing providers fail the run (a retry continues once they answer again) instead
        of writing a partial report that more budget could not improve."""
        if stop is StopReason.PROVIDER_FAILURES:
            return Halt("fail", reason=self._provider_failure_reason(run), stop=stop.value)
        limit = run.ledger.research_blocked() if stop in BUDGET_STOPS else None
        return Halt("stop", stop=stop.value, limit=limit)

    def _provider_failure_reason(self, run: RunContext) -> str:
        """The outage sentence, with what the last failed search or read said."""
        last = next(
            (
                step.error
                for step in reversed(self._store.list_steps(run.id))
                if step.kind in ("search", "read") and step.status == "failed" and step.error
            ),
            "",
        )
        reason = STOP_MESSAGES[StopReason.PROVIDER_FAILURES]
        return f"{reason} The last failure: {last}" if last else reason

    def _close_iteration(self, run: RunContext, batch: Batch, iteration_key: str) -> None:
        view = self._view(run)
        counted = set(run.state.counted_evidence_ids)
        new = [item for item in view.evidence if item.id not in counted]
        classes = [s.quality.source_class for s in view.sources if s.status == "fetched"]
        evidence_by_id = {item.id: item for item in view.evidence}
        resolved = [
            item.key
            for item in view.contradictions
            if item.key in run.state.followed_up_contradictions
            and contradiction_resolved(item, evidence_by_id, view.by_id)
        ]
        state, gain = advance_iteration(
            run.state,
            coverage=view.coverage,
            new_evidence=new,
            source_classes=classes,
            resolved_contradictions=resolved,
        )
        if batch.successes:
            failures = 0
        elif batch.systemic_failures:
            failures = state.systemic_failure_streak + 1
        else:
            failures = state.systemic_failure_streak
        run.state = state.model_copy(
            update={
                "counted_evidence_ids": [*state.counted_evidence_ids, *(item.id for item in new)],
                "information_gain": state.information_gain
                + gain.new_relevant_evidence
                + gain.new_source_classes
                + gain.coverage_gain
                + gain.contradictions_resolved,
                "systemic_failure_streak": failures,
            }
        )
        run.ledger.settle(iteration_key, Usage(iterations=1))
        self._checkpoint(run)
        self._emit_counts(run, view)
        unsettled = [c for c in view.central if c.key not in run.state.resolved_contradictions]
        if unsettled:
            questions = sorted({qid for c in unsettled for qid in c.question_ids})
            self._progress.phase(
                run.id,
                "comparing_evidence",
                _S.RESEARCHING,
                "Comparing conflicting evidence for "
                + (", ".join(questions) or "the research question"),
            )

    def _follow_up_before_synthesis(self, run: RunContext, *, gaps: bool) -> Halt | None:
        """Research is stopping: give every central contradiction nobody followed up one
        targeted search (and a read of its best result) if the budget still allows. With
        ``gaps`` (research ran out of anything new) so does every required question the
        finish gate does not accept that has not had its gap search: the zero-gain streak
        can end research before the decider asks to finish, with searches still unspent."""
        view = self._view(run)
        open_conflicts = [
            c for c in view.central if c.key not in run.state.followed_up_contradictions
        ]
        pending_follow_ups = any(
            StepPayload.of(step).follow_up and step.status in ("pending", "running")
            for step in self._store.list_steps(run.id)
        )
        open_gaps = gaps and bool(unmet_questions(run.plan, view.coverage))
        if not open_conflicts and not pending_follow_ups and not open_gaps:
            return None
        accepted: list[tuple[ActionVerdict, StepPayload]] = []
        while True:
            extra = self._program_follow_ups(run, view, accepted)
            if not extra and gaps:
                extra = self._gap_search(run, view, {p.follow_up or "" for _, p in accepted})
            if not extra:
                break
            accepted += extra
        specs = [self._accept(run, verdict, payload) for verdict, payload in accepted]
        new_steps = self._persist_steps(run, run.state.iteration, specs)
        batch = self._unfinished_batch(run, also=new_steps)
        if not batch.searches and not batch.reads:
            return None
        control = self._run_batch(run, batch)
        if control is not None:
            return control
        view = self._view(run)
        counted = set(run.state.counted_evidence_ids)
        run.state = run.state.model_copy(
            update={
                "coverage": view.coverage,
                "counted_evidence_ids": [
                    *run.state.counted_evidence_ids,
                    *(item.id for item in view.evidence if item.id not in counted),
                ],
            }
        )
        self._checkpoint(run)
        return None

    def _settle_finished_steps(self, run: RunContext) -> None:
        """Count steps that finished just before an interruption but whose usage never
        reached a checkpoint (their logical key is not settled yet)."""
        changed = False
        for step in self._store.list_steps(run.id):
            if step.kind not in ("search", "read") or step.status not in ("succeeded", "failed"):
                continue
            if step.dedupe_key in run.ledger.settled_keys:
                continue
            run.ledger.settle(step.dedupe_key, step.usage)
            if step.kind == "search":
                payload = StepPayload.of(step)
                fingerprint = payload.fingerprint
                if fingerprint and fingerprint not in run.state.query_fingerprints:
                    run.state = run.state.model_copy(
                        update={"query_fingerprints": [*run.state.query_fingerprints, fingerprint]}
                    )
                self._mark_followed_up(run, payload.follow_up)
            changed = True
        if changed:
            self._checkpoint(run)


def _stop_reason(run: RunContext) -> StopReason | None:
    # Failing providers also add nothing, so both streaks can end together; the failure is
    # the more useful explanation.
    if run.state.systemic_failure_streak >= SYSTEMIC_FAILURE_LIMIT:
        return StopReason.PROVIDER_FAILURES
    stop = research_stop_reason(run.ledger, run.state)
    if (
        stop in (StopReason.DIMINISHING_RETURNS, StopReason.ONLY_EQUIVALENT_SEARCHES)
        and run.state.systemic_failure_streak > 0
    ):
        # The last actions that ran all failed at the provider and nothing has worked since:
        # "nothing new" is true, but the outage is the explanation a person can act on.
        return StopReason.PROVIDER_FAILURES
    return stop
