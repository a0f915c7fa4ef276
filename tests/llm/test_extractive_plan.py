"""The extractive planner: sub-questions from the wording of the question."""

from research.llm.decompose import decompose, find_geographies, find_timeframe
from research.llm.extractive import ExtractiveModelClient
from research.llm.search_queries import search_queries
from tests.llm.factories import plan_request


def _plan(objective: str, **extra):
    return ExtractiveModelClient().plan(plan_request(objective, **extra)).value


def _texts(plan) -> list[str]:
    return [question.text for question in plan.questions]


def test_a_versus_question_gets_required_questions_for_each_side_and_the_comparison():
    result = ExtractiveModelClient().plan(plan_request("Rust vs Go for backend services"))
    plan = result.value

    assert _texts(plan) == [
        "What are the strengths and weaknesses of Rust for backend services?",
        "What are the strengths and weaknesses of Go for backend services?",
        "How do Rust and Go compare for backend services?",
    ]
    assert plan.required_question_ids == ["q1", "q2", "q3"]
    assert plan.completion_criteria.required_question_ids == ["q1", "q2", "q3"]
    assert result.usage.model_calls == 1 and result.usage.input_tokens == 0


def test_a_comparison_on_named_facets_gets_a_question_per_facet_and_keeps_the_place():
    plan = _plan(
        "How do heat pumps compare with gas boilers on running costs and emissions in the UK?"
    )

    assert _texts(plan) == [
        "What is known about the running costs and emissions of heat pumps in the UK?",
        "What is known about the running costs and emissions of gas boilers in the UK?",
        "How do heat pumps and gas boilers compare on running costs in the UK?",
        "How do heat pumps and gas boilers compare on emissions in the UK?",
    ]
    assert plan.scope.geographies == ["UK"]
    assert set(plan.scope.included_topics) >= {"heat pumps", "gas boilers", "emissions"}


def test_other_comparison_wordings_are_recognised():
    difference = _texts(_plan("What is the difference between a Roth IRA and a traditional IRA?"))
    which = _texts(_plan("Which is cheaper, solar panels or wind turbines?"))

    assert difference == [
        "What is a Roth IRA?",
        "What is a traditional IRA?",
        "How does a Roth IRA differ from a traditional IRA?",
    ]
    assert which == [
        "How cheap are solar panels?",
        "How cheap are wind turbines?",
        "Which is cheaper, solar panels or wind turbines?",
    ]


def test_what_why_and_how_parts_become_separate_questions_with_the_subject_resolved():
    plan = _plan("What is CRISPR, how does it work and why is it controversial?")

    assert _texts(plan) == [
        "What is CRISPR?",
        "How does CRISPR work?",
        "Why is CRISPR controversial?",
    ]
    assert [q.rationale for q in plan.questions] == [
        "The what part of the question.",
        "The how part of the question.",
        "The why part of the question.",
    ]


def test_a_follow_up_that_points_back_is_anchored_to_the_subject():
    plan = _plan(
        "How many weekday boardings does the Harwick Metro Line 3 extension have, "
        "and how does that compare with the forecast?"
    )

    assert _texts(plan) == [
        "How many weekday boardings does the Harwick Metro Line 3 extension have?",
        "How does the number of weekday boardings of the Harwick Metro Line 3 extension "
        "compare with the forecast?",
    ]
    assert plan.questions[0].preferred_source_classes == ["official", "primary"]


def test_a_bare_follow_up_part_is_tied_to_the_subject():
    texts = _texts(
        _plan(
            "What caused the 2023 algal bloom in Lake Tessaly, and is phosphorus the main driver?"
        )
    )

    assert texts[1] == "Is phosphorus the main driver of the 2023 algal bloom in Lake Tessaly?"


def test_listed_facets_and_entities_get_a_question_each():
    fasting = _texts(
        _plan(
            "What are the health effects of intermittent fasting on weight, blood sugar and cholesterol?"
        )
    )
    wages = _plan("Compare the minimum wage in France and Germany since 2015")

    assert fasting == [
        "What are the health effects of intermittent fasting on weight?",
        "What are the health effects of intermittent fasting on blood sugar?",
        "What are the health effects of intermittent fasting on cholesterol?",
    ]
    assert _texts(wages)[:2] == [
        "What is known about the minimum wage in France since 2015?",
        "What is known about the minimum wage in Germany since 2015?",
    ]
    assert wages.scope.timeframe is not None and wages.scope.timeframe.start == "2015"


def test_depth_limits_the_number_of_questions():
    objective = (
        "What are the effects of remote work on productivity, wages, housing, commuting and "
        "loneliness, and why do firms disagree about it?"
    )

    assert len(_plan(objective, depth="quick").questions) == 4
    assert len(_plan(objective, depth="thorough").questions) == 6
    assert _texts(_plan(objective))[-1] == "Why do firms disagree about the effects of remote work?"


