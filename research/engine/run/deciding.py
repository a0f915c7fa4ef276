"""Deciding: the brief, the decision model's actions, their validation and follow-ups."""

import logging
import uuid
from collections.abc import Collection, Sequence
from typing import Any
from urllib.parse import urlsplit

from research.engine.contracts import (
    CandidateSummary,
    ContradictionCandidate,
    ContradictionPosition,
    EvidenceSummary,
    FailedSource,
    FinishAction,
    ReadAction,
    ResearchBrief,
    SearchAction,
    StepKind,
    Usage,
)
from research.engine.guards import (
    Action,
    ActionVerdict,
    BudgetRefused,
    StopReason,
    fingerprint_query,
    reciprocal_rank,
    validate_actions,
)
from research.engine.ledger import content_order
from research.engine.ports import ModelError
from research.engine.run.context import (
    Halt,
    Phase,
    RunContext,
    View,
    budget_halt,
)
from research.engine.run.follow_ups import follow_up_query, gap_search, program_search
from research.engine.run.metering import OUTPUT_TOKEN_CAPS
from research.engine.run.progress import display_text
from research.engine.states import RunStatus
from research.engine.steps import StepPayload, StepSpec
from research.engine.urls import evaluate_domain_policy

logger = logging.getLogger(__name__)

_S = RunStatus

RECENT_QUERIES_KEPT = 20
BRIEF_CANDIDATES = 30
BRIEF_EVIDENCE = 80
BRIEF_FAILED_SOURCES = 20


