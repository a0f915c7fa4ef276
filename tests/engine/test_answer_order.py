"""Reading a question's shape for the answer-first report: usage questions, comparisons and
their sides, and which side a passage names."""

import pytest

from research.engine.answer_order import (
    ANSWER_LABEL,
    CONTRASTING_LABEL,
    MAX_ANSWERS,
    SUPPORTING_LABEL,
    Placed,
    after_announcers,
    answer_first,
    by_side,
    comparison_sides,
    defines_focus,
    is_usage_question,
    names_side,
    quotes_code,
    with_announced,
    with_siblings,
)
from research.engine.contracts import ContradictionCandidate, ContradictionPosition
from tests.llm.factories import make_evidence


@pytest.mark.parametrize(
    "question",
    [
        "How do I enable foreign keys?",
        "How can one read a file line by line?",
        "Explain how to undo the last commit",
        "What command shows the reflog?",
        "Which syntax declares an async view?",
        "How must we configure the pool?",
    ],
)
def test_questions_about_doing_something_are_usage_questions(question):
    assert is_usage_question(question)


@pytest.mark.parametrize(
    "question",
    [
        "What is the default value of the setting?",
        "How many databases can be attached?",
        "When was version 2.3 released?",
        "How does the cache work?",
    ],
)
def test_other_questions_are_not(question):
    assert not is_usage_question(question)


def test_code_is_quoted_for_usage_or_when_it_holds_the_quoted_string():
    session = "> run()\nRuntimeError: Working outside of the zorbo context."
    assert quotes_code("How do I start a zorbo context?", "ctx = zorbo.start()")
    assert quotes_code('Why do I get "Working outside of the zorbo context"?', session)
    # The quoted terms out of order, or a question quoting nothing, do not make code an answer.
    assert not quotes_code('Why do I get "zorbo context outside working"?', session)
    assert not quotes_code("Why does the zorbo context fail?", session)


@pytest.mark.parametrize(
    ("question", "sides"),
    [
        ("Which is cheaper to run, heat pumps or gas boilers?", ("heat pumps", "gas boilers")),
        ("How do heat pumps and gas boilers compare?", ("heat pumps", "gas boilers")),
        (
            "How does lazy loading compare with eager loading on cost?",
            ("lazy loading", "eager loading"),
        ),
        ("How does merge differ from rebase?", ("merge", "rebase")),
        ("What is the difference between alloc and allocUnsafe?", ("alloc", "allocUnsafe")),
        ("Compare threads with processes for CPU-bound work", ("threads", "processes")),
        ("Tabs vs spaces in 2024?", ("Tabs", "spaces")),
        ("Is a hash join faster than a nested loop?", ("a hash join", "a nested loop")),
        ("Should I use SQLite or PostgreSQL?", ("SQLite", "PostgreSQL")),
    ],
)
def test_comparisons_give_their_two_sides(question, sides):
    found = comparison_sides(question)
    assert found is not None
    assert tuple(side.removeprefix("a ") for side in found) == tuple(
        side.removeprefix("a ") for side in sides
    )


@pytest.mark.parametrize(
    "question",
    [
        "What do heat pumps cost to run?",
        "Is the feature enabled or disabled by default?",
        "How does lazy loading compare with lazy loading?",
    ],
)
def test_a_question_naming_one_side_is_no_comparison(question):
    assert comparison_sides(question) is None


def test_a_passage_names_a_side_by_the_words_the_other_side_lacks():
    assert names_side("Gas boilers heat the home.", "gas boilers", "heat pumps")
    assert not names_side("Gas boilers heat the home.", "heat pumps", "gas boilers")


def _groups(*excerpts, relevance=0.8):
    return [
        [make_evidence(f"e{n}", text, "q1", relevance=relevance)]
        for n, text in enumerate(excerpts, 1)
    ]


def test_direct_answers_lead_then_supporting_then_contrasting():
    groups = _groups("one", "two direct", "three", "four direct")
    groups[2][0] = groups[2][0].model_copy(update={"stance": "contradicts"})

    placed = answer_first(groups, answers_directly=lambda g: "direct" in g[0].excerpt)

    assert [(p.label, p.group[0].excerpt) for p in placed] == [
        (ANSWER_LABEL, "two direct"),
        (ANSWER_LABEL, "four direct"),
        (SUPPORTING_LABEL, "one"),
        (CONTRASTING_LABEL, "three"),
    ]


def test_at_most_three_answers_lead():
    groups = _groups(*(f"direct {n}" for n in range(5)))

    placed = answer_first(groups, answers_directly=lambda g: True)

    assert [p.label for p in placed] == [ANSWER_LABEL] * MAX_ANSWERS + [SUPPORTING_LABEL] * 2


