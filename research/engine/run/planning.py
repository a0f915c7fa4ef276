"""Planning: drafting and revising the plan, and the run's move to awaiting approval."""

import uuid
from collections.abc import Sequence

from research.engine.contracts import PlanReady, PlanRequest, ResearchPlan, RunSnapshot, Usage
from research.engine.contracts.plans import PLAN_ITEM_MAX_CHARS, PLAN_LIST_MAX_ITEMS
from research.engine.guards import BudgetRefused
from research.engine.ports import ModelError
from research.engine.run.context import Phase, outage_stop
from research.engine.run.metering import OUTPUT_TOKEN_CAPS
from research.engine.run.progress import display_text
from research.engine.states import RunStatus
from research.engine.steps import StepPayload

_S = RunStatus


class PlanningFailed(Exception):
    """Drafting or revising the plan failed; the run is ``failed`` with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


class Planning(Phase):
    """Drafts the plan (a first version, or a revision) and waits for its approval."""

    def _plan_phase(self, run: RunSnapshot) -> None:
        if run.status == _S.CREATED and not self._transition(
            run.id, _S.CREATED, _S.PLANNING, "Planning started."
        ):
            return
        if self._honour_controls(run.id, _S.PLANNING) is not None:
            return
        steps = {step.dedupe_key: step for step in self._store.list_steps(run.id)}
        drafted = steps.get(f"plan:v{run.plan_version}")
        if (
            run.plan is not None
            and f"plan:v{run.plan_version + 1}" not in steps
            and drafted is not None
            and drafted.status == "succeeded"
        ):
            # The plan was saved just before an interruption; only the transition is missing.
            # (A failed revision has a step for the next version and is drafted again.)
            self._plan_ready(run.id, run.plan_version)
            return
        try:
            self._draft_plan(run, refinement=None)
        except PlanningFailed:
            return  # recorded: the run is failed with the reason

    def _draft_plan(self, run: RunSnapshot, *, refinement: str | None) -> ResearchPlan:
        """Ask the planner, store the plan as the next version and await approval. Raises
        :class:`PlanningFailed` after recording the failure (the run is then failed)."""
        # Elapsed time is measured from here, so the whole phase counts against the budget.
        ledger = self._meter.ledger(run)
        version = run.plan_version + 1
        revising = run.plan is not None
        message = "Revising the research plan" if revising else "Drafting the research plan"
        self._progress.phase(run.id, "planning", _S.PLANNING, message)
        step = self._store.begin_step(
            run.id,
            kind="plan",
            dedupe_key=f"plan:v{version}",
            rationale=display_text(refinement or "", 400),
            payload=StepPayload(refinement=refinement),
            iteration=run.state.iteration,
        )
        # A retried revision keeps the instruction it was given the first time.
        refinement = refinement or StepPayload.of(step).refinement or None
        step = self._store.start_step(step.id)
        self._progress.step_started(run.id, step.id, "plan", message)
        self._meter.count_retry(ledger, step)

        def fail(reason: str, usage: Usage, stop: str | None = None) -> PlanningFailed:
            self._store.finish_step(step.id, status="failed", usage=usage, error=reason)
            self._progress.step_finished(run.id, step.id, "plan", "failed", "Planning failed")
            self._store.save_checkpoint(run.id, state=run.state, usage=ledger.usage())
            self._fail(run.id, _S.PLANNING, reason, stop=stop)
            return PlanningFailed(reason)

        if not run.objective.strip():
            raise fail("The run has no question to plan research for.", Usage())
        request = PlanRequest(
            objective=run.objective[:4000],
            policy=run.policy,
            depth=run.depth,
            budget=run.budget,
            previous_plan=run.plan,
            refinement=refinement,
            requested_sections=run.requested_sections,
            max_output_tokens=OUTPUT_TOKEN_CAPS["plan"],
        )
        key = f"plan:v{version}#{uuid.uuid4().hex[:12]}"
        allowance = self._meter.allowance(request.model_dump_json(), "plan")
        try:
            result = self._meter.call(
                ledger, key, allowance, lambda: self._model.plan(request), kind="plan"
            )
        except BudgetRefused as refusal:
            raise fail(
                f"The research plan could not be drafted: {refusal.reason}", Usage()
            ) from None
        except ModelError as error:
            raise fail(
                f"The research plan could not be drafted: {error.reason}",
                error.usage,
                outage_stop(error),
            ) from None
        plan = _with_requested_sections(
            _with_required_question(result.value), run.requested_sections
        )
        if not self._store.save_plan(run.id, plan=plan, expected_version=run.plan_version):
            raise fail("The plan was changed by someone else while it was drafted.", result.usage)
        if revising:
            self._store.mark_out_of_scope(run.id, question_ids_kept=plan.question_ids)
        self._store.finish_step(
            step.id,
            status="succeeded",
            usage=result.usage,
            summary=f"Plan version {version} with {len(plan.questions)} questions",
        )
        self._progress.step_finished(
            run.id,
            step.id,
            "plan",
            "succeeded",
            f"Plan with {len(plan.questions)} questions drafted",
        )
        self._store.save_checkpoint(run.id, state=run.state, usage=ledger.usage())
        self._plan_ready(run.id, version)
        return plan

    def _plan_ready(self, run_id: str, version: int) -> None:
        if self._transition(run_id, _S.PLANNING, _S.AWAITING_APPROVAL, "The plan is ready."):
            self._progress.emit(
                PlanReady(
                    run_id=run_id, plan_version=version, message="The plan is ready for review"
                )
            )
            self._progress.phase(
                run_id, "plan_ready", _S.AWAITING_APPROVAL, "The plan is ready for review"
            )


def _with_required_question(plan: ResearchPlan) -> ResearchPlan:
    """A plan with no required question would pass the finish gate with no evidence; the
    first question becomes required (the person approving the plan sees it)."""
    if plan.required_question_ids:
        return plan
    first = plan.questions[0].model_copy(update={"priority": "required"})
    return plan.model_copy(update={"questions": [first, *plan.questions[1:]]})


def _with_requested_sections(plan: ResearchPlan, sections: Sequence[str]) -> ResearchPlan:
    """The report template's sections belong in the plan whatever the planner wrote: the
    synthesizer writes what the plan's deliverable lists."""
    listed = list(plan.deliverable.requested_sections)
    present = {section.casefold() for section in listed}
    missing = [section for section in sections if section.casefold() not in present]
    if not missing:
        return plan
    deliverable = plan.deliverable.model_copy(update={"requested_sections": listed + missing})
    return plan.model_copy(update={"deliverable": deliverable})


def clarification_line(question: str, answer: str) -> str:
    """One clarifying question and the person's answer, as planning input and assumption."""
    line = f"Asked before planning: “{question.strip()}” Answer: “{answer.strip()}”"
    return line[:PLAN_ITEM_MAX_CHARS]


def with_clarifications(plan: ResearchPlan, clarifications: Sequence[str]) -> ResearchPlan:
    """The answers given before planning belong in the plan's assumptions whatever the
    planner wrote, so the person approving the plan sees what it rests on."""
    listed = list(plan.assumptions)
    missing = [line for line in clarifications if not any(line in item for item in listed)]
    if not missing:
        return plan
    # The plan holds a bounded number of assumptions; the person's answers go first.
    room = max(0, PLAN_LIST_MAX_ITEMS - len(missing))
    return plan.model_copy(update={"assumptions": (missing + listed[:room])[:PLAN_LIST_MAX_ITEMS]})
