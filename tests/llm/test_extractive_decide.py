"""The extractive decider: search what lacks evidence, read the best unread results."""

from research.engine.contracts import QuestionCoverage, Usage
from research.engine.guards import fingerprint_query
from research.llm.extractive import ExtractiveModelClient
from tests.llm.factories import candidate, make_brief, make_plan


def _decide(brief):
    return ExtractiveModelClient().decide(brief).value.actions


def _covered(question_id: str, *source_ids: str, clusters: int = 2) -> QuestionCoverage:
    return QuestionCoverage(
        question_id=question_id,
        evidence_count=len(source_ids) or 1,
        source_ids=list(source_ids),
        clusters=[f"domain:site{n}.org" for n in range(clusters)],
    )


def test_the_first_decision_searches_for_uncovered_questions():
    actions = _decide(make_brief())

    assert [a.type for a in actions] == ["search", "search"]
    assert [a.question_ids for a in actions] == [["q1"], ["q2"]]
    assert actions[0].query == "heat pumps cost run"
    assert all(a.rationale for a in actions)


def test_the_best_matching_unread_result_is_read_first():
    brief = make_brief(
        candidates=[
            candidate("s1", "Gardening in spring", snippet="Plant bulbs early."),
            candidate("s2", "What a heat pump costs to run", domain="energy.example"),
            candidate("s3", "Boiler servicing offers", domain="boilers.example"),
        ],
        recent_queries=["heat pumps cost run", "gas boilers cost run"],
    )

    actions = _decide(brief)

    reads = [a for a in actions if a.type == "read"]
    assert reads[0].source_id == "s2"
    assert "q1" in reads[0].question_ids
    assert "s1" not in {a.source_id for a in reads}


def test_searches_already_made_are_not_proposed_again():
    plan = make_plan()
    recent = ["heat pumps cost run", "run cost of heat pumps", "gas boilers cost run"]

    actions = _decide(make_brief(plan, recent_queries=recent))

    tried = {fingerprint_query(query).key for query in recent}
    queries = [a.query for a in actions if a.type == "search"]
    assert queries
    assert all(fingerprint_query(query).key not in tried for query in queries)


def test_a_second_source_is_sought_from_a_new_site():
    plan = make_plan()
    brief = make_brief(
        plan,
        coverage=[_covered("q1", "s1", clusters=1), _covered("q2", "s9")],
        candidates=[
            candidate("s1", "Heat pump costs", domain="energy.example", status="fetched"),
            candidate("s2", "Heat pump running costs explained", domain="energy.example"),
            candidate("s3", "What heat pumps cost to run", domain="consumer.example"),
        ],
    )

    actions = _decide(brief)

    assert actions[0].type == "read" and actions[0].source_id == "s3"


def test_corroboration_accepts_a_weaker_match_than_a_first_read():
    plan = make_plan()
    weak = candidate(
        "s4",
        "Field results for installed units",
        domain="journal.example",
        snippet="Measured heat pump performance in homes over two winters.",
    )
    uncovered = make_brief(plan, coverage=[_covered("q2", "s9")], candidates=[weak])
    needs_second_site = make_brief(
        plan,
        coverage=[_covered("q1", "s1", clusters=1), _covered("q2", "s9")],
        candidates=[
            candidate("s1", "Heat pump costs", domain="energy.example", status="fetched"),
            weak,
        ],
    )

    assert not any(a.type == "read" for a in _decide(uncovered))
    assert any(a.type == "read" and a.source_id == "s4" for a in _decide(needs_second_site))


def test_finishes_when_every_question_has_what_the_finish_gate_needs():
    brief = make_brief(coverage=[_covered("q1", "s1", "s2"), _covered("q2", "s3", "s4")])

    actions = _decide(brief)

    assert [a.type for a in actions] == ["finish"]


def test_finishes_when_nothing_untried_remains():
    plan = make_plan("What do heat pumps cost to run?")
    from research.llm.search_queries import search_queries

    recent = search_queries(plan.questions[0].text, objective=plan.objective)

    actions = _decide(make_brief(plan, recent_queries=recent))

    assert [a.type for a in actions] == ["finish"]
    assert "q1" in actions[0].rationale


