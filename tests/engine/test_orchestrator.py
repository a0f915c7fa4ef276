"""The research loop end to end over in-memory ports: the ten-step scenario of the reference
design, planning, sources that fail or repeat, invalid decisions, budgets and progress."""

import threading
from dataclasses import dataclass
from typing import Any

import pytest

from research.engine.citations import number_citations, render_markdown
from research.engine.contracts import (
    Budget,
    EvidenceCandidate,
    PlanQuestion,
    ReadAction,
    Report,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SearchAction,
    SourcePolicy,
    SourceSummary,
    Statement,
    SynthesisRequest,
)
from research.engine.guards import budget_for
from research.engine.ports import AcquisitionError, ModelError
from research.engine.run.deciding import follow_up_query
from research.engine.run.orchestrator import Orchestrator
from research.engine.run.progress import display_text
from research.engine.states import RunStatus
from tests.engine.clock import FakeClock
from tests.engine.factories import make_document
from tests.engine.fakes import (
    MemoryEvents,
    MemoryWeb,
    RuleModel,
    TableExtractor,
    TopicDecider,
    cite_everything,
    finish_decision,
)
from tests.engine.memory_store import MemoryStore

RUN = "run-1"
GDP_Q = "What was France's GDP growth in 2023?"
JOBS_Q = "What was France's unemployment rate in 2023?"
PLAN = ResearchPlan(
    objective="How did the French economy do in 2023?",
    questions=[PlanQuestion(id="q1", text=GDP_Q), PlanQuestion(id="q2", text=JOBS_Q)],
)
GDP_QUERY = "France GDP growth 2023"
JOBS_QUERY = "France unemployment rate 2023"
JOBS_FOLLOW_UP = follow_up_query(JOBS_Q, [])

INSEE = "https://www.insee.fr/en/gdp-2023"
PRESS = "https://news.example.org/economy/gdp"
STATS = "https://stats.example.com/unemployment-2023"
DAILY = "https://daily.example.net/jobs"
DARES = "https://dares.travail-emploi.gouv.fr/unemployment-2023"

PAGES = {
    INSEE: make_document(
        "National accounts. In 2023, GDP grew by 0.9% in volume (revised estimate).",
        url=INSEE,
        title="INSEE GDP 2023",
        publisher="INSEE",
    ),
    PRESS: make_document(
        "Economy desk. France's GDP grew 1.1% in 2023, say early estimates.",
        url=PRESS,
        title="Press: GDP grew",
        publisher="Example News",
    ),
    STATS: make_document(
        "Labour market. Unemployment stood at 7.3% in 2023 on average.",
        url=STATS,
        title="Unemployment statistics 2023",
        publisher="Stats Example",
    ),
    DAILY: make_document(
        "Jobs report. The jobless rate reached 7.5% in 2023, unemployment data show.",
        url=DAILY,
        title="Daily unemployment report",
        publisher="The Daily",
    ),
    DARES: make_document(
        "Key figures. The unemployment rate was 7.3% on average in 2023 (ILO definition).",
        url=DARES,
        title="DARES unemployment 2023",
        publisher="DARES",
    ),
}
RESULTS = {
    GDP_QUERY: [INSEE, PRESS],
    JOBS_QUERY: [STATS, DAILY],
    JOBS_FOLLOW_UP: [DARES, DAILY],
}
JOBS_CLAIM = "France unemployment rate 2023"
EXTRACTIONS = {
    "INSEE GDP 2023": [
        EvidenceCandidate(
            excerpt="In 2023, GDP grew by 0.9% in volume",
            question_ids=["q1"],
            stance="supports",
            claim_key="France GDP growth 2023",
            normalized_value="0.9%",
            relevance=0.9,
            confidence=0.9,
        )
    ],
    "Unemployment statistics 2023": [
        EvidenceCandidate(
            excerpt="Unemployment stood at 7.3% in 2023 on average.",
            question_ids=["q2"],
            stance="supports",
            claim_key=JOBS_CLAIM,
            normalized_value="7.3%",
            relevance=0.9,
            confidence=0.8,
        )
    ],
    "Daily unemployment report": [
        EvidenceCandidate(
            excerpt="The jobless rate reached 7.5% in 2023",
            question_ids=["q2"],
            stance="supports",
            claim_key=JOBS_CLAIM,
            normalized_value="7.5%",
            relevance=0.8,
            confidence=0.6,
        ),
        # Not in the page: verification must reject it.
        EvidenceCandidate(
            excerpt="Unemployment fell to 5% in 2023.",
            question_ids=["q2"],
            relevance=0.9,
            confidence=0.9,
        ),
    ],
    "DARES unemployment 2023": [
        EvidenceCandidate(
            excerpt="The unemployment rate was 7.3% on average in 2023 (ILO definition).",
            question_ids=["q2"],
            stance="supports",
            claim_key=JOBS_CLAIM,
            normalized_value="7.3 %",
            relevance=0.95,
            confidence=0.9,
        )
    ],
}


