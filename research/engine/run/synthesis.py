"""Synthesis: writing the report, repairing citations, gaps and the evidence it is shown."""

import functools
import uuid
from collections.abc import Iterable, Sequence

from research.engine.citations import CitationProblem, problems_as_text
from research.engine.conflicts import find_value_conflicts
from research.engine.contracts import (
    ContradictionCandidate,
    Evidence,
    ProgressPhase,
    Report,
    ReportGap,
    ReportReady,
    ResearchPlan,
    RunSnapshot,
    SourceRecord,
    SourceSummary,
    SynthesisRequest,
    Usage,
    Verification,
    VerificationRequest,
)
from research.engine.guards import BudgetRefused, estimate_tokens, source_cluster
from research.engine.ledger import content_order
from research.engine.ports import ModelError, Verifier
from research.engine.quoted_report import write_extractive_report
from research.engine.review import ValidatedReport, finalize_report
from research.engine.run.context import Phase, RunContext, View, outage_stop, stop_message
from research.engine.run.metering import (
    MIN_SYNTHESIS_OUTPUT_TOKENS,
    MIN_VERIFY_OUTPUT_TOKENS,
    OUTPUT_TOKEN_CAPS,
    PROMPT_OVERHEAD_TOKENS,
)
from research.engine.run.progress import display_text
from research.engine.states import RunStatus

_S = RunStatus


# Why the engine's own report quotes the evidence (see _write_report).
BUDGET_NOTE = (
    "The model budget was used up, so this report quotes the verified evidence directly "
    "instead of summarising it."
)