def test_another_value_of_a_conflict_with_the_answer_contrasts_it():
    groups = _groups("the fare is 2.40", "the fare is 2.90", "fares are set yearly")
    conflict = ContradictionCandidate(
        key="k1",
        claim_key="fare",
        evidence_ids=["e1", "e2"],
        positions=[
            ContradictionPosition(value="2.40", stance="supports", evidence_ids=["e1"], scopes=[]),
            ContradictionPosition(value="2.90", stance="supports", evidence_ids=["e2"], scopes=[]),
        ],
    )

    placed = answer_first(groups, answers_directly=lambda g: g[0].id == "e1", conflicts=[conflict])

    assert [(p.label, p.group[0].id) for p in placed] == [
        (ANSWER_LABEL, "e1"),
        (SUPPORTING_LABEL, "e3"),
        (CONTRASTING_LABEL, "e2"),
    ]


def test_a_comparison_shows_one_block_per_side():
    groups = _groups(
        "Gas boilers cost 1,420 euros a year.",
        "Heat pumps cost 1,130 euros a year, less than gas boilers.",
        "Heat pumps cost 1,130 euros a year.",
        "Running costs depend on the tariff.",
    )

    placed = by_side(groups, ("heat pumps", "gas boilers"), lambda item: item.excerpt)

    assert [(p.label, p.group[0].id) for p in placed] == [
        (ANSWER_LABEL, "e2"),
        ("heat pumps", "e3"),
        ("gas boilers", "e1"),
        (SUPPORTING_LABEL, "e4"),
    ]


def test_a_quotation_brings_the_alternatives_its_page_lists_in_the_same_words():
    shown = make_evidence("e1", "Create a shallow zorbo copy with a history after a date.", "q1")
    sibling = make_evidence(
        "e2", "Create a shallow zorbo copy with a history of the last n commits.", "q1"
    )
    elsewhere = make_evidence(
        "e3", "Create a shallow zorbo copy with a history of one branch.", "q1", source_id="s2"
    )
    short = make_evidence("e4", "The default is 31 days.", "q1")
    common = make_evidence("e5", "The default is 90 days.", "q1")
    unrelated = make_evidence("e6", "Zorbo copies keep their history.", "q1")

    placed = with_siblings(
        [[shown], [short], [unrelated]], [[shown], [sibling], [elsewhere], [short], [common]]
    )

    # The sibling follows its lead; another page's entry, and a phrase of three words shared
    # by two short lines, bring nothing.
    assert [group[0].id for group in placed] == ["e1", "e2", "e4", "e6"]


def _code(item, heading: str):
    return item.model_copy(
        update={"locator": item.locator.model_copy(update={"code": True, "heading": heading})}
    )


def test_a_code_sample_brings_the_other_code_samples_under_its_heading():
    shown = _code(make_evidence("e1", "import './old.cjs'; // loaded as CommonJS", "q1"), "Files")
    part = _code(make_evidence("e2", '// app.js, an ES module: "type": "module"', "q1"), "Files")
    other_heading = _code(make_evidence("e3", "import x from 'y';", "q1"), "Loaders")
    prose = make_evidence(
        "e4", "Files ending in .cjs are loaded as CommonJS.", "q1", heading="Files"
    )

    placed = with_siblings([[shown]], [[shown], [part], [other_heading], [prose]])

    assert [group[0].id for group in placed] == ["e1", "e2"]


def _at(evidence_id: str, excerpt: str, start: int, **extra):
    """A quotation of question q1 standing at ``start`` on its page."""
    item = make_evidence(evidence_id, excerpt, "q1", **extra)
    locator = item.locator.model_copy(update={"start": start, "end": start + len(excerpt)})
    return item.model_copy(update={"locator": locator})


def _ids(placed):
    return [group[0].id for group in placed]


def test_a_lead_in_ending_in_a_colon_brings_the_passages_it_announces_in_page_order():
    lead = _at("e1", "Zorbo checks these ledgers at start-up:  \n", 100, heading="Checks")
    second = _at("e3", "The archive ledger, when one is kept.", 260, heading="Checks")
    first = _at("e2", "The open ledger.", 200, heading="Checks")
    before = _at("e4", "Zorbo starts quickly.", 0, heading="Checks")
    other = _at("e5", "Zorbo writes its ledgers in order.", 900, source_id="s2")
    pool = [[lead], [second], [first], [before], [other]]

    placed = with_announced([[lead], [other]], pool)

    # The announced passages follow their lead, in the page's order; the passage before the
    # lead and the one shown already are not moved.
    assert _ids(placed) == ["e1", "e2", "e3", "e5"]


