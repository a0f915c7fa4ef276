"""How runs end, over in-memory ports: every stop reason is stored as data and described in
its own words with its own controls; a failed decision is a failed step; long question ids
survive synthesis."""

import re
import string

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from research.engine.contracts import (
    Budget,
    PlanQuestion,
    ReadAction,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SearchAction,
    Usage,
)
from research.engine.guards import budget_for
from research.engine.outcomes import (
    OUTCOME_FILTERS,
    OutcomeKey,
    limit_phrase,
    outcome_controls,
    run_outcome,
)
from research.engine.ports import AcquisitionError, ModelError
from research.engine.run.orchestrator import Orchestrator
from research.engine.states import Control, RunStatus
from research.llm.extractive import ExtractiveModelClient
from tests.engine.clock import FakeClock
from tests.engine.factories import make_evidence, make_source
from tests.engine.fakes import MemoryEvents, MemoryWeb, RuleModel, cite_everything
from tests.engine.memory_store import MemoryStore
from tests.engine.test_orchestrator import INSEE, PRESS, RUN, build

ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")


def outcome_of(world) -> object:
    stop_reason, stop_limit = world.store.stop
    return run_outcome(
        world.store.run.status, stop_reason, stop_limit, budget=world.store.run.budget.model_dump()
    )


# --------------------------------------------------------------------------------------------
# Each stop reason, end to end over the fakes
# --------------------------------------------------------------------------------------------


def test_a_round_limit_is_named_and_offers_more_budget() -> None:
    world = build(budget=budget_for("standard").model_copy(update={"iterations": 1}))
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    assert world.store.stop == ("budget_exhausted", "iterations")
    outcome = outcome_of(world)
    assert outcome.key is OutcomeKey.PARTIAL_BUDGET
    assert outcome.label == "Partial: budget limit reached"
    assert "the run's limit on rounds (1)" in outcome.sentence
    assert Control.INCREASE_BUDGET in outcome_controls(
        RunStatus.BUDGET_EXHAUSTED, "budget_exhausted"
    )


def test_three_rounds_without_gain_end_as_nothing_new_without_a_budget_offer() -> None:
    def search_the_same_sites(brief: ResearchBrief) -> ResearchDecision:
        # New wording every round, but the searches find only what was already read.
        unread = [c for c in brief.candidates if c.status == "candidate"]
        if unread:
            return ResearchDecision(
                actions=[
                    ReadAction(source_id=unread[0].source_id, question_ids=["q1"], rationale="r")
                ]
            )
        query = f"france gdp growth angle {brief.iteration}"
        return ResearchDecision(
            actions=[SearchAction(query=query, question_ids=["q1"], rationale="s")]
        )

    results = {f"france gdp growth angle {n}": [INSEE] for n in range(30)}
    world = build(decide=search_the_same_sites, results=results)
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    assert world.store.stop == ("diminishing_returns", "")
    outcome = outcome_of(world)
    assert outcome.key is OutcomeKey.PARTIAL_NOTHING_NEW
    assert outcome.label == "Partial: nothing new found"
    assert "More budget would not help" in outcome.sentence
    assert "Increase" not in outcome.sentence
    controls = outcome_controls(RunStatus.BUDGET_EXHAUSTED, "diminishing_returns")
    assert Control.INCREASE_BUDGET not in controls and Control.CANCEL not in controls


def test_research_that_could_read_nothing_says_so() -> None:
    blocked = AcquisitionError("blocked", "The site asks for a subscription (paywall).")
    world = build(
        errors={INSEE: blocked, PRESS: blocked}, results={"France GDP growth 2023": [INSEE, PRESS]}
    )
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    assert not [s for s in world.store.sources.values() if s.status == "fetched"]
    assert world.store.stop == ("no_readable_sources", "")
    outcome = outcome_of(world)
    assert outcome.key is OutcomeKey.PARTIAL_NO_SOURCES
    assert outcome.label == "Partial: no readable sources"
    assert Control.INCREASE_BUDGET not in outcome_controls(
        RunStatus.BUDGET_EXHAUSTED, "no_readable_sources"
    )
    assert any("No source could be read" in line for line in world.store.report.methodology)


