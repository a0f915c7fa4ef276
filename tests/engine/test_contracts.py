import json
from decimal import Decimal
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from research.engine.contracts import (
    SCHEMA_VERSION,
    Budget,
    EvidenceCandidate,
    ExtractionResult,
    FinishAction,
    Locator,
    PhaseChanged,
    ProgressEvent,
    ReadAction,
    Report,
    ResearchAction,
    ResearchDecision,
    ResearchPlan,
    SearchAction,
    SearchCandidate,
    SourcePolicy,
    Statement,
    Usage,
    WorkingState,
)
from research.engine.states import RunStatus
from tests.engine.factories import make_document, make_evidence, make_plan

# The discriminated unions stored and exchanged as JSON, validated the way pydantic validates
# them inside ResearchDecision, Evidence and the event stream.
ACTION: TypeAdapter[Any] = TypeAdapter(ResearchAction)
LOCATOR: TypeAdapter[Any] = TypeAdapter(Locator)
PROGRESS_EVENT: TypeAdapter[Any] = TypeAdapter(ProgressEvent)


def test_every_contract_is_stamped_with_the_schema_version() -> None:
    assert SCHEMA_VERSION == 1
    assert SourcePolicy().schema_version == 1
    assert make_plan().model_dump()["schema_version"] == 1
    assert WorkingState().schema_version == 1


def test_future_schema_version_is_refused() -> None:
    with pytest.raises(ValidationError, match="schema_version"):
        SourcePolicy(schema_version=2)


def test_source_policy_lower_cases_and_deduplicates_domains() -> None:
    policy = SourcePolicy(
        mode="prefer_domains", domains=["INSEE.fr", "insee.fr.", "Sub.Example.org"]
    )
    assert policy.domains == ["insee.fr", "sub.example.org"]


def test_source_policy_converts_international_domains_to_punycode() -> None:
    assert SourcePolicy(domains=["bücher.de"]).domains == ["xn--bcher-kva.de"]


