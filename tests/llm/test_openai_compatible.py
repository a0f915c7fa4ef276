"""The OpenAI-compatible backend, end to end against a real local HTTP server."""

import json
import threading
import time
from decimal import Decimal
from pathlib import Path

import pytest

from research.engine.contracts import Report, ReportSection, Statement
from research.engine.ports import ModelError
from research.llm.config import LLMConfig, LLMConfigError
from research.llm.openai_compatible import (
    OpenAICompatibleClient,
    remembered_output_mode,
)
from tests.llm.factories import (
    extraction_request,
    make_brief,
    make_evidence,
    make_plan,
    plan_request,
    synthesis_request,
)
from tests.llm.fake_openai import Reply, completion, error, json_completion

PLAN = {
    "objective": "How do heat pumps compare with gas boilers?",
    "questions": [
        {"id": "q1", "text": "What do heat pumps cost to run?"},
        {"id": "q2", "text": "What do gas boilers cost to run?"},
    ],
}
DECISION = {
    "actions": [
        {
            "type": "search",
            "query": "heat pump running costs",
            "question_ids": ["q1"],
            "rationale": "q1 has no evidence yet.",
        }
    ]
}


def test_structured_output_is_requested_and_validated(fake_openai, make_client):
    fake_openai.queue(json_completion(PLAN))

    result = make_client().plan(plan_request("How do heat pumps compare with gas boilers?"))

    assert [q.id for q in result.value.questions] == ["q1", "q2"]
    sent = fake_openai.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.payload["model"] == "fake-model"
    assert sent.response_format == "json_schema"
    schema = sent.payload["response_format"]["json_schema"]
    assert schema["name"] == "ResearchPlan"
    assert "questions" in schema["schema"]["properties"]
    assert "tools" not in sent.payload
    assert sent.headers["authorization"] == "Bearer test-key"


def test_usage_records_tokens_cached_tokens_and_reported_cost(fake_openai, make_client):
    fake_openai.queue(
        json_completion(
            DECISION, prompt_tokens=1200, completion_tokens=80, cached_tokens=1024, cost=0.00042
        )
    )

    result = make_client().decide(make_brief())

    assert result.usage.model_calls == 1
    assert result.usage.input_tokens == 1200
    assert result.usage.output_tokens == 80
    assert result.usage.cached_tokens == 1024
    assert result.usage.cost == Decimal("0.00042")


def test_usage_is_estimated_when_the_server_reports_none(fake_openai, make_client):
    fake_openai.queue(json_completion(DECISION, prompt_tokens=None, completion_tokens=None))

    result = make_client().decide(make_brief())

    assert result.usage.model_calls == 1
    assert result.usage.input_tokens > 100
    assert result.usage.output_tokens > 10
    assert result.usage.cost == 0


def test_falls_back_to_json_mode_when_json_schema_is_refused_and_remembers(
    fake_openai, make_client
):
    fake_openai.queue(
        error(400, "response_format.type 'json_schema' is not supported by this server"),
        json_completion(PLAN),
        json_completion(PLAN),
    )
    client = make_client()

    client.plan(plan_request("Heat pumps vs gas boilers"))
    client.plan(plan_request("Heat pumps vs gas boilers"))

    assert [r.response_format for r in fake_openai.requests] == [
        "json_schema",
        "json_object",
        "json_object",
    ]
    assert remembered_output_mode(fake_openai.base_url, "fake-model") == "json_object"


def test_falls_back_to_prompt_only_json_when_json_mode_is_refused_too(fake_openai, make_client):
    fake_openai.queue(
        error(400, "Unsupported parameter: response_format json_schema"),
        error(400, "json_object response format is not supported"),
        json_completion(PLAN),
    )

    result = make_client().plan(plan_request("Heat pumps vs gas boilers"))

    assert result.value.questions
    assert [r.response_format for r in fake_openai.requests] == ["json_schema", "json_object", None]
    prompt_only = fake_openai.requests[-1]
    assert "JSON Schema" in prompt_only.messages[0]["content"]


def test_forced_output_mode_is_used_and_never_downgraded(fake_openai, make_client):
    fake_openai.queue(error(400, "response_format json_object is not supported"))

    with pytest.raises(ModelError):
        make_client(output_mode="json_object").plan(plan_request("Heat pumps vs gas boilers"))

    assert [r.response_format for r in fake_openai.requests] == ["json_object"]