class Deciding(Phase):
    """Turns a decision into accepted, budgeted, durable steps."""

    def _decide_iteration(self, run: RunContext, number: int) -> "Halt | tuple[bool, list[str]]":
        """Ask for actions, validate and reserve them, persist them as pending steps.

        Returns whether research finishes after this iteration and the ids of the steps to
        run, or a halt (budget, a decision model that is down or keeps answering nonsense)."""
        view = self._view(run)
        brief = self._brief(run, view, number)
        self._progress.phase(
            run.id, "reviewing_sources", _S.RESEARCHING, "Choosing what to search and read next"
        )
        decision = self._decide(run, brief)
        if isinstance(decision, Halt):
            return decision
        verdicts = validate_actions(
            decision,
            run_id=run.id,
            iteration=number,
            plan=run.plan,
            policy=run.policy,
            sources=view.by_id,
            seen_fingerprints=run.state.query_fingerprints,
        )
        accepted: list[tuple[ActionVerdict, StepPayload]] = []
        refused: list[tuple[Action, str]] = []
        finish_requested = False
        gate_passed = False
        for verdict in verdicts:
            action = verdict.action
            if isinstance(action, FinishAction):
                finish_requested = True
                if view.gate.passed:
                    gate_passed = True
                else:
                    refused.append((action, "Not finished yet: " + " ".join(view.gate.unmet)))
                continue
            if not verdict.accepted:
                refused.append((action, verdict.reason))
                continue
            try:
                payload = self._reserve_action(run, verdict, view)
            except BudgetRefused as refusal:
                refused.append((action, refusal.reason))
                continue
            accepted.append((verdict, payload))
        if gate_passed:
            # Finishing wins: whatever else was proposed would only spend budget.
            for verdict, _ in accepted:
                run.ledger.release(verdict.dedupe_key)
                refused.append((verdict.action, "Research is finishing: the finish gate passed."))
            accepted = []
        else:
            accepted += self._program_follow_ups(run, view, accepted)
            if finish_requested and not accepted:
                accepted += self._gap_search(run, view)
        equivalent_only = not accepted and any(
            isinstance(action, SearchAction)
            and fingerprint_query(action.query).key in run.state.query_fingerprints
            for action, _ in refused
        )
        run.state = run.state.model_copy(
            update={
                "duplicate_proposal_streak": run.state.duplicate_proposal_streak + 1
                if equivalent_only
                else 0,
                "recent_refusals": [
                    display_text(f"{_describe(action)}: {reason}", 300)
                    for action, reason in refused
                ][-6:],
            }
        )
        specs = [self._accept(run, verdict, payload) for verdict, payload in accepted]
        summary = _decision_summary(accepted, refused, gate_passed, finish_requested)
        # The decision is stored with the steps it accepted, so that a run interrupted
        # before they were all written recreates them instead of deciding again.
        step = self._store.begin_step(
            run.id,
            kind="decide",
            dedupe_key=f"decide:{number}",
            payload=StepPayload(finish=gate_passed, steps=specs),
            iteration=number,
        )
        step = self._store.start_step(step.id)
        self._store.finish_step(step.id, status="succeeded", summary=summary)
        for index, (action, reason) in enumerate(refused):
            self._record_refusal(run, number, index, action, reason)
        new_steps = self._persist_steps(run, number, specs)
        self._checkpoint(run)
        return gate_passed, new_steps

    def _decide(self, run: RunContext, brief: ResearchBrief) -> "list[Action] | Halt":
        """Call the decision model, once more if it fails. A halt means the budget gave out,
        the endpoint is down (the run fails; a retry continues) or the model answered with
        unusable decisions twice (research stops). A decision that failed is recorded as a
        failed decide step with the reason, so the timeline shows it."""
        last_error: ModelError | None = None
        spent = Usage()
        for _ in range(2):
            key = f"decide:{brief.iteration}#{uuid.uuid4().hex[:12]}"
            allowance = self._meter.allowance(brief.model_dump_json(), "decide")
            try:
                result = self._meter.call(
                    run.ledger, key, allowance, lambda: self._model.decide(brief), kind="decide"
                )
            except BudgetRefused as refusal:
                return budget_halt(refusal)
            except ModelError as error:
                spent = spent + error.usage
                last_error = error
                continue
            return list(result.value.actions)
        assert last_error is not None
        if last_error.retryable:
            reason = f"The decision model failed: {last_error.reason}"
            self._record_failed_decision(run, brief.iteration, reason, spent)
            return Halt("fail", reason=reason, stop=StopReason.PROVIDER_FAILURES.value)
        reason = (
            "The decision model twice returned decisions that could not be used: "
            f"{last_error.reason}"
        )
        logger.info("Run %s: invalid decisions twice: %s", run.id, last_error.reason)
        self._record_failed_decision(run, brief.iteration, reason, spent)
        run.state = run.state.model_copy(
            update={"invalid_decisions": run.state.invalid_decisions + 1}
        )
        return Halt("stop", stop=StopReason.INVALID_DECISIONS.value)

    def _record_failed_decision(
        self, run: RunContext, number: int, reason: str, usage: Usage
    ) -> None:
        """A failed decide step for iteration ``number``. It has a key of its own, so the
        decision a retry makes for the same iteration is stored afresh."""
        failed = sum(
            1
            for step in self._store.list_steps(run.id)
            if step.dedupe_key.startswith(f"decide:{number}:failed:")
        )
        step = self._store.begin_step(
            run.id,
            kind="decide",
            dedupe_key=f"decide:{number}:failed:{failed + 1}",
            payload=StepPayload(failed=True),
            iteration=number,
        )
        step = self._store.start_step(step.id)
        self._progress.step_started(
            run.id, step.id, "decide", "Choosing what to search and read next"
        )
        self._store.finish_step(
            step.id,
            status="failed",
            summary="No usable decision",
            usage=usage,
            error=display_text(reason, 1000),
        )
        self._progress.step_finished(run.id, step.id, "decide", "failed", display_text(reason, 200))

    def _reserve_action(self, run: RunContext, verdict: ActionVerdict, view: View) -> StepPayload:
        """Reserve budget for an accepted action and return the payload its step keeps."""
        action = verdict.action
        if isinstance(action, SearchAction):
            self._meter.reserve_logical(run, verdict.dedupe_key, Usage(searches=1))
            return StepPayload(
                query=action.query,
                question_ids=list(action.question_ids),
                fingerprint=verdict.fingerprint.key if verdict.fingerprint else "",
                follow_up=self._follow_up_target(run, view, action),
            )
        assert isinstance(action, ReadAction)
        max_bytes = self._meter.reserve_read(run, verdict.dedupe_key)
        source = view.by_id[action.source_id]
        return StepPayload(
            source_id=action.source_id,
            question_ids=list(action.question_ids),
            url=source.url,
            max_bytes=max_bytes,
        )

    def _follow_up_target(self, run: RunContext, view: View, action: SearchAction) -> str | None:
        """The open central contradiction a decider's search follows up: one about a
        question the search targets."""
        for contradiction in view.central:
            if contradiction.key in run.state.followed_up_contradictions:
                continue
            if set(contradiction.question_ids) & set(action.question_ids):
                return contradiction.key
        return None

    def _program_follow_ups(
        self, run: RunContext, view: View, accepted: list[tuple[ActionVerdict, StepPayload]]
    ) -> list[tuple[ActionVerdict, StepPayload]]:
        """A targeted search for the first central contradiction nobody follows up yet
        (one per iteration, so follow-ups cannot crowd out the decider's plan)."""
        covered = {payload.follow_up for _, payload in accepted}
        pending = {
            StepPayload.of(step).follow_up
            for step in self._store.list_steps(run.id)
            if step.kind == "search" and step.status in ("pending", "running")
        }
        for contradiction in view.central:
            key = contradiction.key
            if key in run.state.followed_up_contradictions or key in covered or key in pending:
                continue
            verdict = self._follow_up_verdict(run, contradiction, accepted)
            if verdict is None:
                # Every targeted variant was searched already: that was the follow-up.
                self._mark_followed_up(run, key)
                continue
            try:
                self._meter.reserve_logical(run, verdict.dedupe_key, Usage(searches=1))
            except BudgetRefused:
                return []
            action = verdict.action
            assert isinstance(action, SearchAction)
            return [
                (
                    verdict,
                    StepPayload(
                        query=action.query,
                        question_ids=list(action.question_ids),
                        fingerprint=verdict.fingerprint.key if verdict.fingerprint else "",
                        follow_up=key,
                        program=True,
                    ),
                )
            ]
        return []

    def _gap_search(
        self, run: RunContext, view: View, skip: Collection[str] = ()
    ) -> list[tuple[ActionVerdict, StepPayload]]:
        """The program's gap search (:func:`research.engine.run.follow_ups.gap_search`),
        budgeted: nothing when no search is left."""
        done = {*run.state.followed_up_contradictions, *skip}
        found = gap_search(run, view, done, mark_done=lambda key: self._mark_followed_up(run, key))
        if found is None:
            return []
        try:
            self._meter.reserve_logical(run, found[0].dedupe_key, Usage(searches=1))
        except BudgetRefused:
            return []
        return [found]

    def _follow_up_verdict(
        self,
        run: RunContext,
        contradiction: ContradictionCandidate,
        accepted: list[tuple[ActionVerdict, StepPayload]],
    ) -> ActionVerdict | None:
        questions = [
            q for q in run.plan.questions if q.id in contradiction.question_ids
        ] or run.plan.questions[:1]
        seen = [*run.state.query_fingerprints]
        seen += [v.fingerprint.key for v, _ in accepted if v.fingerprint is not None]
        query = follow_up_query(questions[0].text, seen)
        if query is None:
            return None
        return program_search(
            run,
            SearchAction(
                query=query[:300],
                question_ids=[q.id for q in questions],
                rationale=f"Checking the conflicting evidence for {questions[0].id}.",
            ),
            "Follow-up of conflicting evidence.",
        )

    def _record_refusal(
        self, run: RunContext, number: int, index: int, action: Action, reason: str
    ) -> None:
        kind: StepKind = "decide" if isinstance(action, FinishAction) else action.type
        step = self._store.begin_step(
            run.id,
            kind=kind,
            dedupe_key=f"refused:{number}:{index}",
            rationale=display_text(action.rationale, 400),
            payload=StepPayload(action=action, refused=True),
            iteration=number,
        )
        if step.status == "pending":
            self._store.finish_step(
                step.id, status="skipped", summary=display_text(f"Refused: {reason}", 300)
            )
        self._progress.step_finished(
            run.id, step.id, kind, "rejected", f"Not done: {_describe(action)}"
        )

    def _accept(self, run: RunContext, verdict: ActionVerdict, payload: StepPayload) -> StepSpec:
        """Note an accepted action in the working state; returns the spec of its step."""
        action = verdict.action
        assert isinstance(action, SearchAction | ReadAction)
        if isinstance(action, SearchAction) and verdict.fingerprint is not None:
            queries = [*run.state.recent_queries, display_text(action.query, 300)]
            run.state = run.state.model_copy(
                update={
                    "query_fingerprints": [
                        *run.state.query_fingerprints,
                        verdict.fingerprint.key,
                    ],
                    "recent_queries": queries[-RECENT_QUERIES_KEPT:],
                }
            )
        return StepSpec(
            kind=action.type,
            dedupe_key=verdict.dedupe_key,
            rationale=display_text(action.rationale, 400),
            payload=payload,
        )

    def _persist_steps(self, run: RunContext, number: int, specs: Sequence[StepSpec]) -> list[str]:
        """Write accepted actions as pending steps (idempotent by dedupe key); returns the
        ids of those to run. One proposed again after a refinement cancelled it runs again;
        one already finished holds no budget."""
        runnable: list[str] = []
        for spec in specs:
            step = self._store.begin_step(
                run.id,
                kind=spec.kind,
                dedupe_key=spec.dedupe_key,
                rationale=spec.rationale,
                payload=spec.payload,
                iteration=number,
            )
            if step.status in ("succeeded", "failed", "skipped"):
                run.ledger.release(step.dedupe_key)
            else:
                runnable.append(step.id)
        return runnable

    # -- the brief ---------------------------------------------------------------------------

    def _brief(self, run: RunContext, view: View, number: int) -> ResearchBrief:
        """The compact state the decision model decides from.

        It carries structure (coverage, ids, stances, source classes, budget) and search
        results' titles and snippets, but no text taken from pages: excerpts, claim keys,
        values and scopes come from untrusted pages via the extractor, and leaving them out
        means no page can speak to the decision model."""
        fetched = [s for s in view.sources if s.status in ("fetched", "duplicate")]
        unread = []
        for source in view.sources:
            if source.status != "candidate":
                continue
            decision = evaluate_domain_policy(source.url, run.policy)
            if decision.allowed:
                unread.append((source, decision.preferred))
        # The brief shows the results the searches ranked best, fused across searches, so a
        # later search's top results are not cut off by an earlier search's tail (ties keep
        # discovery order; sorting is stable).
        unread.sort(key=lambda entry: -reciprocal_rank(entry[0].search_ranks))
        candidates = [
            # A read source's title is the page's own <title>: untrusted page text the
            # decider does not need, so only its id, status and domain are shown.
            CandidateSummary(source_id=s.id, status=s.status, domain=s.domain, preferred=False)
            for s in fetched
        ] + [
            CandidateSummary(
                source_id=s.id,
                status=s.status,
                title=display_text(s.title, 200),
                domain=s.domain,
                path=display_text(urlsplit(s.url).path, 200),
                snippet=display_text(s.snippet, 300),
                preferred=preferred,
                search_ranks=s.search_ranks,
            )
            for s, preferred in unread[:BRIEF_CANDIDATES]
        ]
        ranked = sorted(view.evidence, key=lambda e: (-e.relevance_bp, content_order(e)))
        ranked = ranked[:BRIEF_EVIDENCE]
        evidence = [
            EvidenceSummary(
                id=item.id,
                source_id=item.source_id,
                question_ids=list(item.question_ids),
                stance=item.stance,
            )
            for item in ranked
        ]
        mix: dict[str, int] = {}
        for source in view.sources:
            if source.status == "fetched":
                mix[source.quality.source_class] = mix.get(source.quality.source_class, 0) + 1
        failed = [
            FailedSource(source_id=s.id, status=s.status, reason=display_text(s.status_reason, 200))
            for s in view.sources
            if s.status in ("blocked", "failed", "unsupported")
        ][-BRIEF_FAILED_SOURCES:]
        open_conflicts = [
            _opaque_contradiction(number_, item)
            for number_, item in enumerate(view.contradictions, start=1)
            if item.key not in run.state.resolved_contradictions
        ]
        return ResearchBrief(
            plan=run.plan,
            iteration=number,
            coverage=[view.coverage[qid] for qid in run.plan.question_ids],
            evidence=evidence,
            source_class_mix=mix,
            candidates=candidates,
            open_contradictions=open_conflicts,
            failed_sources=failed,
            recent_queries=list(run.state.recent_queries[-12:]),
            remaining=run.ledger.remaining(phase="research"),
            unmet_finish_criteria=list(view.gate.unmet),
            recent_refusals=list(run.state.recent_refusals),
            max_output_tokens=OUTPUT_TOKEN_CAPS["decide"],
        )


