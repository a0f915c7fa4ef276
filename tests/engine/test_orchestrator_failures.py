"""The research loop over in-memory ports when things go wrong or run out: failing providers and
models, invalid decisions, budgets and time, and synthesis from what was stored."""

from research.engine.citations import render_markdown
from research.engine.contracts import (
    EvidenceScope,
    ReadAction,
    Report,
    ResearchBrief,
    ResearchDecision,
    SearchAction,
    SynthesisRequest,
)
from research.engine.guards import StopReason, budget_for
from research.engine.ports import AcquisitionError, ModelError
from research.engine.states import RunStatus
from tests.engine.fakes import (
    TableExtractor,
)
from tests.engine.test_orchestrator import (
    EXTRACTIONS,
    GDP_QUERY,
    RESULTS,
    RUN,
    _synthesis_with_one_bad_citation,
    build,
)


def test_a_failing_search_provider_fails_the_run_after_three_rounds() -> None:
    down = AcquisitionError("failed", "No search provider answered.", retryable=True)

    def always_search(brief: ResearchBrief) -> ResearchDecision:
        query = f"france economy round {brief.iteration}"
        return ResearchDecision(
            actions=[SearchAction(query=query, question_ids=["q1"], rationale="Search.")]
        )

    world = build(decide=always_search, results={})
    world.web.search_errors = _AlwaysFailing(down)
    # An outage is a failure to retry, not a partial report that more budget could improve.
    assert world.advance() == RunStatus.FAILED
    assert world.store.run.state.stop_reason == "provider_failures"
    assert world.store.stop == ("provider_failures", "")
    assert world.store.run.resume_phase == RunStatus.RESEARCHING
    assert world.store.transitions[-1] == (
        "researching",
        "failed",
        "Search or fetch providers kept failing. The last failure: No search provider answered.",
    )
    assert len(world.step_log("search")) == 3
    assert all(step.status == "failed" for step in world.step_log("search"))
    assert world.store.report is None

    # The retry researches again with fresh streaks once the provider answers.
    world.web.search_errors = {}
    world.web.results = dict(RESULTS)
    assert world.store.transition(RUN, expected=RunStatus.FAILED, to=RunStatus.QUEUED)
    assert world.advance() in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED)
    assert world.store.stop[0] != "provider_failures"


def test_an_outage_is_the_stop_reason_even_when_the_decider_stops_proposing() -> None:
    down = AcquisitionError("failed", "No search provider answered.", retryable=True)

    def search_then_nonsense(brief: ResearchBrief) -> ResearchDecision:
        # After one failed search only refused proposals follow: nothing runs, nothing new.
        if brief.iteration == 1:
            action = SearchAction(query="france economy", question_ids=["q1"], rationale="Search.")
        else:
            action = ReadAction(source_id="no-such-source", question_ids=["q1"], rationale="Read.")
        return ResearchDecision(actions=[action])

    world = build(decide=search_then_nonsense, results={})
    world.web.search_errors = _AlwaysFailing(down)
    assert world.advance() == RunStatus.FAILED
    assert len(world.step_log("search")) == 1
    assert world.store.run.state.stop_reason == "provider_failures"
    assert world.store.stop == ("provider_failures", "")


class _AlwaysFailing(dict[str, AcquisitionError]):
    def __init__(self, error: AcquisitionError) -> None:
        super().__init__()
        self.error = error

    def __contains__(self, key: object) -> bool:
        return True

    def __getitem__(self, key: str) -> AcquisitionError:
        return self.error


def test_invalid_actions_are_refused_and_recorded_and_research_goes_on() -> None:
    calls = {"n": 0}

    def confused_then_sane(brief: ResearchBrief) -> ResearchDecision:
        calls["n"] += 1
        if calls["n"] == 1:
            return ResearchDecision(
                actions=[
                    ReadAction(source_id="s99", question_ids=["q1"], rationale="Read s99."),
                    SearchAction(query="gdp", question_ids=["q7"], rationale="Unknown question."),
                    SearchAction(query="?!", question_ids=["q1"], rationale="Nothing to search."),
                ]
            )
        return world.decider(brief)

    world = build(decide=confused_then_sane)
    assert world.advance() == RunStatus.COMPLETED
    refused = [s for s in world.store.steps.values() if s.payload.get("refused")]
    assert [s.summary for s in refused[:3]] == [
        "Refused: There is no source s99 in this run.",
        "Refused: The plan has no question q7.",
        "Refused: The search has no searchable words.",
    ]
    assert all(s.status == "skipped" for s in refused)
    assert world.decider.briefs[0].recent_refusals[0].startswith("read source s99:")
    assert world.web.queries[0] == GDP_QUERY  # nothing refused ever reached the web


def test_a_model_that_keeps_answering_nonsense_ends_research_with_a_partial_report() -> None:
    world = build()
    world.model.fail_next(
        "decide", ModelError("The decision was not valid JSON after a repair."), times=2
    )
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED
    assert len(world.model.requests["decide"]) == 2  # the call and exactly one retry
    assert world.store.run.state.stop_reason == StopReason.INVALID_DECISIONS
    assert world.store.run.state.invalid_decisions == 1
    report = world.store.report
    assert report is not None and report.partial
    assert any("could not be used" in line for line in report.methodology)


