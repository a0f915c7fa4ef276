"""The extractive decider's second search: worded after the first one's results."""

from research.engine.guards import fingerprint_query
from research.llm.extractive import ExtractiveModelClient
from research.llm.feedback import feedback_query, inflection_variants
from tests.llm.factories import candidate, make_brief, make_plan

QUESTION = "How do I test my garden pumps without starting the motor?"
FIRST = "test garden pumps starting motor"
SECOND = "test garden pumps starting"


def _plan():
    return make_plan(QUESTION, objective=QUESTION)


def _searches(actions):
    return [a.query for a in actions if a.type == "search"]


def test_inflection_variants_are_other_spellings_of_the_words_most_used_first():
    texts = ["Testing garden pumps", "Pump tests", "Tests of motors", "Testing hoses 2024"]

    variants = inflection_variants(["test", "pumps", "motor"], texts)

    assert variants == ["testing", "tests", "pump"]
    assert inflection_variants(["test"], ["A test", "Unrelated words"]) == []
    assert feedback_query("test pumps", ["test"], ["Testing pumps"]) == "test pumps testing"


def test_the_second_search_waits_for_the_first_ones_results():
    actions = ExtractiveModelClient().decide(make_brief(_plan())).value.actions

    assert _searches(actions) == [FIRST]


def test_the_second_search_adds_the_spellings_the_first_results_use():
    brief = make_brief(
        _plan(),
        candidates=[
            candidate("s1", "Testing a garden pump", domain="pumps.example"),
            candidate("s2", "Motors and their tests", domain="motors.example"),
        ],
        recent_queries=[FIRST],
    )

    actions = ExtractiveModelClient().decide(brief).value.actions

    assert _searches(actions) == [f"{SECOND} testing pump motors"]


def test_the_second_search_is_made_beside_a_strong_read():
    brief = make_brief(
        _plan(),
        candidates=[candidate("s1", "How to test garden pumps without starting the motor")],
        recent_queries=[FIRST],
    )

    actions = ExtractiveModelClient().decide(brief).value.actions

    assert [a.type for a in actions][:2] == ["read", "search"]
    assert _searches(actions) == [SECOND]


def test_the_second_search_is_made_once_though_the_results_change():
    made = f"{SECOND} testing pump tests"
    brief = make_brief(
        _plan(),
        candidates=[candidate("s3", "Pumping stations", domain="water.example")],
        recent_queries=[FIRST, made],
    )

    actions = ExtractiveModelClient().decide(brief).value.actions

    queries = _searches(actions)
    second = set(fingerprint_query(SECOND).terms)
    assert not any(second <= set(fingerprint_query(query).terms) for query in queries)
