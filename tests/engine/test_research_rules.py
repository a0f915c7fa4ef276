"""Query fingerprints, action validation, fetch scheduling, coverage, the finish gate and
diminishing returns."""

import pytest

from research.engine.contracts import (
    ContradictionCandidate,
    ContradictionPosition,
    FinishAction,
    QuestionCoverage,
    ReadAction,
    SearchAction,
    SourcePolicy,
    WorkingState,
)
from research.engine.guards import (
    action_dedupe_key,
    advance_iteration,
    compute_coverage,
    diminishing_returns,
    evaluate_finish_gate,
    fingerprint_query,
    plan_fetch_waves,
    validate_actions,
)
from research.engine.ledger import assign_independence_clusters
from tests.engine.factories import make_evidence, make_plan, make_source

# Fingerprints ---------------------------------------------------------------------------------


def test_reformulations_of_one_query_share_a_fingerprint() -> None:
    keys = {
        fingerprint_query(query).key
        for query in ["GDP of France 2023", "france gdp, 2023", "2023 France GDP site:insee.fr"]
    }
    assert keys == {"france gdp @2023"}


def test_site_restriction_is_kept_as_scope() -> None:
    fingerprint = fingerprint_query("2023 France GDP site:insee.fr filetype:pdf")
    assert fingerprint.domains == ("insee.fr",)
    assert fingerprint.filetypes == ("pdf",)
    assert fingerprint.scoped_key == "france gdp @2023 site:insee.fr filetype:pdf"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("What is the unemployment rate in Spain?", "spain unemployment rates"),
        ("Électricité prix France", "electricite prix france"),
        ("“renewable energy” share", "renewable-energy share"),
        ("inflation in the eurozone latest", "eurozone inflation"),
    ],
)
def test_case_accents_punctuation_stop_words_and_plurals_are_folded(
    first: str, second: str
) -> None:
    assert fingerprint_query(first).key == fingerprint_query(second).key


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("france gdp 2023", "france gdp 2022"),
        ("france gdp", "germany gdp"),
        ("france gdp growth", "france gdp"),
    ],
)
def test_different_questions_have_different_fingerprints(first: str, second: str) -> None:
    assert fingerprint_query(first).key != fingerprint_query(second).key


def test_date_ranges_and_iso_dates_are_date_scope() -> None:
    assert fingerprint_query("wages 2019-2023").dates == ("2019..2023",)
    assert fingerprint_query("wages 2019–2023").dates == ("2019..2023",)
    assert fingerprint_query("rate decision 2024-03-20 after:2024").dates == (
        "2024-03-20",
        "after:2024",
    )


def test_queries_in_other_scripts_keep_their_words() -> None:
    assert fingerprint_query("ВВП Франции 2023").key == "ввп франции @2023"
    assert not fingerprint_query("法国 国内生产总值").empty


def test_excluded_site_is_kept_as_negative_scope() -> None:
    assert fingerprint_query("france gdp -site:spam.example").domains == ("-spam.example",)


def test_query_of_only_stop_words_is_empty() -> None:
    assert fingerprint_query("what is the latest?").empty


# Action validation -----------------------------------------------------------------------------


def _validate(actions: list, **overrides: object) -> list:
    arguments: dict[str, object] = {
        "run_id": "run-1",
        "iteration": 1,
        "plan": make_plan(),
        "policy": SourcePolicy(),
        "sources": {},
        "seen_fingerprints": set(),
    }
    arguments.update(overrides)
    return validate_actions(actions, **arguments)  # type: ignore[arg-type]


def search(query: str, *question_ids: str) -> SearchAction:
    return SearchAction(query=query, question_ids=list(question_ids or ["q1"]), rationale="why")


def read(source_id: str, *question_ids: str) -> ReadAction:
    return ReadAction(
        source_id=source_id, question_ids=list(question_ids or ["q1"]), rationale="why"
    )


def test_new_search_is_accepted_with_its_fingerprint() -> None:
    (verdict,) = _validate([search("France GDP 2023")])
    assert verdict.accepted
    assert verdict.fingerprint is not None and verdict.fingerprint.key == "france gdp @2023"


def test_equivalent_search_is_refused() -> None:
    (verdict,) = _validate(
        [search("2023 France GDP site:insee.fr")], seen_fingerprints={"france gdp @2023"}
    )
    assert not verdict.accepted
    assert verdict.reason == "An equivalent search (france gdp @2023) was already made."


def test_equivalent_searches_in_one_batch_run_once() -> None:
    verdicts = _validate([search("GDP of France 2023"), search("france gdp, 2023")])
    assert [v.accepted for v in verdicts] == [True, False]


def test_action_for_unknown_question_is_refused() -> None:
    (verdict,) = _validate([search("france gdp", "q9")])
    assert verdict.reason == "The plan has no question q9."


def test_reading_an_unknown_or_foreign_source_is_refused() -> None:
    (verdict,) = _validate([read("s-other-run")])
    assert verdict.reason == "There is no source s-other-run in this run."


