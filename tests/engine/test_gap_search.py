"""The gap search: when the decider asks to finish while the finish gate refuses and it has
nothing else to propose, the program searches once for each required question the gate does
not accept (the question's text and a qualifier asking for an official or primary source)
and reads the best new result; a question nothing answers still ends partial."""

from research.engine.contracts import (
    EvidenceCandidate,
    ResearchBrief,
    ResearchDecision,
    SearchAction,
)
from research.engine.run.context import GAP_KEY_PREFIX
from research.engine.run.follow_ups import GAP_QUALIFIERS, follow_up_query
from research.engine.states import RunStatus
from tests.engine.fakes import TableExtractor
from tests.engine.test_orchestrator import (
    EXTRACTIONS,
    GDP_Q,
    GDP_QUERY,
    INSEE,
    PRESS,
    RESULTS,
    World,
    build,
    read_urls,
)

GDP_GAP_QUERY = follow_up_query(GDP_Q, [], GAP_QUALIFIERS)
PRESS_EVIDENCE = {
    "Press: GDP grew": [
        EvidenceCandidate(
            excerpt="France's GDP grew 1.1% in 2023",
            question_ids=["q1"],
            stance="supports",
            claim_key="France GDP growth 2023 (press)",
            normalized_value="1.1%",
            relevance=0.8,
            confidence=0.7,
        )
    ]
}


def _world(gap_results: list[str]) -> World:
    # The decider's own search finds only a news page: q1 rests on one independent source.
    results = {**RESULTS, GDP_QUERY: [PRESS], str(GDP_GAP_QUERY): gap_results}
    world = build(results=results, extract=TableExtractor({**EXTRACTIONS, **PRESS_EVIDENCE}))
    for _ in range(40):
        if world.advance() in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED):
            break
    return world


def _gap_searches(world: World) -> list[str]:
    return [
        str(step.payload["query"])
        for step in world.step_log("search")
        if str(step.payload.get("follow_up") or "").startswith(GAP_KEY_PREFIX)
    ]


def test_the_gap_search_finds_the_official_source_the_gate_asks_for() -> None:
    assert GDP_GAP_QUERY is not None and GDP_GAP_QUERY.endswith(GAP_QUALIFIERS[0])
    world = _world([INSEE])
    assert _gap_searches(world) == [GDP_GAP_QUERY]
    assert INSEE in read_urls(world)
    assert world.store.run.status == RunStatus.COMPLETED
    assert f"{GAP_KEY_PREFIX}q1" in world.store.run.state.followed_up_contradictions


def test_a_question_the_gap_search_cannot_help_ends_partial_after_one_search() -> None:
    world = _world([])
    assert _gap_searches(world) == [GDP_GAP_QUERY]
    assert INSEE not in read_urls(world)
    assert world.store.run.status == RunStatus.BUDGET_EXHAUSTED


def test_research_that_runs_dry_gets_its_gap_searches_before_synthesis() -> None:
    # A decider that never asks to finish and keeps proposing searches that find nothing:
    # diminishing returns stop research, and each unaccepted question still gets its search.
    count = iter(range(100))

    def fruitless(brief: ResearchBrief) -> ResearchDecision:
        query = f"unrelated topic number {next(count)}"
        return ResearchDecision(
            actions=[SearchAction(query=query, question_ids=["q1"], rationale="Looking.")]
        )

    results = {str(GDP_GAP_QUERY): [INSEE]}
    world = build(results=results, decide=fruitless)
    for _ in range(40):
        if world.advance() in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED):
            break
    assert world.store.run.state.stop_reason == "diminishing_returns"
    assert GDP_GAP_QUERY in _gap_searches(world)
    assert INSEE in read_urls(world)
    assert world.store.run.status == RunStatus.BUDGET_EXHAUSTED  # q2 is still unanswered