def test_a_provider_outage_fails_the_run_and_offers_a_retry() -> None:
    down = AcquisitionError("failed", "No search provider answered.", retryable=True)

    def always_search(brief: ResearchBrief) -> ResearchDecision:
        query = f"france economy round {brief.iteration}"
        return ResearchDecision(
            actions=[SearchAction(query=query, question_ids=["q1"], rationale="s")]
        )

    world = build(decide=always_search, results={})
    world.web.search_errors = {f"france economy round {n}": down for n in range(10)}
    assert world.advance() == RunStatus.FAILED

    outcome = outcome_of(world)
    assert outcome.key is OutcomeKey.FAILED_PROVIDER_OUTAGE
    assert outcome.label == "Failed: provider outage"
    controls = outcome_controls(RunStatus.FAILED, "provider_failures")
    assert Control.RETRY in controls and Control.INCREASE_BUDGET not in controls


def test_an_unreachable_model_is_a_provider_outage_too() -> None:
    world = build()
    world.model.fail_next("synthesize", ModelError("Connection refused.", retryable=True))
    assert world.advance() == RunStatus.FAILED
    assert world.store.stop == ("provider_failures", "")
    # A model that answers nonsense is not an outage: the run fails without that label.
    world = build()
    world.model.fail_next("synthesize", ModelError("The report was not valid JSON."))
    assert world.advance() == RunStatus.FAILED
    assert world.store.stop == ("", "")
    assert outcome_of(world).key is OutcomeKey.FAILED


def test_a_completed_run_keeps_its_stop_reason_as_data() -> None:
    world = build()
    assert world.advance() == RunStatus.COMPLETED
    assert world.store.stop == ("finish_gate_passed", "")
    assert outcome_of(world).label == "Completed"


# --------------------------------------------------------------------------------------------
# Failed decisions are failed steps
# --------------------------------------------------------------------------------------------


def test_a_decider_answering_junk_twice_leaves_a_failed_decide_step() -> None:
    world = build()
    junk = ModelError("The answer is not valid JSON.", usage=Usage(model_calls=1))
    world.model.fail_next("decide", junk, times=2)
    assert world.advance() == RunStatus.BUDGET_EXHAUSTED

    (failed,) = [s for s in world.step_log("decide") if s.status == "failed"]
    assert failed.iteration == 0 and failed.payload == {"failed": True}
    assert failed.error == (
        "The decision model twice returned decisions that could not be used: "
        "The answer is not valid JSON."
    )
    assert failed.usage.model_calls == 2  # both calls are on the step that spent them
    finished = [e for e in world.events.of_type("step_finished") if e.step_id == failed.id]
    assert [e.outcome for e in finished] == ["failed"]
    assert world.store.stop == ("invalid_decisions", "")
    assert outcome_of(world).label == "Partial: unusable decisions"


def test_a_failed_decision_is_recorded_and_the_retry_decides_afresh() -> None:
    world = build()
    world.model.fail_next("decide", ModelError("Connection refused.", retryable=True), times=2)
    assert world.advance() == RunStatus.FAILED
    (failed,) = world.step_log("decide")
    assert (
        failed.status == "failed"
        and failed.error == "The decision model failed: Connection refused."
    )

    assert world.store.transition(RUN, expected=RunStatus.FAILED, to=RunStatus.QUEUED)
    assert world.advance() == RunStatus.COMPLETED
    first_round = [s for s in world.step_log("decide") if s.iteration == 0]
    assert [s.status for s in first_round] == ["failed", "succeeded"]
    assert first_round[1].payload["steps"]  # the new decision carries the steps it accepted