def test_a_refinement_adds_questions_and_keeps_existing_ids():
    first = _plan("Rust vs Go for backend services")

    revised = _plan(
        "Rust vs Go for backend services",
        previous_plan=first,
        refinement="Also look at hiring costs",
    )

    assert [q.id for q in revised.questions] == ["q1", "q2", "q3", "q4"]
    assert revised.questions[:3] == first.questions
    assert revised.questions[3].text == "What is known about hiring costs?"
    assert "q4" in revised.required_question_ids


def test_an_objective_without_structure_still_gets_one_question():
    plan = _plan("Harwick Metro")

    assert _texts(plan) == ["What is known about Harwick Metro?"]


def test_time_frames_and_places_are_read_from_the_wording():
    assert find_timeframe("grants paid between 2019 and 2023") == ("2019", "2023")
    assert find_timeframe("wages since 2015") == ("2015", None)
    assert find_timeframe("the 2023 bloom") == ("2023", "2023")
    assert find_timeframe("no dates") is None
    assert find_geographies("minimum wage in France and Germany in March") == ["France", "Germany"]


def test_each_question_gets_differently_worded_searches():
    queries = search_queries(
        "Why is CRISPR controversial?", objective="What is CRISPR and why is it controversial?"
    )
    from research.engine.guards import fingerprint_query

    assert queries[0] == "CRISPR controversial"
    assert len({fingerprint_query(q).key for q in queries}) == len(queries) >= 2


def test_a_question_about_how_many_something_can_take_searches_for_the_maximum():
    capacity = search_queries("How many tables can I join in a single query?")
    count = search_queries("How many heat pumps were installed in Solvik in 2023?")
    amount = search_queries("How much output can a child process write before it is killed?")

    assert capacity[1].split()[-1] == "maximum"
    assert amount[1].split()[-1] == "maximum"
    assert count[1].split()[-1] == "figures"


def test_the_askers_own_verbs_are_not_searched_for():
    seen = search_queries("How can I see the SQL a query builder will produce?")[0].split()
    needed = search_queries("Which compiler version do I need for the examples?")[0].split()

    assert "see" not in seen and "produce" in seen
    assert "need" not in needed and "examples" in needed


def test_decompose_never_returns_duplicate_questions():
    questions = decompose("What is CRISPR? What is CRISPR?").questions

    assert [q.text for q in questions] == ["What is CRISPR?"]


def test_a_trailing_wh_clause_is_not_taken_for_a_list_item() -> None:
    from research.llm.decompose import decompose

    texts = [
        q.text
        for q in decompose(
            "What fare changes take effect in Harwick in 2025, and on which dates?"
        ).questions
    ]
    assert not any("in on which" in text for text in texts)
    assert any("2025" in text and "dates" in text for text in texts)


def test_an_elliptical_or_pronoun_follow_up_borrows_the_first_part() -> None:
    fares = _texts(_plan("What fare changes take effect in Harwick in 2025, and on which dates?"))
    rules = _texts(_plan("Which grant rules change in 2024, and from which dates do they apply?"))
    cost = _texts(
        _plan(
            "How many weekday boardings did the Harwick Metro Line 3 extension record in 2023, "
            "and what was its final capital cost?"
        )
    )
    bloom = _texts(
        _plan(
            "How long did the 2023 bloom on Lake Tessaly last, and how high did toxin levels get?"
        )
    )

    assert fares[1] == "On which dates do fare changes take effect in Harwick in 2025?"
    assert rules[1] == "From which dates do grant rules apply?"
    assert cost[1] == "What was the Harwick Metro Line 3 extension's final capital cost?"
    assert (
        bloom[1] == "How high did toxin levels get in the case of the 2023 bloom on Lake Tessaly?"
    )


def test_the_verb_closing_a_when_question_is_not_part_of_its_subject() -> None:
    texts = _texts(
        _plan("When did the Line 3 extension in Harwick open, and how far over budget did it go?")
    )

    assert texts[1] == "How far over budget did the Line 3 extension in Harwick go?"


def test_a_question_naming_no_answer_kind_is_searched_again_by_its_subject():
    long = "How can I open a database that lives only in memory and never touches the disk?"
    short = "What is the identity map in SQLAlchemy?"

    assert search_queries(long, objective=long)[1] == "open database lives memory"
    # Too short to shorten: the second search adds a word instead, "definition" for a
    # question asking what something is.
    assert search_queries(short, objective=short)[1] == "identity map SQLAlchemy definition"
    assert search_queries("Who runs Harwick Metro?")[1] == "runs Harwick Metro report"
    assert search_queries("Why do databases grow?", objective="")[1].endswith("causes")


def test_a_shortened_search_keeps_the_names_of_the_question():
    queries = search_queries(
        "I need to parse a large log file one record at a time in Quill: how?",
        objective="I need to parse a large log file one record at a time in Quill. "
        "Which built-in module does that and how?",
    )
    # the anchored search (its last) stays inside Quill's documentation
    assert len(queries) == 3
    assert "Quill" in queries[-1].split()
    assert "built-in" in queries[-1].split()