def test_the_remaining_budget_is_respected():
    no_searches = Usage(iterations=3, searches=0, fetched_sources=1, model_calls=10)
    brief = make_brief(
        remaining=no_searches,
        candidates=[
            candidate("s1", "What heat pumps cost to run", domain="a.example"),
            candidate("s2", "What gas boilers cost to run", domain="b.example"),
        ],
    )

    actions = _decide(brief)

    assert [a.type for a in actions] == ["read"]


def test_supporting_questions_come_after_required_ones_and_get_one_search():
    plan = make_plan("What do heat pumps cost to run?", "What is the history of heat pumps?")
    plan.questions[1].priority = "supporting"

    actions = _decide(make_brief(plan))

    assert [a.question_ids for a in actions] == [["q1"], ["q2"]]
    later = _decide(
        make_brief(plan, coverage=[_covered("q1", "s1", "s2")], recent_queries=[actions[1].query])
    )
    assert [a.type for a in later] == ["finish"]


def test_with_searches_used_up_the_best_weak_match_is_read_rather_than_nothing():
    question = "On what date did toxin levels in Lake Tessaly peak in 2023?"
    plan = make_plan(question, objective=question)
    from research.llm.search_queries import search_queries

    tried = search_queries(question, objective=question)
    candidates = [
        candidate("s1", "Lake Tessaly bloom season 2023: monitoring summary", domain="water.test"),
        candidate("s2", "Line 3 extension opens", domain="transit.test"),
    ]

    fresh = _decide(make_brief(plan, candidates=candidates))
    exhausted = _decide(make_brief(plan, candidates=candidates, recent_queries=tried))

    # While searches remain, a title that names nothing the question asks is not read...
    assert "read" not in [a.type for a in fresh]
    # ...once they are used up, the best weak match is, and the unrelated page is not.
    assert [(a.type, a.source_id) for a in exhausted] == [("read", "s1")]


def test_a_searched_question_reads_its_best_weak_match_and_searches_again():
    # A reference page's title is short: "Widget" for a question about widget.spin().
    plan = make_plan("What is the difference between widget.spin() and widget.halt() in Toolkit?")
    brief = make_brief(
        plan,
        candidates=[
            candidate("s1", "Widget | Toolkit Documentation", domain="toolkit.example"),
            candidate("s2", "Gardening in spring", domain="garden.example"),
        ],
    )
    queries = [a.query for a in _decide(make_brief(plan)) if a.type == "search"]
    brief = brief.model_copy(update={"recent_queries": queries[:1]})

    actions = _decide(brief)

    assert [a.source_id for a in actions if a.type == "read"] == ["s1"]
    assert any(a.type == "search" for a in actions)


def test_an_unsearched_question_does_not_read_a_weak_match():
    plan = make_plan("What is the difference between widget.spin() and widget.halt() in Toolkit?")
    brief = make_brief(
        plan, candidates=[candidate("s1", "Widget | Toolkit Documentation")]
    )

    assert all(a.type == "search" for a in _decide(brief))


def test_a_question_covered_by_one_page_reads_a_second_strong_match_but_never_searches():
    plan = make_plan("What do heat pumps cost to run?")
    primary = QuestionCoverage(
        question_id="q1", evidence_count=2, source_ids=["s1"], clusters=["domain:energy.example"],
        has_primary=True,
    )
    strong = candidate("s2", "What heat pumps cost to run", domain="energy.example")
    weak = candidate("s3", "Gardening in spring", domain="garden.example")

    actions = _decide(make_brief(plan, coverage=[primary], candidates=[strong, weak]))
    assert [(a.type, getattr(a, "source_id", None)) for a in actions] == [("read", "s2")]

    finished = _decide(make_brief(plan, coverage=[primary], candidates=[weak]))
    assert [a.type for a in finished] == ["finish"]


def test_the_address_path_names_a_reference_page_whose_title_is_short():
    from research.engine.contracts import CandidateSummary

    plan = make_plan("What does the glossary say an identity map is?")
    short = CandidateSummary(
        source_id="s1", status="candidate", title="Reference", domain="docs.example",
        path="/en/14/identity-map.html",
    )
    other = candidate("s2", "Reference", domain="docs.example")
    brief = make_brief(plan, candidates=[other, short], recent_queries=["glossary identity map"])

    reads = [a for a in _decide(brief) if a.type == "read"]
    assert reads and reads[0].source_id == "s1"