@dataclass
class World:
    store: MemoryStore
    web: MemoryWeb
    model: RuleModel
    events: MemoryEvents
    clock: FakeClock
    decider: TopicDecider
    orchestrator: Orchestrator

    def advance(self) -> RunStatus:
        return self.orchestrator.advance(RUN)

    def step_log(self, kind: str) -> list[Any]:
        return self.store.steps_of(kind)


def build(
    *,
    status: RunStatus = RunStatus.QUEUED,
    budget: Budget | None = None,
    pages: dict[str, Any] | None = None,
    results: dict[str, list[str]] | None = None,
    decide: Any = None,
    synthesize: Any = None,
    extract: Any = None,
    policy: SourcePolicy | None = None,
    **web_options: Any,
) -> World:
    clock = FakeClock()
    store = MemoryStore(
        RUN,
        budget=budget or budget_for("standard"),
        status=status,
        plan=None if status == RunStatus.CREATED else PLAN,
        plan_version=0 if status == RunStatus.CREATED else 1,
        objective=PLAN.objective,
        policy=policy,
        clock=clock,
    )
    web = MemoryWeb(
        PAGES if pages is None else pages,
        RESULTS if results is None else results,
        clock=clock,
        **web_options,
    )
    decider = TopicDecider(
        queries={"q1": GDP_QUERY, "q2": JOBS_QUERY}, topics={"q1": "gdp", "q2": "unemployment"}
    )
    model = RuleModel(
        plan=PLAN,
        decide=decide or decider,
        extract=extract or TableExtractor(EXTRACTIONS),
        synthesize=synthesize or cite_everything,
        clock=clock,
    )
    events = MemoryEvents()
    orchestrator = Orchestrator(store=store, model=model, sources=web, events=events, clock=clock)
    return World(store, web, model, events, clock, decider, orchestrator)


def source_for(world: World, url: str) -> Any:
    return next(s for s in world.store.sources.values() if s.url == url)


def searched(world: World) -> list[str]:
    return [
        str(step.payload["query"]) for step in world.step_log("search") if "query" in step.payload
    ]


def read_urls(world: World) -> list[str]:
    return [str(step.payload["url"]) for step in world.step_log("read") if "url" in step.payload]


# --------------------------------------------------------------------------------------------
# The ten-step scenario (reference design §20)
# --------------------------------------------------------------------------------------------


def _synthesis_with_one_bad_citation(request: SynthesisRequest) -> Report:
    report = cite_everything(request)
    if request.problems:
        return report  # the repair round drops the invented citation
    extra = Statement(
        claim_id="invented",
        kind="finding",
        text="Growth was 3% (a number no source gives).",
        evidence_ids=["ev-invented"],
    )
    return report.model_copy(update={"executive_summary": [extra]})