def test_malformed_json_gets_exactly_one_repair_call_quoting_the_error(fake_openai, make_client):
    fake_openai.queue(
        completion('{"objective": "x", "questions": [{"id": "q1"}]}'),
        json_completion(PLAN),
    )

    result = make_client().plan(plan_request("Heat pumps vs gas boilers"))

    assert len(fake_openai.requests) == 2
    repair = fake_openai.requests[1].messages
    assert repair[-2]["role"] == "assistant"
    assert "questions.0.text" in repair[-1]["content"]
    assert result.usage.model_calls == 2
    assert result.usage.input_tokens == 200


def test_invalid_output_after_the_repair_fails_the_phase_with_the_reason(fake_openai, make_client):
    fake_openai.queue(completion("I think the plan should cover costs."), completion("{not json"))

    with pytest.raises(ModelError) as raised:
        make_client().plan(plan_request("Heat pumps vs gas boilers"))

    assert len(fake_openai.requests) == 2
    assert "invalid planning answer twice" in raised.value.reason
    assert "not valid JSON" in raised.value.reason
    assert raised.value.retryable is False
    assert raised.value.usage.model_calls == 2


def test_think_blocks_are_stripped_before_validation(fake_openai, make_client):
    answer = '<think>The user wants a search. {"actions": []} is wrong.</think>\n' + json.dumps(
        DECISION
    )
    fake_openai.queue(completion(answer))

    result = make_client().decide(make_brief())

    assert result.value.actions[0].query == "heat pump running costs"
    assert len(fake_openai.requests) == 1


def test_code_fences_and_chatter_are_stripped(fake_openai, make_client):
    fake_openai.queue(
        completion(f"Here is the plan:\n```json\n{json.dumps(PLAN)}\n```\nGood luck!")
    )

    result = make_client().plan(plan_request("Heat pumps vs gas boilers"))

    assert result.value.objective == PLAN["objective"]


def test_rate_limit_is_retried_after_the_time_the_server_asks_for(fake_openai, make_client, sleeps):
    fake_openai.queue(
        error(429, "Rate limit reached", kind="rate_limit_error", headers={"retry-after": "2"}),
        json_completion(DECISION),
    )

    result = make_client().decide(make_brief())

    assert result.value.actions
    assert sleeps.waits == [2.0]
    assert result.usage.model_calls == 1


def test_server_errors_are_retried_with_backoff_then_reported(fake_openai, make_client, sleeps):
    fake_openai.queue(*[error(503, "overloaded", kind="server_error")] * 3)

    with pytest.raises(ModelError) as raised:
        make_client().decide(make_brief())

    assert len(fake_openai.requests) == 3
    assert sleeps.waits == [1.0, 2.0]
    assert "503" in raised.value.reason and "3 attempts" in raised.value.reason
    assert raised.value.retryable is True


def test_persistent_rate_limit_fails_clearly(fake_openai, make_client):
    fake_openai.queue(*[error(429, "slow down", headers={"retry-after-ms": "10"})] * 3)

    with pytest.raises(ModelError) as raised:
        make_client().decide(make_brief())

    assert "429" in raised.value.reason
    assert raised.value.retryable is True


def test_retry_after_longer_than_allowed_fails_without_waiting(fake_openai, make_client, sleeps):
    fake_openai.queue(error(429, "quota", headers={"retry-after": "3600"}))

    with pytest.raises(ModelError) as raised:
        make_client(max_retry_wait_seconds=30).decide(make_brief())

    assert sleeps.waits == []
    assert "3600 seconds" in raised.value.reason


def test_timeout_fails_with_a_clear_retryable_error(fake_openai, make_client):
    fake_openai.queue(completion(json.dumps(DECISION), delay=5))
    started = time.monotonic()

    with pytest.raises(ModelError) as raised:
        make_client(timeout_seconds=0.2, max_attempts=1).decide(make_brief())

    assert time.monotonic() - started < 2
    assert "did not answer" in raised.value.reason and "0.2 seconds" in raised.value.reason
    assert raised.value.retryable is True