# --------------------------------------------------------------------------------------------
# Words and filters
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "phrase"),
    [
        ("iterations", "rounds (12)"),
        ("searches", "searches (18) and sources read (24)"),
        ("fetched_sources", "sources read (24)"),
        ("model_calls", "model calls (40)"),
        ("bytes_fetched", "source text (3,000,000 bytes)"),
        ("input_tokens", "input tokens (500,000)"),
        ("elapsed_seconds", "research time (20 min)"),
    ],
)
def test_every_budget_limit_has_words(limit: str, phrase: str) -> None:
    assert limit_phrase(limit, budget_for("standard").model_dump()) == phrase


def test_a_partial_run_without_a_recorded_reason_keeps_its_sentence_and_the_offer() -> None:
    outcome = run_outcome("budget_exhausted", "", "", detail="A partial report was written: x.")
    assert (
        outcome.key is OutcomeKey.PARTIAL and outcome.sentence == "A partial report was written: x."
    )
    assert Control.INCREASE_BUDGET in outcome_controls("budget_exhausted", "")


def test_every_outcome_can_be_filtered_for() -> None:
    keys = {choice.key for choice in OUTCOME_FILTERS}
    assert {key.value for key in OutcomeKey} <= keys


# --------------------------------------------------------------------------------------------
# Question ids as long as the contract allows
# --------------------------------------------------------------------------------------------

_ID_TAIL = string.ascii_letters + string.digits + "_.:-"


@st.composite
def question_ids(draw: st.DrawFn) -> str:
    length = draw(st.integers(min_value=1, max_value=64))
    first = draw(st.sampled_from(string.ascii_letters + string.digits))
    return first + draw(st.text(alphabet=_ID_TAIL, min_size=length - 1, max_size=length - 1))


def _synthesis_world(qid: str, *, extractive: bool) -> tuple[MemoryStore, Orchestrator]:
    other = "q2" if qid != "q2" else "q3"
    plan = ResearchPlan(
        objective="How large is the French economy?",
        questions=[
            PlanQuestion(id=qid, text="First question?"),
            PlanQuestion(id=other, text="Second?"),
        ],
    )
    budget: Budget = budget_for("quick")
    clock = FakeClock()
    store = MemoryStore(RUN, budget=budget, status=RunStatus.SYNTHESIZING, plan=plan, clock=clock)
    store.sources["s1"] = make_source("s1", "https://www.insee.fr/en/gdp")
    for number in range(4):
        item = make_evidence(f"Excerpt number {number} about the economy.", question_ids=[qid])
        store.evidence[item.id] = item
    if not extractive:
        # No output tokens are left for a synthesis call: the program writes the report.
        store.run = store.run.model_copy(
            update={
                "usage": store.run.usage.model_copy(
                    update={"output_tokens": budget.output_tokens - 100}
                )
            }
        )
    model = (
        ExtractiveModelClient()
        if extractive
        else RuleModel(synthesize=cite_everything, clock=clock)
    )
    orchestrator = Orchestrator(
        store=store,
        model=model,
        sources=MemoryWeb({}, {}, clock=clock),
        events=MemoryEvents(),
        clock=clock,
    )
    return store, orchestrator


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(qid=question_ids(), extractive=st.booleans())
def test_any_valid_question_id_survives_synthesis(qid: str, extractive: bool) -> None:
    store, orchestrator = _synthesis_world(qid, extractive=extractive)

    assert orchestrator.advance(RUN) in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED)

    report = store.report
    assert report is not None
    assert report.mode == "extractive"
    claim_ids = [statement.claim_id for statement in report.statements()]
    assert all(ID_PATTERN.match(claim_id) for claim_id in claim_ids)
    assert len(claim_ids) == len(set(claim_ids))
    assert [section.id for section in report.sections][0] == qid
    assert any(s.kind == "finding" for s in report.sections[0].statements)