def test_a_passage_that_ends_otherwise_announces_nothing():
    lead = _at("e1", "Zorbo checks the open ledger at start-up.", 100)
    after = _at("e2", "The archive ledger, when one is kept.", 160)

    assert _ids(with_announced([[lead]], [[lead], [after]])) == ["e1"]


def test_an_announcer_at_the_end_of_its_page_brings_nothing():
    lead = _at("e1", "Zorbo checks these ledgers:", 500)
    earlier = _at("e2", "The open ledger.", 100)

    assert _ids(with_announced([[lead]], [[lead], [earlier]])) == ["e1"]


def test_the_announced_run_stops_at_a_gap_too_large_for_a_list():
    lead = _at("e1", "Zorbo checks these ledgers:", 0)
    near = _at("e2", "The open ledger.", 27 + 1_000)
    far = _at("e3", "The archive ledger.", 27 + 1_000 + 16 + 1_001)
    beyond = _at("e4", "The spare ledger.", 27 + 1_000 + 16 + 1_001 + 19 + 10)

    placed = with_announced([[lead]], [[lead], [near], [far], [beyond]])

    # Once the run is broken, what comes after the gap belongs to another part of the page.
    assert _ids(placed) == ["e1", "e2"]


def test_the_announced_passages_stand_under_the_same_heading_of_the_same_page():
    lead = _at("e1", "Zorbo checks these ledgers:", 0, heading="Checks")
    same = _at("e2", "The open ledger.", 40, heading="Checks")
    other_heading = _at("e3", "The archive ledger.", 80, heading="Repairs")
    other_page = _at("e4", "The spare ledger.", 60, heading="Checks", source_id="s2")

    placed = with_announced([[lead]], [[lead], [same], [other_heading], [other_page]])

    assert _ids(placed) == ["e1", "e2"]


def test_at_most_six_announced_passages_follow_their_lead():
    lead = _at("e0", "Zorbo checks these ledgers:", 0)
    items = [_at(f"e{n}", f"Ledger number {n}.", 100 * n) for n in range(1, 9)]

    placed = with_announced([[lead]], [[lead], *([item] for item in items)])

    assert _ids(placed) == ["e0", "e1", "e2", "e3", "e4", "e5", "e6"]


def test_an_item_led_by_its_near_duplicate_from_another_source_stands_where_its_page_has_it():
    lead = _at("e1", "Zorbo checks these ledgers:", 0)
    elsewhere = _at("e2", "Zorbo checks the open ledger.", 500, source_id="s2")
    item = _at("e3", "It checks the open ledger.", 40)
    group = [elsewhere, item]

    assert _ids(with_announced([[lead]], [[lead], group])) == ["e1", "e2"]


def test_the_supporting_passages_a_lead_in_announces_read_right_after_it_under_its_label():
    lead = _at("e1", "Zorbo checks these ledgers:", 0)
    item = _at("e2", "The open ledger.", 40)
    answer = _at("e3", "Zorbo checks the open ledger first.", 80)
    other = _at("e4", "Zorbo is fast.", 0, source_id="s2")
    placed = [
        Placed(ANSWER_LABEL, [lead]),
        Placed(ANSWER_LABEL, [other]),
        Placed(ANSWER_LABEL, [answer]),
        Placed(SUPPORTING_LABEL, [item]),
    ]

    ordered = after_announcers(placed)

    # A direct answer the lead-in also announces keeps its place among the answers.
    assert [(block.label, block.group[0].id) for block in ordered] == [
        (ANSWER_LABEL, "e1"),
        (ANSWER_LABEL, "e2"),
        (ANSWER_LABEL, "e4"),
        (ANSWER_LABEL, "e3"),
    ]


def test_a_passage_opening_with_the_definition_of_the_focus_defines_it():
    question = "What exactly is a zorblet in Zorbo?"
    assert defines_focus(question, "A zorblet is a set of operations kept for later.")
    # What it is not bounds it too.
    assert defines_focus(question, "A zorblet in Zorbo is not a plugin because it is no app.")
    # A copula after a long clause, or a definition of something else, defines nothing.
    assert not defines_focus(
        question, "When a request reaches the zorblet registry on the server it is a copy."
    )
    assert not defines_focus(question, "A plugin is a package that extends Zorbo.")
    # Only a question asking what something is wants a definition.
    assert not defines_focus("How do I register a zorblet?", "A zorblet is a set of operations.")