def test_ten_step_scenario_from_plan_to_rendered_report() -> None:
    world = build(status=RunStatus.CREATED, synthesize=_synthesis_with_one_bad_citation)

    # 1. The planner produces two required questions, with no tools and no web content.
    assert world.advance() == RunStatus.AWAITING_APPROVAL
    (plan_request,) = world.model.requests["plan"]
    assert plan_request.previous_plan is None and world.web.queries == []
    assert world.store.run.plan_version == 1
    assert world.store.run.plan.required_question_ids == ["q1", "q2"]
    assert [e.plan_version for e in world.events.of_type("plan_ready")] == [1]

    world.store.approve()
    assert world.advance() == RunStatus.COMPLETED

    # 2. The first search discovers candidates; 3. the best candidate is read.
    assert searched(world)[0] == GDP_QUERY
    assert read_urls(world)[0] == INSEE
    assert source_for(world, PRESS).status == "candidate"  # discovered, never needed

    # 4. Evidence covers one question; 5. the gap triggers a new query.
    briefs = world.decider.briefs
    after_first_read = next(b for b in briefs if b.coverage[0].covered)
    assert not after_first_read.coverage[1].covered
    assert searched(world)[1] == JOBS_QUERY

    # 6. Two sources conflict (7.3% against 7.5%), shown to the decider without their text.
    conflicted = next(b for b in briefs if b.open_contradictions)
    (conflict,) = conflicted.open_contradictions
    assert conflict.question_ids == ["q2"]
    assert all(position.value is None for position in conflict.positions)

    # 7. The program makes a targeted follow-up (the decider only asked to finish) and reads
    #    the best new result, an official source.
    follow_up = next(s for s in world.step_log("search") if s.payload.get("program"))
    assert follow_up.payload["query"] == JOBS_FOLLOW_UP
    assert follow_up.payload["follow_up"] == "claim:france_unemployment_rate_2023"
    assert read_urls(world)[-1] == DARES
    refused_finish = [s for s in world.step_log("decide") if s.payload.get("refused")]
    assert refused_finish and "followed up" in refused_finish[0].summary

    # 8. The finish gate passes.
    state = world.store.run.state
    assert state.stop_reason == "finish_gate_passed"
    assert state.followed_up_contradictions == ["claim:france_unemployment_rate_2023"]
    assert state.resolved_contradictions == ["claim:france_unemployment_rate_2023"]
    assert state.rejected_excerpts == 1  # the invented "5%" excerpt

    # 9. Synthesis cites evidence ids; the invented citation is repaired in one round.
    assert len(world.model.requests["synthesize"]) == 2
    report = world.store.report
    assert report is not None and not report.partial
    evidence = {item.id: item for item in world.store.list_evidence(RUN)}
    cited = [eid for s in report.statements() for eid in s.evidence_ids]
    assert cited and set(cited) <= set(evidence)
    assert "invented" not in {s.claim_id for s in report.statements()}
    assert report.contradictions and set(report.contradictions[0].evidence_ids) <= set(evidence)

    # 10. The citation renderer produces a valid report with numbered, resolvable citations.
    sources = {
        s.id: SourceSummary(id=s.id, title=s.title, url=s.url, publisher=s.publisher)
        for s in world.store.sources.values()
    }
    markdown = render_markdown(report, evidence=evidence, sources=sources)
    assert "[\\[1\\]]" in markdown and "## Sources" in markdown
    assert "(https://www.insee.fr/en/gdp-2023)" in markdown
    numbers = number_citations(report, evidence=evidence)
    for evidence_id in cited:
        (number,) = numbers.numbers_for([evidence_id])
        assert f"[\\[{number}\\]](#evidence-" in markdown

    assert world.events.of_type("report_ready")[0].terminal_status == "completed"
    usage = world.store.run.usage
    assert (usage.searches, usage.fetched_sources) == (3, 4)
    assert usage.model_calls == len(world.model.requests["plan"]) + sum(
        len(world.model.requests[p]) for p in ("decide", "extract", "synthesize")
    )


def test_every_store_call_happens_on_the_orchestrator_thread() -> None:
    world = build()
    assert world.advance() == RunStatus.COMPLETED
    assert world.store.threads == {threading.get_ident()}


def test_steps_are_durable_and_deduplicated() -> None:
    world = build()
    world.advance()
    keys = [step.dedupe_key for step in world.store.steps.values()]
    assert len(keys) == len(set(keys))
    urls = [s.canonical_url for s in world.store.sources.values()]
    assert len(urls) == len(set(urls))
    for step in world.step_log("read") + world.step_log("search"):
        assert step.status in ("succeeded", "failed", "skipped")
        if step.status == "succeeded":
            assert step.attempt == 1


# --------------------------------------------------------------------------------------------
# Planning
# --------------------------------------------------------------------------------------------