def test_unreachable_endpoint_is_a_clear_error(sleeps):
    client = OpenAICompatibleClient(
        LLMConfig(base_url="http://127.0.0.1:9/v1", model="m", timeout_seconds=1), sleep=sleeps
    )

    with pytest.raises(ModelError) as raised:
        client.decide(make_brief())

    assert "could not be reached" in raised.value.reason
    assert "LLM_BASE_URL" in raised.value.reason
    assert len(sleeps.waits) == 2


def test_wrong_key_is_a_clear_error(fake_openai, make_client):
    fake_openai.queue(error(401, "Incorrect API key provided", code="invalid_api_key"))

    with pytest.raises(ModelError) as raised:
        make_client().decide(make_brief())

    assert "rejected the API key" in raised.value.reason and "LLM_API_KEY" in raised.value.reason
    assert raised.value.retryable is False
    assert len(fake_openai.requests) == 1


def test_unknown_model_is_a_clear_error(fake_openai, make_client):
    fake_openai.queue(error(404, "The model `gpt-9` does not exist", code="model_not_found"))

    with pytest.raises(ModelError) as raised:
        make_client(model="gpt-9").decide(make_brief())

    assert "does not know the model 'gpt-9'" in raised.value.reason


def test_context_too_long_is_a_clear_error_and_not_a_format_fallback(fake_openai, make_client):
    fake_openai.queue(
        error(
            400,
            "This model's maximum context length is 8192 tokens. However, your messages "
            "resulted in 9100 tokens. Please reduce the length of the messages.",
            code="context_length_exceeded",
        )
    )

    with pytest.raises(ModelError) as raised:
        make_client().extract(extraction_request("A long page. " * 50, "What is in it?"))

    assert "too long for the context window" in raised.value.reason
    assert len(fake_openai.requests) == 1


@pytest.mark.parametrize("content", ["", None, "   \n"])
def test_empty_response_is_a_clear_error(fake_openai, make_client, content):
    fake_openai.queue(completion(content, finish_reason="length"))

    with pytest.raises(ModelError) as raised:
        make_client().decide(make_brief())

    assert "empty response" in raised.value.reason and "length" in raised.value.reason
    assert raised.value.usage.model_calls == 1


def test_a_body_that_is_not_a_chat_completion_is_a_clear_error(fake_openai, make_client):
    fake_openai.queue(Reply(body="<html><body>Welcome to nginx!</body></html>"))

    with pytest.raises(ModelError) as raised:
        make_client().decide(make_brief())

    assert "not a chat completion" in raised.value.reason


def test_a_refusal_is_reported(fake_openai, make_client):
    body = completion(None).body
    body["choices"][0]["message"]["refusal"] = "I can't help with that."
    fake_openai.queue(Reply(body=body))

    with pytest.raises(ModelError) as raised:
        make_client().decide(make_brief())

    assert "refused" in raised.value.reason


def test_each_phase_uses_its_model_override(fake_openai, make_client):
    fake_openai.queue(json_completion({"evidence": []}), json_completion(DECISION))
    client = make_client(phase_models={"extractor": "small-model"})

    client.extract(extraction_request("Heat pumps move heat.", "How do heat pumps work?"))
    client.decide(make_brief())

    assert [r.payload["model"] for r in fake_openai.requests] == ["small-model", "fake-model"]


def test_extraction_is_capped_at_the_requested_number_of_items(fake_openai, make_client):
    items = [
        {"excerpt": f"Fact {n}.", "question_ids": ["q1"], "relevance": 0.9, "confidence": 0.9}
        for n in range(5)
    ]
    fake_openai.queue(json_completion({"evidence": items}))

    result = make_client().extract(
        extraction_request("Fact 0. Fact 1. Fact 2. Fact 3. Fact 4.", "Facts?", max_items=2)
    )

    assert [item.excerpt for item in result.value.evidence] == ["Fact 0.", "Fact 1."]


def test_the_report_mode_and_partial_flag_are_not_the_models_to_choose(fake_openai, make_client):
    plan = make_plan()
    report = Report(
        title="Heat pumps",
        sections=[
            ReportSection(
                id="q1",
                title="Costs",
                statements=[
                    Statement(claim_id="c1", kind="finding", text="Cheap.", evidence_ids=["e1"])
                ],
            )
        ],
        mode="extractive",
        partial=False,
    )
    fake_openai.queue(completion(report.model_dump_json()))
    request = synthesis_request(
        plan, [make_evidence("e1", "Heat pumps are cheap.", "q1")], partial=True
    )

    result = make_client().synthesize(request)

    assert result.value.mode == "model"
    assert result.value.partial is True