class Synthesis(Phase):
    """Writes the report from stored evidence and finishes the run."""

    def _synthesis_phase(self, snapshot: RunSnapshot) -> None:
        run_id = snapshot.id
        ledger = self._meter.ledger(snapshot)
        if self._honour_controls(run_id, _S.SYNTHESIZING) is not None:
            return
        if snapshot.plan is None:
            self._fail(run_id, _S.SYNTHESIZING, "The run has no plan to write a report for.")
            return
        run = self._context(snapshot, ledger)
        view = self._view(run)
        partial = not view.gate.passed
        terminal = _S.BUDGET_EXHAUSTED if partial else _S.COMPLETED
        # One report per state of the evidence: a resumed synthesis finds its step, research
        # that added evidence (after a budget increase) gets a new one.
        key = f"synthesize:v{snapshot.plan_version}:i{run.state.iteration}:e{len(view.evidence)}"
        step = self._store.begin_step(
            run_id, kind="synthesize", dedupe_key=key, iteration=run.state.iteration
        )
        if step.status == "succeeded":
            # The report was saved before an interruption; only the transition is missing.
            self._finish_run(run_id, terminal, run.state.stop_reason, run.state.stop_limit)
            return
        step = self._store.start_step(step.id)
        self._meter.count_retry(run.ledger, step)
        self._progress.phase(run_id, "synthesizing", _S.SYNTHESIZING, "Writing the report")
        self._progress.step_started(run_id, step.id, "synthesize", "Writing the report")
        gaps = _gaps(run.plan, view)
        summaries = _source_summaries(view.sources)
        evidence_by_id = {item.id: item for item in view.evidence}
        usage_before = run.ledger.usage()
        try:
            report = self._write_report(run, view, gaps, summaries, partial, key)
        except ModelError as error:
            reason = f"The report could not be written: {error.reason}"
            self._store.finish_step(
                step.id,
                status="failed",
                error=reason,
                usage=_difference(run.ledger.usage(), usage_before),
            )
            self._progress.step_finished(
                run_id, step.id, "synthesize", "failed", "Writing the report failed"
            )
            self._checkpoint(run)
            self._fail(run_id, _S.SYNTHESIZING, reason, stop=outage_stop(error))
            return

        def repair(draft: Report, problems: Sequence[CitationProblem]) -> Report:
            return self._repair_report(run, view, gaps, summaries, partial, key, draft, problems)

        # Only a backend with a language model verifies; a report of quotations (extractive,
        # or the program's own when the budget ran out) is checked deterministically.
        verify = None
        if self._verifier is not None and report.mode == "model":
            verify = functools.partial(self._verify_findings, run, key, self._verifier)
        validated = finalize_report(
            report,
            run_id=run_id,
            evidence=evidence_by_id,
            repair=repair,
            verify=verify,
            known_text=_plan_text(run.plan),
            standing={s.id: (s.quality.source_class, source_cluster(s)) for s in view.sources},
        )
        final = _complete_report(
            validated.report,
            plan=run.plan,
            gaps=gaps,
            partial=partial,
            methodology=self._methodology(run, view) + _verifier_lines(validated),
        )
        self._store.save_report(run_id, report=final)
        summary = _synthesis_summary(final, validated)
        self._store.finish_step(
            step.id,
            status="succeeded",
            summary=summary,
            usage=_difference(run.ledger.usage(), usage_before),
        )
        self._progress.step_finished(run_id, step.id, "synthesize", "succeeded", summary)
        self._checkpoint(run)
        self._finish_run(run_id, terminal, run.state.stop_reason, run.state.stop_limit)

    def _write_report(
        self,
        run: RunContext,
        view: View,
        gaps: list[ReportGap],
        summaries: dict[str, SourceSummary],
        partial: bool,
        key: str,
    ) -> Report:
        """The synthesis call, or the program's own report when the budget cannot pay for
        one. Raises :class:`ModelError` when the synthesis call fails."""
        output_cap = self._synthesis_output_cap(run)
        request = self._synthesis_request(run, view, gaps, summaries, partial, output_cap)
        try:
            if view.evidence and not request.evidence:
                raise BudgetRefused("Not enough input tokens are left to show any evidence.")
            return self._synthesis_call(run, f"{key}#", request, output_cap, "write")
        except BudgetRefused:
            # The program's own report quotes every verified excerpt, not only those a
            # synthesis call would have had room for.
            everything = request.model_copy(
                update={
                    "evidence": list(view.evidence),
                    "sources": _summaries_of(view.evidence, summaries),
                }
            )
            return write_extractive_report(everything, note=BUDGET_NOTE)

    def _repair_report(
        self,
        run: RunContext,
        view: View,
        gaps: list[ReportGap],
        summaries: dict[str, SourceSummary],
        partial: bool,
        key: str,
        draft: Report,
        problems: Sequence[CitationProblem],
    ) -> Report:
        """The one citation-repair round; raises :class:`ModelError` when it cannot run."""
        output_cap = self._synthesis_output_cap(run)
        base = self._synthesis_request(run, view, gaps, summaries, partial, output_cap)
        request = base.model_copy(
            update={"problems": problems_as_text(problems), "previous_report": draft}
        )
        try:
            return self._synthesis_call(run, f"{key}#repair#", request, output_cap, "repair")
        except BudgetRefused as refusal:
            raise ModelError(f"No budget is left to repair citations: {refusal.reason}") from None

    def _synthesis_call(
        self,
        run: RunContext,
        key_prefix: str,
        request: SynthesisRequest,
        output_cap: int,
        purpose: str,
    ) -> Report:
        """One metered synthesis call (writing or repairing the report, as ``purpose`` says);
        raises :class:`BudgetRefused` when too few output tokens are left for it."""
        if output_cap < MIN_SYNTHESIS_OUTPUT_TOKENS:
            raise BudgetRefused(f"Not enough output tokens are left to {purpose} the report.")
        result = self._meter.call(
            run.ledger,
            f"{key_prefix}{uuid.uuid4().hex[:12]}",
            self._meter.allowance(request.model_dump_json(), "synthesize", output_cap),
            lambda: self._model.synthesize(request),
            kind="synthesize",
            phase="synthesis",
        )
        return result.value

    def _verify_findings(
        self, run: RunContext, key: str, verifier: Verifier, request: VerificationRequest
    ) -> Verification:
        """One verifier call, paid from the synthesis budget; raises :class:`ModelError`
        when it cannot run (no budget left, or a failed call)."""
        remaining = run.ledger.remaining(phase="synthesis").output_tokens
        output_cap = min(OUTPUT_TOKEN_CAPS["verify"], remaining // self._calls)
        if output_cap < MIN_VERIFY_OUTPUT_TOKENS:
            raise ModelError("No output tokens are left in the budget for the verifier.")
        request = request.model_copy(update={"max_output_tokens": output_cap})
        try:
            result = self._meter.call(
                run.ledger,
                f"{key}#verify#{uuid.uuid4().hex[:12]}",
                self._meter.allowance(request.model_dump_json(), "verify", output_cap),
                lambda: verifier.verify(request),
                kind="verify",
                phase="synthesis",
            )
        except BudgetRefused as refusal:
            raise ModelError(f"No budget is left for the verifier: {refusal.reason}") from None
        return result.value

    def _synthesis_output_cap(self, run: RunContext) -> int:
        remaining = run.ledger.remaining(phase="synthesis").output_tokens
        return min(OUTPUT_TOKEN_CAPS["synthesize"], remaining // self._calls)

    def _synthesis_request(
        self,
        run: RunContext,
        view: View,
        gaps: list[ReportGap],
        summaries: dict[str, SourceSummary],
        partial: bool,
        output_cap: int,
    ) -> SynthesisRequest:
        """Evidence cards that fit the synthesis token allowance: every contradiction's
        evidence, then each question's best items in turn, then the rest by relevance."""
        contradictions = _with_value_conflicts(view)
        base = SynthesisRequest(
            plan=run.plan,
            evidence=[],
            sources=[],
            contradictions=contradictions,
            gaps=gaps,
            partial=partial,
            max_output_tokens=max(1, output_cap),
        )
        remaining = run.ledger.remaining(phase="synthesis").input_tokens
        per_call = (remaining - (self._calls - 1) * output_cap) // self._calls
        # Half of the room goes to the first call; the repair round resends the report too.
        room = per_call // 2 - PROMPT_OVERHEAD_TOKENS - estimate_tokens(base.model_dump_json())
        chosen = _select_evidence(run.plan, view.evidence, contradictions, room)
        return base.model_copy(
            update={"evidence": chosen, "sources": _summaries_of(chosen, summaries)}
        )

    def _methodology(self, run: RunContext, view: View) -> list[str]:
        usage = run.ledger.usage()
        lines = [
            f"The research ran {run.state.iteration} rounds: {usage.searches} searches, "
            f"{usage.fetched_sources} sources read, {len(view.evidence)} verified excerpts. "
            f"{run.state.rejected_excerpts} proposed excerpts were rejected because they do not "
            "occur in the stored source.",
        ]
        if run.state.stop_reason:
            lines.append(f"Research stopped because: {stop_message(run.state.stop_reason)}")
        return lines

    def _finish_run(
        self, run_id: str, terminal: RunStatus, stop_reason: str | None, stop_limit: str | None
    ) -> None:
        if terminal == _S.COMPLETED:
            reason = "The report is ready."
        elif stop_reason:
            reason = "A partial report was written: " + stop_message(stop_reason)
        else:
            reason = (
                "A partial report was written: research stopped before every planned "
                "question was covered."
            )
        if not self._transition(
            run_id,
            _S.SYNTHESIZING,
            terminal,
            reason,
            stop_reason=stop_reason,
            stop_limit=stop_limit,
        ):
            return
        self._progress.emit(
            ReportReady(
                run_id=run_id,
                terminal_status=terminal.value,  # type: ignore[arg-type]
                message="The report is ready"
                if terminal == _S.COMPLETED
                else "A partial report is ready",
            )
        )
        phase: ProgressPhase = "completed" if terminal == _S.COMPLETED else "budget_exhausted"
        self._progress.phase(run_id, phase, terminal, reason)


def _synthesis_summary(final: Report, validated: ValidatedReport) -> str:
    """The synthesis step's summary: findings, and what was not published as one."""
    summary = f"Report with {sum(1 for s in final.statements() if s.kind == 'finding')} findings"
    if validated.demoted_claim_ids:
        summary += f"; {len(validated.demoted_claim_ids)} unsupported statements kept as caveats"
    if validated.mismatched_claim_ids:
        summary += f" ({len(validated.mismatched_claim_ids)} not borne out by their excerpts)"
    if validated.unconfirmed_claim_ids:
        summary += f" ({len(validated.unconfirmed_claim_ids)} not confirmed by the verifier)"
    if validated.removed_from_text:
        summary += (
            f"; {validated.removed_from_text} addresses, markers or markup removed from "
            "statement text"
        )
    if validated.verifier_notes:
        summary += "; verifier: " + " ".join(validated.verifier_notes)
    return display_text(summary, 2000)


def _verifier_lines(validated: ValidatedReport) -> list[str]:
    """Methodology lines on the verifier: what it judged, and what went wrong with it."""
    if not validated.verifier_calls:
        return []
    judged = [s.verdict.verdict for s in validated.report.statements() if s.verdict is not None]
    counts = ", ".join(
        f"{judged.count(name)} {name.replace('_', ' ')}"
        for name in ("supported", "partially_supported", "unsupported")
        if judged.count(name)
    )
    line = (
        f"A verifier model judged {len(judged)} findings against their cited excerpts"
        f"{f' ({counts})' if counts else ''}; findings it did not find fully supported were "
        "sent back once for repair, then kept only as labelled caveats."
    )
    return [display_text(text, 2000) for text in (line, *validated.verifier_notes)]


def _with_value_conflicts(view: View) -> list[ContradictionCandidate]:
    """The run's contradictions and the value conflicts its excerpts show
    (:mod:`research.engine.conflicts`) that no claim key already names."""
    clusters = {source.id: source_cluster(source) for source in view.sources}
    named = [set(item.evidence_ids) for item in view.contradictions]
    conflicts = [
        item
        for item in find_value_conflicts(view.evidence, clusters)
        if not any(set(item.evidence_ids) <= ids for ids in named)
    ]
    return [*view.contradictions, *conflicts]


def _gaps(plan: ResearchPlan, view: View) -> list[ReportGap]:
    gaps = [
        ReportGap(
            question_id=question.id,
            description=display_text(f"No verified evidence was found for: {question.text}", 2000),
        )
        for question in plan.questions
        if not view.coverage[question.id].covered
    ]
    gaps += [
        ReportGap(description=display_text(reason, 2000))
        for reason in view.gate.unmet
        if "has no verified evidence" not in reason
    ]
    return gaps


def _source_summaries(sources: Iterable[SourceRecord]) -> dict[str, SourceSummary]:
    return {
        source.id: SourceSummary(
            id=source.id,
            title=display_text(source.title or source.domain or source.url, 300),
            url=source.url,
            publisher=source.publisher,
            published_at=source.published_at,
            source_class=source.quality.source_class,
        )
        for source in sources
        if source.status in ("fetched", "duplicate")
    }


def _summaries_of(
    evidence: Sequence[Evidence], summaries: dict[str, SourceSummary]
) -> list[SourceSummary]:
    """The summaries of the sources ``evidence`` quotes, by address and only then by id:
    source ids are random per run, and the same question on the same web must give the same
    request."""
    cited = {item.source_id for item in evidence}
    return sorted(
        (summaries[sid] for sid in cited if sid in summaries),
        key=lambda summary: (summary.url, summary.id),
    )


def _select_evidence(
    plan: ResearchPlan,
    evidence: Sequence[Evidence],
    contradictions: Sequence[ContradictionCandidate],
    room_tokens: int,
) -> list[Evidence]:
    ranked = sorted(evidence, key=lambda e: (-e.relevance_bp, -e.confidence_bp, content_order(e)))
    order: list[Evidence] = []
    seen: set[str] = set()

    def take(item: Evidence) -> None:
        if item.id not in seen:
            seen.add(item.id)
            order.append(item)

    by_id = {item.id: item for item in evidence}
    for contradiction in contradictions:
        for evidence_id in contradiction.evidence_ids:
            if evidence_id in by_id:
                take(by_id[evidence_id])
    queues = {qid: [e for e in ranked if qid in e.question_ids] for qid in plan.question_ids}
    while any(queues.values()):
        for qid in plan.question_ids:
            if queues[qid]:
                take(queues[qid].pop(0))
    for item in ranked:
        take(item)
    chosen: list[Evidence] = []
    used = 0
    for item in order:
        cost = estimate_tokens(item.model_dump_json())
        if used + cost > room_tokens:
            continue
        chosen.append(item)
        used += cost
    return chosen


def _complete_report(
    report: Report,
    *,
    plan: ResearchPlan,
    gaps: Sequence[ReportGap],
    partial: bool,
    methodology: list[str],
) -> Report:
    """The facts the program knows go into the report whatever the model wrote: the partial
    label, every known gap, and how the research was done."""
    known_questions = {gap.question_id for gap in report.gaps if gap.question_id}
    known_text = {gap.description for gap in report.gaps}
    extra_gaps = [
        gap
        for gap in gaps
        if (gap.question_id and gap.question_id not in known_questions)
        or (not gap.question_id and gap.description not in known_text)
    ]
    completed = report.model_copy(
        update={
            "partial": partial,
            "gaps": [*report.gaps, *extra_gaps],
            "methodology": [*report.methodology, *methodology],
        }
    )
    return Report.model_validate(completed.model_dump())


def _difference(after: Usage, before: Usage) -> Usage:
    values = {
        name: max(getattr(after, name) - getattr(before, name), 0)
        for name in Usage.model_fields
        if name not in ("schema_version", "elapsed_seconds")
    }
    return Usage(**values)


def _plan_text(plan: ResearchPlan) -> list[str]:
    """The plan's own words: names they use need no excerpt in a finding."""
    return [
        plan.objective,
        *(question.text for question in plan.questions),
        *plan.scope.included_topics,
        *plan.scope.geographies,
    ]