@pytest.mark.parametrize(
    "bad", ["https://example.org", "example.org/path", "localhost", "exa mple.org", "999", ""]
)
def test_malformed_domain_is_refused_naming_the_field(bad: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SourcePolicy(excluded_domains=[bad])
    assert "excluded_domains" in str(caught.value)
    assert "bare domain name" in str(caught.value)


def test_domain_controls_accept_ip_addresses_with_or_without_a_port() -> None:
    policy = SourcePolicy(
        mode="only_domains",
        domains=["10.0.0.5", "[fd00::1]", "[FD00:0::1]:8443", "fd00::2", "wiki.example.org:8080"],
        excluded_domains=["10.0.0.9:8080"],
    )
    assert policy.domains == [
        "10.0.0.5",
        "[fd00::1]",
        "[fd00::1]:8443",
        "[fd00::2]",
        "wiki.example.org:8080",
    ]
    assert policy.excluded_domains == ["10.0.0.9:8080"]


@pytest.mark.parametrize(
    ("bad", "sentence"),
    [
        (
            "[fd00::1",
            "“[fd00::1” has an opening bracket but no closing one; write an IPv6 address like",
        ),
        ("fd00::1]", "“fd00::1]” has a closing bracket but no opening one"),
        ("[fd00::zz]", "“[fd00::zz]” is not a valid IPv6 address."),
        ("[10.0.0.5]", "IPv4 addresses are written without brackets, like 10.0.0.5."),
        ("[fd00::1]:x", "“[fd00::1]:x” has a port that is not a number"),
        ("[fd00::1]8443", "has a port that is not a number; write the port after a colon"),
        ("[fd00::1]:70000", "“[fd00::1]:70000” has a port outside 1–65535."),
        ("10.0.0.256", "“10.0.0.256” is not a valid IPv4 address: write four numbers from 0 to"),
        ("10.0.0", "“10.0.0” looks like an IPv4 address but does not have four numbers"),
        ("010.0.0.5", "without leading zeros"),
        ("[fe80::1%eth0]", "has a zone index"),
    ],
)
def test_malformed_address_entries_are_refused_with_a_sentence(bad: str, sentence: str) -> None:
    with pytest.raises(ValidationError) as caught:
        SourcePolicy(domains=[bad])
    assert sentence in str(caught.value)


def test_only_domains_needs_at_least_one_domain() -> None:
    with pytest.raises(ValidationError, match="domains must list at least one domain"):
        SourcePolicy(mode="only_domains")


def test_unknown_policy_mode_is_refused() -> None:
    with pytest.raises(ValidationError, match="mode"):
        SourcePolicy(mode="everything")  # type: ignore[arg-type]


def test_search_candidate_rank_starts_at_one() -> None:
    with pytest.raises(ValidationError, match="rank"):
        SearchCandidate(url="https://example.org", provider="searx", rank=0)


def test_plan_question_ids_must_be_unique() -> None:
    with pytest.raises(ValidationError, match="duplicate ids: q1"):
        make_plan(("q1", "required"), ("q1", "supporting"))


def test_plan_completion_criteria_must_name_known_questions() -> None:
    with pytest.raises(ValidationError, match="unknown questions: q9"):
        make_plan(completion_criteria={"required_question_ids": ["q9"]})


def test_plan_required_questions_combine_priority_and_criteria() -> None:
    plan = make_plan(
        ("q1", "required"),
        ("q2", "supporting"),
        ("q3", "supporting"),
        completion_criteria={"required_question_ids": ["q3"]},
    )
    assert plan.required_question_ids == ["q1", "q3"]


def test_plan_needs_at_least_one_question() -> None:
    with pytest.raises(ValidationError, match="questions"):
        ResearchPlan(objective="Anything", questions=[])


def test_plan_round_trips_through_json() -> None:
    plan = make_plan(scope={"timeframe": {"start": "2020", "end": "2024"}, "geographies": ["FR"]})
    assert ResearchPlan.model_validate_json(plan.model_dump_json()) == plan


def test_budget_reserve_cannot_exceed_the_limit() -> None:
    with pytest.raises(ValidationError, match="synthesis_model_calls cannot exceed model_calls"):
        Budget(
            iterations=1,
            searches=1,
            fetched_sources=1,
            model_calls=1,
            elapsed_seconds=60,
            bytes_per_source=10,
            bytes_per_run=100,
            input_tokens=10,
            output_tokens=10,
            synthesis_model_calls=2,
        )


def test_usage_adds_counter_by_counter() -> None:
    total = Usage(searches=1, input_tokens=10, cost=Decimal("0.01")) + Usage(
        searches=2, cached_tokens=5, cost=Decimal("0.02")
    )
    assert (total.searches, total.input_tokens, total.cached_tokens) == (3, 10, 5)
    assert total.cost == Decimal("0.03")


def test_actions_are_a_discriminated_union() -> None:
    decision = ResearchDecision.model_validate(
        {
            "actions": [
                {
                    "type": "search",
                    "query": "france gdp",
                    "question_ids": ["q1"],
                    "rationale": "start",
                },
                {
                    "type": "read",
                    "source_id": "s1",
                    "question_ids": ["q1"],
                    "rationale": "official",
                },
                {"type": "finish", "rationale": "covered"},
            ]
        }
    )
    assert [type(a) for a in decision.actions] == [SearchAction, ReadAction, FinishAction]


def test_decision_allows_at_most_three_actions() -> None:
    finish = {"type": "finish", "rationale": "done"}
    with pytest.raises(ValidationError, match="actions"):
        ResearchDecision.model_validate({"actions": [finish] * 4})


def test_action_without_rationale_is_refused() -> None:
    with pytest.raises(ValidationError, match="rationale"):
        ACTION.validate_python({"type": "search", "query": "x", "question_ids": ["q1"]})


def test_unknown_action_type_is_refused() -> None:
    with pytest.raises(ValidationError):
        ACTION.validate_json('{"type": "shell", "command": "rm -rf /", "rationale": "x"}')


def test_model_output_cannot_smuggle_extra_fields() -> None:
    with pytest.raises(ValidationError, match="url"):
        EvidenceCandidate.model_validate(
            {
                "excerpt": "x",
                "question_ids": ["q1"],
                "relevance": 0.5,
                "confidence": 0.5,
                "url": "http://169.254.169.254/",
            }
        )
    with pytest.raises(ValidationError, match="url"):
        ACTION.validate_python({"type": "finish", "rationale": "x", "url": "https://evil.example"})


def test_report_statements_cannot_carry_urls() -> None:
    with pytest.raises(ValidationError, match="url"):
        Statement.model_validate(
            {"claim_id": "c1", "kind": "finding", "text": "x", "url": "https://evil.example"}
        )


def test_evidence_candidate_excerpt_is_capped_at_1000_characters() -> None:
    with pytest.raises(ValidationError, match="excerpt"):
        EvidenceCandidate(excerpt="x" * 1001, question_ids=["q1"], relevance=1, confidence=1)


def test_evidence_candidate_scores_are_between_zero_and_one() -> None:
    with pytest.raises(ValidationError, match="relevance"):
        EvidenceCandidate(excerpt="x", question_ids=["q1"], relevance=1.5, confidence=1)


def test_extraction_result_defaults_to_no_evidence() -> None:
    assert ExtractionResult().evidence == []


def test_evidence_basis_points_are_bounded() -> None:
    evidence = make_evidence()
    with pytest.raises(ValidationError, match="relevance_bp"):
        type(evidence).model_validate({**evidence.model_dump(), "relevance_bp": 10_001})


def test_locators_are_discriminated_by_kind() -> None:
    html = LOCATOR.validate_python(
        {"kind": "html", "start": 1, "end": 5, "heading": "Intro", "snapshot_hash": "a" * 64}
    )
    pdf = LOCATOR.validate_python(
        {"kind": "pdf", "page": 3, "start": 1, "end": 5, "snapshot_hash": "a" * 64}
    )
    assert html.kind == "html" and pdf.kind == "pdf"
    with pytest.raises(ValidationError, match="end must be after start"):
        LOCATOR.validate_python({"kind": "text", "start": 5, "end": 5, "snapshot_hash": "a" * 64})


def test_source_document_requires_hex_hashes() -> None:
    with pytest.raises(ValidationError, match="content_hash"):
        make_document("text", content_hash="not-a-hash")


def test_report_claim_ids_are_unique() -> None:
    statement = {"claim_id": "c1", "kind": "caveat", "text": "x"}
    with pytest.raises(ValidationError, match="repeated: c1"):
        Report.model_validate(
            {
                "title": "T",
                "executive_summary": [statement],
                "sections": [{"id": "s", "title": "S", "statements": [statement]}],
            }
        )


def test_progress_events_parse_by_type() -> None:
    event = PROGRESS_EVENT.validate_json(
        json.dumps(
            {"type": "phase_changed", "run_id": "r1", "phase": "searching", "status": "researching"}
        )
    )
    assert isinstance(event, PhaseChanged)
    assert event.status is RunStatus.RESEARCHING
    counts = PROGRESS_EVENT.validate_python(
        {
            "type": "counts_updated",
            "run_id": "r1",
            "searches": 2,
            "fetched_sources": 1,
            "evidence_items": 4,
            "covered_questions": 1,
        }
    )
    assert counts.model_dump()["evidence_items"] == 4


def test_progress_event_of_unknown_type_is_refused() -> None:
    with pytest.raises(ValidationError):
        PROGRESS_EVENT.validate_python({"type": "chain_of_thought", "run_id": "r1"})


def test_working_state_round_trips_through_json() -> None:
    state = WorkingState(iteration=3, query_fingerprints=["france gdp @2023"])
    assert WorkingState.model_validate_json(state.model_dump_json()) == state
