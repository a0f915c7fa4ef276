"""Cleaning and validating model answers."""

import json

import pytest

from research.engine.contracts import ExtractionResult, ResearchDecision
from research.llm.json_output import (
    InvalidOutput,
    extract_json_text,
    parse_output,
    response_json_schema,
    strip_reasoning,
)

DECISION = {"actions": [{"type": "finish", "rationale": "Done."}]}


@pytest.mark.parametrize(
    "answer",
    [
        "<think>plan first</think>{}",
        "<THINK>\nmulti\nline\n</THINK>\n{}",
        "<thinking>a</thinking>{}",
        "reasoning the server left without an opening tag</think>{}",
    ],
)
def test_reasoning_blocks_are_removed(answer):
    assert strip_reasoning(answer) == "{}"


def test_an_unclosed_reasoning_block_leaves_nothing():
    assert strip_reasoning('{"a": 1}<think>still thinking about') == '{"a": 1}'


def test_json_is_found_inside_fences_and_chatter():
    fenced = f"Sure!\n```json\n{json.dumps(DECISION)}\n```\nAnything else?"
    chatty = f"The decision is {json.dumps(DECISION)} as requested."

    assert json.loads(extract_json_text(fenced)) == DECISION
    assert json.loads(extract_json_text(chatty)) == DECISION


def test_braces_inside_strings_do_not_confuse_the_decoder():
    value = {"actions": [{"type": "finish", "rationale": "Use {curly} braces }"}]}

    assert parse_output(json.dumps(value), ResearchDecision).actions[0].rationale.endswith("}")


def test_validation_errors_name_the_field_and_the_problem():
    with pytest.raises(InvalidOutput) as raised:
        parse_output('{"actions": [{"type": "search", "question_ids": ["q1"]}]}', ResearchDecision)

    assert "actions.0.search.query" in raised.value.detail
    assert "Field required" in raised.value.detail


@pytest.mark.parametrize(
    ("answer", "message"),
    [("", "empty"), ("no json here", "no JSON object"), ('{"actions": [', "not valid JSON")],
)
def test_unusable_answers_say_why(answer, message):
    with pytest.raises(InvalidOutput, match=message):
        parse_output(answer, ResearchDecision)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            '{"actions": [{"type": "search", "query": "heat',
            "The answer is not valid JSON: Unterminated string starting at line 1 column 42.",
        ),
        ('{"actions": ]', "The answer is not valid JSON: Expecting value at line 1 column 13."),
    ],
)
def test_a_json_error_names_its_place_once(answer, message):
    with pytest.raises(InvalidOutput) as caught:
        parse_output(answer, ResearchDecision)
    assert caught.value.detail == message
    assert " at at " not in caught.value.detail


def test_response_schema_is_in_the_subset_servers_accept():
    schema = response_json_schema(ResearchDecision)
    text = json.dumps(schema)

    assert "discriminator" not in text
    assert "schema_version" not in text
    for name in ("SearchAction", "ReadAction", "FinishAction"):
        assert "type" in schema["$defs"][name]["required"]


def test_response_schema_keeps_the_excerpt_limit():
    schema = response_json_schema(ExtractionResult)

    assert schema["$defs"]["EvidenceCandidate"]["properties"]["excerpt"]["maxLength"] == 1000
