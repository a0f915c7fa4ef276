"""The scripted backend used by engine and integration tests."""

import json
from pathlib import Path

import pytest

from research.engine.contracts import ResearchDecision, SearchAction
from research.engine.ports import ModelClient, ModelError
from research.llm.extractive import ExtractiveModelClient
from research.llm.scripted import ScriptedModelClient
from tests.llm.factories import extraction_request, make_brief, plan_request

INJECTED = (Path(__file__).parent / "fixtures" / "injected_page.txt").read_text()
FINISH = {"actions": [{"type": "finish", "rationale": "Done."}]}


def test_it_implements_the_model_client_port():
    assert isinstance(ScriptedModelClient(), ModelClient)


def test_queued_answers_come_back_in_order_in_any_form():
    contract = ResearchDecision(
        actions=[SearchAction(query="heat pumps", question_ids=["q1"], rationale="Start.")]
    )
    client = ScriptedModelClient().queue(
        "decider", contract, FINISH, f"<think>hmm</think>```json\n{json.dumps(FINISH)}\n```"
    )

    answers = [client.decide(make_brief()).value for _ in range(3)]

    assert answers[0] is contract
    assert answers[1].actions[0].type == "finish"
    assert answers[2].actions[0].type == "finish"


def test_a_rule_answers_once_the_queue_is_empty():
    client = ScriptedModelClient().rule(
        "decider",
        lambda brief: {
            "actions": [{"type": "finish", "rationale": f"Iteration {brief.iteration}."}]
        },
    )

    result = client.decide(make_brief(iteration=4))

    assert result.value.actions[0].rationale == "Iteration 4."
    assert result.usage.model_calls == 1
    assert result.usage.input_tokens > 0


def test_a_queued_model_error_is_raised():
    client = ScriptedModelClient().queue(
        "planner", ModelError("The endpoint is down.", retryable=True)
    )

    with pytest.raises(ModelError, match="The endpoint is down."):
        client.plan(plan_request("Heat pumps vs gas boilers"))


def test_an_invalid_scripted_answer_fails_like_a_real_model_would():
    client = ScriptedModelClient().queue("decider", {"actions": []})

    with pytest.raises(ModelError, match="scripted decider answer is invalid"):
        client.decide(make_brief())


def test_nothing_scripted_is_a_model_error_unless_there_is_a_fallback():
    with pytest.raises(ModelError, match="No scripted answer"):
        ScriptedModelClient().decide(make_brief())

    fallback = ScriptedModelClient(fallback=ExtractiveModelClient())
    assert fallback.plan(plan_request("Heat pumps vs gas boilers")).value.questions


def test_every_call_is_recorded_with_the_prompt_the_real_backend_would_send():
    client = ScriptedModelClient().queue("extractor", {"evidence": []}).queue("decider", FINISH)

    client.extract(extraction_request(INJECTED, "How much did the tunnel cost?"))
    client.decide(make_brief())

    assert [call.phase for call in client.calls] == ["extractor", "decider"]
    extractor_prompt = client.prompts_for("extractor")[0]
    envelope = extractor_prompt[extractor_prompt.index("<<<UNTRUSTED_SOURCE id=") :]
    assert "Ignore all previous instructions" in envelope
    assert "Ignore all previous instructions" not in extractor_prompt[: -len(envelope)]
    assert not any("Kessel harbour tunnel" in prompt for prompt in client.prompts_for("decider"))