def test_reading_a_candidate_source_is_accepted_once() -> None:
    sources = {"s1": make_source("s1", "https://example.org/a", status="candidate")}
    verdicts = _validate([read("s1"), read("s1")], sources=sources)
    assert [v.accepted for v in verdicts] == [True, False]


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("fetched", "Source s1 has already been read."),
        ("duplicate", "Source s1 duplicates s0."),
        ("blocked", "Source s1 is blocked: The site refused automated access."),
    ],
)
def test_reading_a_source_that_is_not_a_candidate_is_refused(status: str, reason: str) -> None:
    source = make_source(
        "s1",
        "https://example.org/a",
        status=status,
        duplicate_of="s0" if status == "duplicate" else None,
        status_reason="The site refused automated access." if status == "blocked" else "",
    )
    (verdict,) = _validate([read("s1")], sources={"s1": source})
    assert verdict.reason == reason


def test_reading_a_source_outside_the_policy_is_refused() -> None:
    sources = {"s1": make_source("s1", "https://forum.example.org/t", status="candidate")}
    policy = SourcePolicy(excluded_domains=["forum.example.org"])
    (verdict,) = _validate([read("s1")], sources=sources, policy=policy)
    assert not verdict.accepted
    assert "excluded" in verdict.reason


def test_finish_is_accepted_for_the_gate_to_decide() -> None:
    (verdict,) = _validate([FinishAction(rationale="done")])
    assert verdict.accepted


def test_dedupe_keys_are_deterministic_per_logical_action() -> None:
    first = action_dedupe_key("run-1", search("GDP of France 2023"), iteration=1)
    again = action_dedupe_key("run-1", search("france gdp, 2023"), iteration=4)
    other_run = action_dedupe_key("run-2", search("GDP of France 2023"), iteration=1)
    assert first == again
    assert first != other_run
    assert first.startswith("search:")
    finish_1 = action_dedupe_key("run-1", FinishAction(rationale="x"), iteration=1)
    finish_2 = action_dedupe_key("run-1", FinishAction(rationale="x"), iteration=2)
    assert finish_1 != finish_2


# Fetch scheduling -----------------------------------------------------------------------------


def test_fetch_waves_hold_three_fetches_and_one_per_domain() -> None:
    urls = [
        "https://a.example.org/1",
        "https://b.example.org/2",
        "https://other.net/3",
        "https://third.com/4",
        "https://fourth.com/5",
    ]
    waves = plan_fetch_waves(urls, lambda url: url)
    assert waves == [
        ["https://a.example.org/1", "https://other.net/3", "https://third.com/4"],
        ["https://b.example.org/2", "https://fourth.com/5"],
    ]


# Coverage and the finish gate -------------------------------------------------------------------


def test_coverage_counts_only_relevant_evidence() -> None:
    sources = {"s1": make_source("s1", "https://example.org/a")}
    evidence = [
        make_evidence("relevant", question_ids=["q1"]),
        make_evidence("marginal", question_ids=["q2"], relevance_bp=2000),
    ]
    coverage = compute_coverage(make_plan(), evidence, sources)
    assert coverage["q1"].evidence_count == 1
    assert coverage["q1"].clusters == ["domain:example.org"]
    assert not coverage["q2"].covered


def _coverage(**entries: QuestionCoverage) -> dict[str, QuestionCoverage]:
    return entries


def test_finish_gate_passes_with_a_primary_source_per_required_question() -> None:
    plan = make_plan(("q1", "required"), ("q2", "supporting"))
    coverage = _coverage(q1=QuestionCoverage(question_id="q1", evidence_count=1, has_primary=True))
    result = evaluate_finish_gate(plan, coverage)
    assert result.passed and result.unmet == ()


def test_finish_gate_passes_with_two_independent_clusters() -> None:
    plan = make_plan(("q1", "required"))
    coverage = _coverage(
        q1=QuestionCoverage(
            question_id="q1", evidence_count=2, clusters=["domain:a.org", "domain:b.org"]
        )
    )
    assert evaluate_finish_gate(plan, coverage).passed


def test_finish_gate_lists_uncovered_required_questions() -> None:
    result = evaluate_finish_gate(make_plan(), {})
    assert not result.passed
    assert result.unmet == (
        "Question q1 has no verified evidence yet.",
        "Question q2 has no verified evidence yet.",
    )


def test_finish_gate_needs_corroboration_for_a_single_secondary_source() -> None:
    plan = make_plan(("q1", "required"))
    coverage = _coverage(
        q1=QuestionCoverage(question_id="q1", evidence_count=3, clusters=["domain:a.org"])
    )
    (reason,) = evaluate_finish_gate(plan, coverage).unmet
    assert "rests on one independent source" in reason