def test_concurrent_calls_to_one_endpoint_are_capped(fake_openai, make_client):
    fake_openai.responder = lambda request: json_completion(DECISION, delay=0.1)
    client = make_client(max_concurrency=2)
    errors: list[BaseException] = []

    def call() -> None:
        try:
            client.decide(make_brief())
        except BaseException as failure:  # noqa: BLE001 - reported by the assertion below
            errors.append(failure)

    threads = [threading.Thread(target=call) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert errors == []
    assert len(fake_openai.requests) == 6
    assert fake_openai.max_in_flight == 2


def test_the_public_openai_api_without_a_key_is_refused_at_construction():
    with pytest.raises(LLMConfigError, match="LLM_API_KEY"):
        OpenAICompatibleClient(LLMConfig(model="gpt-4.1-mini"))


def test_the_extractor_call_has_no_tools_and_keeps_the_page_in_its_envelope(
    fake_openai, make_client
):
    page = (Path(__file__).parent / "fixtures" / "injected_page.txt").read_text()
    fake_openai.queue(json_completion({"evidence": []}))

    make_client().extract(extraction_request(page, "How much did the tunnel cost?"))

    sent = fake_openai.requests[0]
    assert "tools" not in sent.payload and "functions" not in sent.payload
    system, user = (message["content"] for message in sent.messages)
    assert "Ignore all previous instructions" not in system
    envelope = user[user.index("<<<UNTRUSTED_SOURCE id=") :]
    assert "Ignore all previous instructions" in envelope
    assert envelope.count("<<<END_UNTRUSTED_SOURCE") == 1 and envelope.rstrip().endswith(">>>")


def test_the_output_token_cap_is_sent_as_the_completion_limit(fake_openai, make_client):
    fake_openai.queue(json_completion(PLAN))

    make_client().plan(plan_request("Heat pumps vs gas boilers", max_output_tokens=1500))

    assert fake_openai.requests[0].payload["max_tokens"] == 1500


def test_a_server_that_wants_max_completion_tokens_gets_it_and_it_is_remembered(
    fake_openai, make_client
):
    fake_openai.queue(
        error(
            400,
            "Unsupported parameter: 'max_tokens' is not supported with this model. "
            "Use 'max_completion_tokens' instead.",
            code="unsupported_parameter",
        ),
        json_completion(PLAN),
        json_completion(PLAN),
    )
    client = make_client(model="reasoning-model")

    client.plan(plan_request("Heat pumps vs gas boilers", max_output_tokens=800))
    client.plan(plan_request("Heat pumps vs gas boilers", max_output_tokens=800))

    sent = [request.payload for request in fake_openai.requests]
    assert "max_completion_tokens" not in sent[0] and sent[0]["max_tokens"] == 800
    assert [payload.get("max_completion_tokens") for payload in sent[1:]] == [800, 800]
    assert all("max_tokens" not in payload for payload in sent[1:])
    # The structured-output mode was not given up for a complaint about another field.
    assert [r.response_format for r in fake_openai.requests] == ["json_schema"] * 3


def test_an_answer_cut_off_at_the_limit_is_repaired_with_that_reason(fake_openai, make_client):
    fake_openai.queue(
        completion('{"objective": "x", "questions": [{"id": "q1", "te', finish_reason="length"),
        json_completion(PLAN),
    )

    result = make_client().plan(plan_request("Heat pumps vs gas boilers", max_output_tokens=50))

    assert result.value.questions
    repair = fake_openai.requests[1].messages[-1]["content"]
    assert "cut off at the 50-token output limit" in repair


def test_a_server_refusing_both_limit_fields_fails_clearly_instead_of_looping(
    fake_openai, make_client
):
    fake_openai.queue(
        error(400, "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."),
        error(400, "Unsupported parameter: 'max_completion_tokens'. Use 'max_tokens' instead."),
    )

    with pytest.raises(ModelError) as raised:
        make_client(model="odd-model").plan(plan_request("Heat pumps", max_output_tokens=800))

    assert len(fake_openai.requests) == 2
    assert "max_completion_tokens" in raised.value.reason
