"""Typed step payloads: what a writer sets is exactly what is stored, and reads back typed."""

import pytest
from pydantic import ValidationError

from research.engine.contracts import ReadAction, SearchAction
from research.engine.steps import StepInput, StepPayload, StepSpec


def test_only_the_fields_a_writer_sets_are_stored() -> None:
    payload = StepPayload(query="heat pumps", question_ids=["q1"], fingerprint="f", follow_up=None)
    assert payload.stored() == {
        "query": "heat pumps",
        "question_ids": ["q1"],
        "fingerprint": "f",
        "follow_up": None,
    }
    assert StepPayload(refinement=None).stored() == {"refinement": None}
    assert StepPayload().stored() == {}


def test_a_refused_action_is_kept_whole_and_named_by_its_target() -> None:
    action = SearchAction(query="heat pumps", question_ids=["q1"], rationale="Because.")
    stored = StepPayload(action=action, refused=True).stored()
    assert stored == {"action": action.model_dump(), "refused": True}
    read = StepPayload.read(stored)
    assert read.refused and read.target_query == "heat pumps" and read.target_source_id == ""
    read_action = ReadAction(source_id="s1", question_ids=["q1"], rationale="Because.")
    assert StepPayload(action=read_action, refused=True).target_source_id == "s1"


def test_a_decision_keeps_its_steps_as_written() -> None:
    spec = StepSpec(
        kind="read",
        dedupe_key="read:1",
        rationale="Why",
        payload=StepPayload(source_id="s1", question_ids=["q1"], url="https://a.example/"),
    )
    stored = StepPayload(finish=False, steps=[spec]).stored()
    assert stored == {
        "finish": False,
        "steps": [
            {
                "kind": "read",
                "dedupe_key": "read:1",
                "rationale": "Why",
                "payload": {"source_id": "s1", "question_ids": ["q1"], "url": "https://a.example/"},
            }
        ],
    }
    assert StepPayload.read(stored).steps == [spec]
    assert StepPayload.read(stored).stored() == stored


def test_a_stored_input_reads_back_with_defaults() -> None:
    assert StepInput.read(None) == StepInput()
    stored = StepInput(rationale="Why", payload=StepPayload(url="https://a.example/")).stored()
    assert stored == {"rationale": "Why", "payload": {"url": "https://a.example/"}}
    read = StepInput.read({"payload": {"query": "q"}})
    assert read.rationale == "" and read.payload.query == "q" and not read.payload.refused


def test_an_unknown_payload_field_is_refused() -> None:
    with pytest.raises(ValidationError):
        StepPayload.read({"querry": "typo"})