def _primary(question_id: str, *source_ids: str) -> QuestionCoverage:
    return QuestionCoverage(
        question_id=question_id, evidence_count=len(source_ids), source_ids=list(source_ids),
        clusters=["domain:energy.example"], has_primary=True,
    )


def test_rank_fusion_reads_what_the_searches_rank_high_before_a_title_match():
    # Both titles match well; the page two searches placed first beats the one a search
    # placed ninth, though discovery listed the ninth first.
    plan = make_plan("What do heat pumps cost to run?")
    late = candidate("s1", "What heat pumps cost to run", search_ranks=[9])
    top = candidate("s2", "Heat pump running costs", search_ranks=[1, 1])
    brief = make_brief(plan, candidates=[late, top], recent_queries=["heat pumps cost run"])

    reads = [a for a in _decide(brief) if a.type == "read"]
    assert [a.source_id for a in reads][:2] == ["s2", "s1"]


def test_a_page_two_searches_found_does_not_outrank_the_own_search_top_result():
    # The searches are made for different questions: a weakly matching page the other
    # question's search placed second and this one's fifth is not read before the page
    # this question's search placed first, whose title matches.
    plan = make_plan("What do heat pumps cost to run?")
    general = candidate("s1", "Heat pump guide", search_ranks=[5, 2])
    top = candidate("s2", "What heat pumps cost to run", search_ranks=[1])
    brief = make_brief(plan, candidates=[general, top], recent_queries=["heat pumps cost run"])

    reads = [a for a in _decide(brief) if a.type == "read"]
    assert reads[0].source_id == "s2"


def test_reciprocal_rank_fusion_sums_over_searches():
    from research.engine.guards import RRF_K, reciprocal_rank

    assert reciprocal_rank([1]) == 1 / (RRF_K + 1)
    assert reciprocal_rank([2, 2]) > reciprocal_rank([1])
    assert reciprocal_rank([]) == 0.0


def test_a_top_ranked_result_is_read_though_its_title_matches_weakly():
    plan = make_plan("What do heat pumps cost to run?")
    weak_title = candidate("s1", "Heat pump guide", domain="energy.example", search_ranks=[2])
    unranked = candidate("s2", "Heat pump guide", domain="other.example", search_ranks=[12])

    actions = _decide(make_brief(plan, candidates=[unranked, weak_title]))
    reads = [a for a in actions if a.type == "read"]
    assert [a.source_id for a in reads] == ["s1"]


def test_only_the_engine_top_places_are_read_on_its_word():
    """A weak title is read on the engine's word in its fourth place, not in its fifth."""
    plan = make_plan("What do heat pumps cost to run?")
    for place, read in ((4, ["s1"]), (5, [])):
        weak_title = candidate("s1", "Heat pump guide", domain="energy.example", search_ranks=[place])
        actions = _decide(make_brief(plan, candidates=[weak_title]))
        assert [a.source_id for a in actions if a.type == "read"] == read


def test_two_covered_questions_keep_reading_until_the_breadth_share_is_used():
    """Each question rests on three pages, yet six reads of ten are less than the share of
    the budget reading for breadth may use (seven): the run reads on instead of finishing."""
    plan = make_plan("What do heat pumps cost to run?", "How long do heat pumps last?")
    read = [candidate(f"s{n}", "Heat pump costs", status="fetched") for n in range(1, 7)]
    more = [
        candidate(f"s{n}", "What heat pumps cost to run", domain=f"site{n}.example")
        for n in (7, 8)
    ]
    coverage = [_primary("q1", "s1", "s2", "s3"), _primary("q2", "s4", "s5", "s6")]
    six = make_brief(
        plan, coverage=coverage, candidates=read + more,
        remaining=Usage(iterations=5, searches=6, fetched_sources=4, model_calls=20),
    )
    assert {a.type for a in _decide(six)} == {"read"}
    # Seven spent (one page without evidence): the share is used and the run finishes.
    spent = [*read, candidate("s9", "Heat pump costs", status="fetched")]
    seven = make_brief(
        plan, coverage=coverage, candidates=spent + more,
        remaining=Usage(iterations=5, searches=6, fetched_sources=3, model_calls=20),
    )
    assert [a.type for a in _decide(seven)] == ["finish"]