def test_finish_gate_honours_requires_primary() -> None:
    plan = make_plan(questions=[{"id": "q1", "text": "Official figure?", "requires_primary": True}])
    coverage = _coverage(
        q1=QuestionCoverage(
            question_id="q1", evidence_count=2, clusters=["domain:a.org", "domain:b.org"]
        )
    )
    assert evaluate_finish_gate(plan, coverage).unmet == (
        "Question q1 needs a primary or official source.",
    )


def test_mirrored_pages_never_raise_the_independent_source_count() -> None:
    text = "France's GDP was 2.8 trillion euros in 2023."
    sources = {
        "s1": make_source("s1", "https://news.example.org/gdp", content=text),
        "s2": make_source("s2", "https://mirror.example.net/copy", content=text),
        "s3": make_source("s3", "https://copycat.example.com/gdp", content=text + " "),
    }
    clusters = assign_independence_clusters(sources.values())
    sources = {
        sid: record.model_copy(
            update={
                "quality": record.quality.model_copy(update={"independence_cluster": clusters[sid]})
            }
        )
        for sid, record in sources.items()
    }
    evidence = [make_evidence(text, source_id=sid) for sid in sources]
    plan = make_plan(("q1", "required"))
    coverage = compute_coverage(plan, evidence, sources)
    assert len(coverage["q1"].clusters) == 1
    assert not evaluate_finish_gate(plan, coverage).passed


def _contradiction(key: str, question_ids: list[str]) -> ContradictionCandidate:
    position = ContradictionPosition(value="1", stance="supports", evidence_ids=["e1"], scopes=[])
    other = ContradictionPosition(value="2", stance="supports", evidence_ids=["e2"], scopes=[])
    return ContradictionCandidate(
        key=key,
        claim_key=key.removeprefix("claim:"),
        positions=[position, other],
        evidence_ids=["e1", "e2"],
        question_ids=question_ids,
    )


def test_central_contradiction_must_be_followed_up_once() -> None:
    plan = make_plan(("q1", "required"), ("q2", "supporting"))
    coverage = _coverage(q1=QuestionCoverage(question_id="q1", evidence_count=1, has_primary=True))
    central = _contradiction("claim:gdp", ["q1"])
    side_issue = _contradiction("claim:trivia", ["q2"])
    result = evaluate_finish_gate(plan, coverage, [central, side_issue])
    assert result.unmet == ("The conflicting evidence about 'gdp' has not been followed up yet.",)
    assert evaluate_finish_gate(plan, coverage, [central], followed_up={"claim:gdp"}).passed


def test_plan_may_require_contradictions_to_be_resolved() -> None:
    plan = make_plan(
        ("q1", "required"), completion_criteria={"unresolved_contradictions_allowed": False}
    )
    coverage = _coverage(q1=QuestionCoverage(question_id="q1", evidence_count=1, has_primary=True))
    central = _contradiction("claim:gdp", ["q1"])
    result = evaluate_finish_gate(plan, coverage, [central], followed_up={"claim:gdp"})
    assert result.unmet == ("The conflicting evidence about 'gdp' is not resolved.",)
    assert evaluate_finish_gate(
        plan, coverage, [central], followed_up={"claim:gdp"}, resolved={"claim:gdp"}
    ).passed


# Diminishing returns -------------------------------------------------------------------------


def test_three_iterations_without_gain_mean_diminishing_returns() -> None:
    state = WorkingState()
    for _ in range(3):
        assert not diminishing_returns(state)
        state, gain = advance_iteration(state, coverage={})
        assert not gain.any
    assert state.iteration == 3
    assert diminishing_returns(state)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"new_evidence": [make_evidence()]},
        {"source_classes": ["official"]},
        {"coverage": {"q1": QuestionCoverage(question_id="q1", evidence_count=1)}},
        {"resolved_contradictions": ["claim:gdp"]},
    ],
)
def test_any_kind_of_gain_resets_the_streak(kwargs: dict) -> None:
    state = WorkingState(zero_gain_streak=2)
    arguments = {"coverage": {}, **kwargs}
    state, gain = advance_iteration(state, **arguments)
    assert gain.any
    assert state.zero_gain_streak == 0


def test_irrelevant_evidence_and_known_source_classes_are_no_gain() -> None:
    state = WorkingState(source_classes_seen=["official"], zero_gain_streak=1)
    state, gain = advance_iteration(
        state,
        coverage={},
        new_evidence=[make_evidence(relevance_bp=1000)],
        source_classes=["official"],
    )
    assert not gain.any
    assert state.zero_gain_streak == 2


def test_new_independent_cluster_counts_as_coverage_gain() -> None:
    before = {"q1": QuestionCoverage(question_id="q1", evidence_count=1, clusters=["domain:a.org"])}
    after = {
        "q1": QuestionCoverage(
            question_id="q1", evidence_count=2, clusters=["domain:a.org", "domain:b.org"]
        )
    }
    state, gain = advance_iteration(WorkingState(coverage=before), coverage=after)
    assert gain.coverage_gain == 1
    assert state.coverage["q1"].clusters == ["domain:a.org", "domain:b.org"]