def _describe(action: Action) -> str:
    if isinstance(action, SearchAction):
        return f"search “{display_text(action.query, 120)}”"
    if isinstance(action, ReadAction):
        return f"read source {action.source_id}"
    return "finish"


def _decision_summary(
    accepted: list[tuple[ActionVerdict, dict[str, Any]]],
    refused: list[tuple[Action, str]],
    gate_passed: bool,
    finish_requested: bool,
) -> str:
    if gate_passed:
        return "Finishing: every required question is covered"
    parts = []
    searches = sum(1 for v, _ in accepted if isinstance(v.action, SearchAction))
    reads = sum(1 for v, _ in accepted if isinstance(v.action, ReadAction))
    if searches:
        parts.append(f"{searches} search{'es' if searches > 1 else ''}")
    if reads:
        parts.append(f"{reads} source{'s' if reads > 1 else ''} to read")
    text = "Next: " + (", ".join(parts) if parts else "nothing new")
    if refused:
        text += f"; {len(refused)} proposal{'s' if len(refused) > 1 else ''} refused"
    if finish_requested:
        text += "; finishing was refused because the finish gate has not passed"
    return text


def _opaque_contradiction(number: int, item: ContradictionCandidate) -> ContradictionCandidate:
    """A contradiction with the page-derived text (claim key, values, scopes) replaced by a
    label: the decision model learns that evidence conflicts, and where, not what it says."""
    label = f"conflict-{number}"
    return ContradictionCandidate(
        key=label,
        claim_key=label,
        positions=[
            ContradictionPosition(
                value=None, stance=position.stance, evidence_ids=position.evidence_ids, scopes=[]
            )
            for position in item.positions
        ],
        evidence_ids=item.evidence_ids,
        question_ids=item.question_ids,
    )