def test_planner_failure_fails_the_run_with_a_readable_reason() -> None:
    world = build(status=RunStatus.CREATED)
    world.model.fail_next("plan", ModelError("The model answered with invalid JSON twice."))
    assert world.advance() == RunStatus.FAILED
    expected, to, reason = world.store.transitions[-1]
    assert (expected, to) == ("planning", "failed")
    assert reason == (
        "The research plan could not be drafted: The model answered with invalid JSON twice."
    )
    (step,) = world.step_log("plan")
    assert step.status == "failed" and "invalid JSON" in step.error
    assert world.events.of_type("phase_changed")[-1].phase == "failed"


def test_plan_without_required_questions_gets_one() -> None:
    world = build(status=RunStatus.CREATED)
    world.model._plan = ResearchPlan(
        objective="x",
        questions=[PlanQuestion(id="q1", text="A?", priority="supporting")],
    )
    world.advance()
    assert world.store.run.plan.required_question_ids == ["q1"]


def test_a_pause_requested_before_planning_pauses_the_run() -> None:
    world = build(status=RunStatus.CREATED)
    world.store.request_pause()
    assert world.advance() == RunStatus.PAUSED
    assert world.store.run.resume_phase == RunStatus.PLANNING
    assert world.model.requests["plan"] == []


# --------------------------------------------------------------------------------------------
# Sources that repeat, fail or are blocked
# --------------------------------------------------------------------------------------------

MIRROR = "https://mirror.example.info/copy-of-jobs"


def test_duplicate_urls_and_mirrored_pages_are_kept_but_never_independent() -> None:
    pages = dict(PAGES)
    pages[MIRROR] = make_document(
        PAGES[STATS].text, url=MIRROR, title="Unemployment mirror copy", publisher="Mirror"
    )
    results = {
        GDP_QUERY: [INSEE],
        # The same page twice (tracking parameter, fragment) and a mirror of it.
        JOBS_QUERY: [STATS, STATS + "?utm_source=feed", MIRROR, STATS + "#top"],
    }

    def read_everything(brief: ResearchBrief) -> ResearchDecision:
        unread = [c for c in brief.candidates if c.status == "candidate"]
        if unread:
            return ResearchDecision(
                actions=[
                    ReadAction(source_id=c.source_id, question_ids=["q2"], rationale="Read it.")
                    for c in unread[:3]
                ]
            )
        if not brief.recent_queries:
            return ResearchDecision(
                actions=[
                    SearchAction(query=GDP_QUERY, question_ids=["q1"], rationale="q1"),
                    SearchAction(query=JOBS_QUERY, question_ids=["q2"], rationale="q2"),
                ]
            )
        return finish_decision()

    world = build(pages=pages, results=results, decide=read_everything)
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    assert sorted(s.url for s in world.store.sources.values()) == sorted([INSEE, STATS, MIRROR])
    mirror = source_for(world, MIRROR)
    original = source_for(world, STATS)
    assert mirror.status == "duplicate" and mirror.duplicate_of == original.id
    assert mirror.quality.independence_cluster == original.quality.independence_cluster
    # The mirror costs a fetch but no extraction call.
    extracted = {request.source_id for request in world.model.requests["extract"]}
    assert mirror.id not in extracted
    # q2 rests on one independent source: the mirror does not corroborate it.
    assert world.store.run.state.coverage["q2"].clusters == ["domain:example.com"]
    assert any(
        "q2 rests on one independent source" in g.description for g in world.store.report.gaps
    )


def test_a_blocked_page_is_recorded_and_another_candidate_is_read() -> None:
    errors = {INSEE: AcquisitionError("blocked", "The site asks for a subscription (paywall).")}
    world = build(errors=errors)
    # Without INSEE, q1 rests on the press article alone: the report is partial.
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    blocked = source_for(world, INSEE)
    assert blocked.status == "blocked"
    assert blocked.status_reason == "The site asks for a subscription (paywall)."
    failed_read = next(s for s in world.step_log("read") if s.payload["url"] == INSEE)
    assert failed_read.status == "failed" and "paywall" in failed_read.error
    # The program substituted the next candidate from another site in the same iteration.
    substitute = next(s for s in world.step_log("read") if s.payload.get("substitute_for"))
    assert substitute.payload["url"] == PRESS and substitute.iteration == failed_read.iteration
    assert source_for(world, PRESS).status == "fetched"
    # The decider learns about the failure in its next brief.
    later = world.decider.briefs[failed_read.iteration + 1]
    assert [(f.source_id, f.status) for f in later.failed_sources] == [(blocked.id, "blocked")]