def test_an_unreachable_decision_model_fails_research_and_a_retry_resumes() -> None:
    world = build()
    world.model.fail_next("decide", ModelError("Connection refused.", retryable=True), times=2)
    assert world.advance() == RunStatus.FAILED
    assert world.store.transitions[-1] == (
        "researching",
        "failed",
        "The decision model failed: Connection refused.",
    )
    # Retry (what the retry control does): failed -> queued, the loop picks up where it was.
    assert world.store.transition(RUN, expected=RunStatus.FAILED, to=RunStatus.QUEUED)
    assert world.advance() == RunStatus.COMPLETED


def test_budget_exhaustion_yields_a_clearly_partial_report() -> None:
    budget = budget_for("quick").model_copy(update={"searches": 1, "fetched_sources": 1})
    world = build(budget=budget)
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    usage = world.store.run.usage
    assert usage.searches <= 1 and usage.fetched_sources <= 1
    report = world.store.report
    assert report is not None and report.partial
    assert [gap.question_id for gap in report.gaps if gap.question_id] == ["q2"]
    assert world.events.of_type("report_ready")[0].terminal_status == "budget_exhausted"
    markdown = render_markdown(
        report, evidence={e.id: e for e in world.store.list_evidence(RUN)}, sources={}
    )
    assert "This is a partial report" in markdown


def test_without_model_budget_for_synthesis_the_program_quotes_the_evidence() -> None:
    world = build()
    world.model.fail_next("synthesize", ModelError("The endpoint timed out.", retryable=True))
    assert world.advance() == RunStatus.FAILED
    # Meanwhile the output-token budget is (almost) gone: no synthesis call fits any more.
    budget = world.store.run.budget
    world.store.run = world.store.run.model_copy(
        update={
            "usage": world.store.run.usage.model_copy(
                update={"output_tokens": budget.output_tokens - 100}
            )
        }
    )
    assert world.store.transition(RUN, expected=RunStatus.FAILED, to=RunStatus.SYNTHESIZING)
    assert world.advance() == RunStatus.COMPLETED

    assert len(world.model.requests["synthesize"]) == 1  # only the failed attempt
    report = world.store.report
    assert report is not None and report.mode == "extractive"
    evidence = {item.id: item for item in world.store.list_evidence(RUN)}
    findings = [s for s in report.statements() if s.kind == "finding"]
    assert findings
    for finding in findings:
        (evidence_id,) = finding.evidence_ids
        assert evidence[evidence_id].excerpt in finding.text
    assert world.store.run.usage.output_tokens <= budget.output_tokens


def test_elapsed_time_stops_research_but_not_the_report() -> None:
    budget = budget_for("quick").model_copy(update={"elapsed_seconds": 30})
    world = build(budget=budget)
    world.model.seconds_per_call = 12
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED
    assert world.store.run.state.stop_reason == "time_exhausted"
    assert world.store.report is not None and world.store.report.partial
    research_starts = [
        t
        for step_id, times in world.store.started_at.items()
        if world.store.steps[step_id].kind in ("search", "read")
        for t in times
    ]
    assert research_starts and max(research_starts) < 30


def test_a_failed_synthesis_is_retried_from_stored_evidence() -> None:
    world = build()
    world.model.fail_next("synthesize", ModelError("The endpoint timed out.", retryable=True))
    assert world.advance() == RunStatus.FAILED
    assert world.store.run.resume_phase == RunStatus.SYNTHESIZING
    assert world.store.transitions[-1][:2] == ("synthesizing", "failed")
    searches, fetches = len(world.web.queries), len(world.web.fetches)

    assert world.store.transition(RUN, expected=RunStatus.FAILED, to=RunStatus.SYNTHESIZING)
    assert world.advance() == RunStatus.COMPLETED
    assert (len(world.web.queries), len(world.web.fetches)) == (searches, fetches)
    (step,) = world.step_log("synthesize")
    assert step.status == "succeeded" and step.attempt == 2
    assert world.store.run.usage.retries >= 1


def test_unsupported_findings_are_demoted_when_no_repair_fixes_them() -> None:
    def stubborn(request: SynthesisRequest) -> Report:
        return _synthesis_with_one_bad_citation(request.model_copy(update={"problems": []}))

    world = build(synthesize=stubborn)
    assert world.advance() == RunStatus.COMPLETED
    report = world.store.report
    demoted = next(s for s in report.statements() if s.claim_id == "invented")
    assert demoted.kind == "caveat" and demoted.text.startswith("Not supported by verified")
    assert len(world.model.requests["synthesize"]) == 2  # exactly one repair round


def test_the_report_states_how_the_research_was_done() -> None:
    world = build()
    world.advance()
    methodology = world.store.report.methodology
    assert any("searches" in line and "sources read" in line for line in methodology)
    assert any("Every required question is covered." in line for line in methodology)


def test_scopes_that_differ_explain_a_conflict() -> None:
    extractions = dict(EXTRACTIONS)
    extractions["Daily unemployment report"] = [
        extractions["Daily unemployment report"][0].model_copy(
            update={"scope": EvidenceScope(geography="Paris region")}
        )
    ]
    world = build(extract=TableExtractor(extractions))
    assert world.advance() == RunStatus.COMPLETED
    assert world.store.run.state.resolved_contradictions == ["claim:france_unemployment_rate_2023"]