def test_a_covered_question_keeps_reading_until_the_breadth_share_is_used():
    plan = make_plan("What do heat pumps cost to run?")
    read = [candidate(f"s{n}", "Heat pump costs", status="fetched") for n in (1, 2)]
    more = [
        candidate(f"s{n}", "What heat pumps cost to run", domain=f"site{n}.example")
        for n in (3, 4, 5, 6)
    ]
    quick = Usage(iterations=5, searches=6, fetched_sources=8, model_calls=20)

    actions = _decide(
        make_brief(plan, coverage=[_primary("q1", "s1", "s2")], candidates=read + more,
                   remaining=quick)
    )
    assert [a.type for a in actions] == ["read", "read", "read"]

    # Five pages of a budget of ten are not yet the share reading for breadth may use
    # (seven); seven are.
    five = [candidate(f"s{n}", "Heat pump costs", status="fetched") for n in range(1, 6)]
    short = make_brief(
        plan, coverage=[_primary("q1", *[c.source_id for c in five])], candidates=five + more,
        remaining=Usage(iterations=5, searches=6, fetched_sources=5, model_calls=20),
    )
    assert {a.type for a in _decide(short)} == {"read"}
    done = [candidate(f"s{n}", "Heat pump costs", status="fetched") for n in range(1, 8)]
    enough = make_brief(
        plan, coverage=[_primary("q1", *[c.source_id for c in done])], candidates=done + more,
        remaining=Usage(iterations=5, searches=6, fetched_sources=3, model_calls=20),
    )
    assert [a.type for a in _decide(enough)] == ["finish"]


def test_reading_for_breadth_stops_at_its_share_of_the_fetch_budget():
    plan = make_plan("What do heat pumps cost to run?")
    # Seven fetches spent, one of them on a page with evidence: BREADTH_SHARE of ten.
    spent = [candidate(f"s{n}", "Heat pump costs", status="fetched") for n in range(1, 8)]
    more = [candidate("s9", "What heat pumps cost to run", domain="site9.example")]
    brief = make_brief(
        plan, coverage=[_primary("q1", "s1")], candidates=spent + more,
        remaining=Usage(iterations=5, searches=6, fetched_sources=3, model_calls=20),
    )
    assert [a.type for a in _decide(brief)] == ["finish"]
    # Six spent leave room for one more read.
    fewer = make_brief(
        plan, coverage=[_primary("q1", "s1")], candidates=spent[:6] + more,
        remaining=Usage(iterations=5, searches=6, fetched_sources=4, model_calls=20),
    )
    assert [a.type for a in _decide(fewer)] == ["read"]


def test_a_covered_question_finishes_when_no_candidates_remain():
    plan = make_plan("What do heat pumps cost to run?")
    read = [candidate("s1", "Heat pump costs", status="fetched")]

    actions = _decide(make_brief(plan, coverage=[_primary("q1", "s1")], candidates=read))

    assert [a.type for a in actions] == ["finish"]
    assert actions[0].rationale == "Every question has the evidence the plan asks for."


def test_reading_for_breadth_never_exceeds_the_remaining_fetches():
    plan = make_plan("What do heat pumps cost to run?")
    read = [candidate("s1", "Heat pump costs", status="fetched")]
    more = [
        candidate(f"s{n}", "What heat pumps cost to run", domain=f"site{n}.example")
        for n in range(2, 8)
    ]
    for fetches in (0, 1, 2):
        brief = make_brief(
            plan, coverage=[_primary("q1", "s1")], candidates=read + more,
            remaining=Usage(iterations=5, searches=6, fetched_sources=fetches, model_calls=20),
        )
        actions = _decide(brief)
        reads = [a for a in actions if a.type == "read"]
        assert len(reads) <= fetches
        assert all(a.type != "search" for a in actions)