# --------------------------------------------------------------------------------------------
# Invalid decisions
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Budgets and partial reports
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Concurrency
# --------------------------------------------------------------------------------------------

SITES = [f"https://site{n}.example.org/page" for n in range(1, 5)]
SAME_SITE = ["https://a.example.com/one", "https://b.example.com/two"]


def test_searches_and_fetches_respect_the_concurrency_limits() -> None:
    urls = SITES + SAME_SITE
    pages = {
        url: make_document(f"Fact number {n} about the economy.", url=url, title=f"Economy {n}")
        for n, url in enumerate(urls)
    }
    results = {f"economy query {n}": [urls[n]] for n in range(len(urls))}
    state = {"round": 0}

    def wide(brief: ResearchBrief) -> ResearchDecision:
        state["round"] += 1
        unread = [c for c in brief.candidates if c.status == "candidate"]
        if state["round"] == 1:
            return ResearchDecision(
                actions=[
                    SearchAction(query=f"economy query {n}", question_ids=["q1"], rationale="s")
                    for n in range(3)
                ]
            )
        if state["round"] == 2:
            return ResearchDecision(
                actions=[
                    SearchAction(query=f"economy query {n}", question_ids=["q1"], rationale="s")
                    for n in range(3, 6)
                ]
            )
        if unread:
            return ResearchDecision(
                actions=[
                    ReadAction(source_id=c.source_id, question_ids=["q1"], rationale="r")
                    for c in unread[-3:]
                ]
            )
        return finish_decision()

    world = build(
        pages=pages, results=results, decide=wide, delay=0.15
    )  # long enough for the pool to overlap calls on a loaded machine
    world.advance()
    assert world.web.peak["search"] == 2
    assert 2 <= world.web.peak["fetch"] <= 3
    assert world.web.peak["per_domain"] == 1
    assert world.store.threads == {threading.get_ident()}


def test_parallel_limits_cannot_be_raised_above_the_design() -> None:
    world = build()
    with pytest.raises(ValueError, match="max_parallel_fetches"):
        Orchestrator(
            store=world.store,
            model=world.model,
            sources=world.web,
            events=world.events,
            clock=world.clock,
            max_parallel_fetches=4,
        )


# --------------------------------------------------------------------------------------------
# Progress events
# --------------------------------------------------------------------------------------------


def test_progress_is_operational_and_never_carries_model_reasoning() -> None:
    secret = "INNER-MONOLOGUE: I think the user secretly wants"

    def chatty(brief: ResearchBrief) -> ResearchDecision:
        decision = world.decider(brief)
        actions = [
            action.model_copy(update={"rationale": f"{secret} {action.rationale}"})
            for action in decision.actions
        ]
        return ResearchDecision(actions=actions)

    world = build(decide=chatty)
    world.advance()
    messages = [event.message for event in world.events.events]
    assert not any(secret in message for message in messages)
    assert f"Searching “{GDP_QUERY}”" in messages
    assert "Reading www.insee.fr" in messages
    kinds = {event.type for event in world.events.events}
    assert {
        "phase_changed",
        "step_started",
        "step_finished",
        "source_updated",
        "counts_updated",
        "report_ready",
    } <= kinds
    # Rationales are kept on the step (trimmed), for the timeline.
    assert all(len(step.rationale) <= 400 for step in world.store.steps.values())


def test_display_text_strips_control_characters_and_shortens() -> None:
    assert display_text("a\u202eb\nc\x00d  e") == "ab c d e"
    long = display_text("word " * 100, 40)
    assert len(long) <= 40 and long.endswith("…")


def test_a_broken_event_sink_does_not_stop_research() -> None:
    world = build()

    def broken(event: Any) -> None:
        raise RuntimeError("channel layer down")

    world.events.emit = broken  # type: ignore[method-assign]
    assert world.advance() == RunStatus.COMPLETED


# --------------------------------------------------------------------------------------------
# Synthesis
# --------------------------------------------------------------------------------------------
