"""A run through the OpenAI-compatible backend: Django, the worker, the frozen web and the
loopback fake model server, which answers all five calls in the real chat-completions wire
format, reading each prompt as a model would (the JSON schema it is asked for says which call
it is). The verifier's answers are hostile: text that is no JSON, or verdicts for a finding
that does not exist. The run must complete with the reason stated.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import override_settings

from research import services
from research.engine.contracts import Report
from research.models import ResearchRun
from research.worker.actors import advance_run
from tests.integration.scripted import make_plan, steps
from tests.llm.fake_openai import FakeOpenAIServer, RecordedRequest, Reply, completion

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How many weekday boardings does the Harwick Metro Line 3 extension have?"
PLAN = make_plan(QUESTION, ("q1", QUESTION)).model_dump(mode="json")
QUERY = "Harwick Line 3 extension weekday boardings"
_BLOCK = re.compile(
    r'<<<UNTRUSTED_(?P<kind>\w+) id="(?P<id>[^"]*)" seal="\w+">>>\n(?P<body>.*?)\n'
    r'<<<END_UNTRUSTED_(?P=kind) id="(?P=id)"',
    re.DOTALL,
)
_FIGURE_SENTENCE = re.compile(r"[^.\n]*48,200[^.\n]*\.")


def _blocks(text: str, kind: str) -> list[str]:
    return [m.group("body") for m in _BLOCK.finditer(text) if m.group("kind") == kind]


def _decide(user: str) -> dict[str, Any]:
    state = json.loads(user.split("Research state:\n", 1)[1].split("\n\nSearch results", 1)[0])
    candidates = json.loads(_blocks(user, "SEARCH_RESULTS")[0])
    if not state["recent_queries"]:
        action = {
            "type": "search",
            "query": QUERY,
            "question_ids": ["q1"],
            "rationale": "No evidence yet.",
        }
        return {"actions": [action]}
    unread = [c for c in candidates if c["status"] == "candidate" and "Line 3" in c["title"]]
    if unread and state["iteration"] <= 2:
        return {
            "actions": [
                {
                    "type": "read",
                    "source_id": c["source_id"],
                    "question_ids": ["q1"],
                    "rationale": "Reading.",
                }
                for c in unread[:2]
            ]
        }
    return {"actions": [{"type": "finish", "rationale": "The question has evidence."}]}


def _extract(user: str) -> dict[str, Any]:
    (text,) = _blocks(user, "SOURCE")
    return {
        "evidence": [
            {
                "excerpt": sentence.strip(),
                "question_ids": ["q1"],
                "stance": "supports",
                "relevance": 0.9,
                "confidence": 0.9,
            }
            for sentence in _FIGURE_SENTENCE.findall(text)[:1]
        ]
    }


def _write(user: str) -> dict[str, Any]:
    cards = json.loads(_blocks(user, "EVIDENCE")[0])
    statements = [
        {
            "claim_id": f"f{n}",
            "kind": "finding",
            "text": card["excerpt"],
            "evidence_ids": [card["id"]],
        }
        for n, card in enumerate(cards[:2], start=1)
    ]
    return {
        "title": QUESTION,
        "sections": [{"id": "q1", "title": "Weekday boardings", "statements": statements}],
    }


def responder(verifier: Callable[[str], str]) -> Callable[[RecordedRequest], Reply]:
    """Answers each call by the schema it asks for; the verifier's answer is ``verifier``."""

    def answer(request: RecordedRequest) -> Reply:
        schema = request.payload["response_format"]["json_schema"]["name"]
        user = request.messages[1]["content"]
        if schema == "Verification":
            return completion(verifier(user))
        content = {
            "ResearchPlan": lambda: PLAN,
            "ResearchDecision": lambda: _decide(user),
            "ExtractionResult": lambda: _extract(user),
            "Report": lambda: _write(user),
        }[schema]()
        return completion(json.dumps(content))

    return answer


@pytest.fixture
def endpoint(web) -> Iterator[FakeOpenAIServer]:
    server = FakeOpenAIServer()
    settings = {
        **web.django_settings(),
        "LLM_BASE_URL": server.base_url,
        "LLM_MODEL": "fake-model",
        "LLM_API_KEY": "test-key",
        "RESEARCH_MODEL_CLIENT": "",
    }
    with override_settings(**settings):
        yield server
    server.close()


def research(owner) -> ResearchRun:
    run = services.run_create(owner=owner, question=QUESTION, depth="standard")
    advance_run(str(run.pk))
    run.refresh_from_db()
    assert run.status == "awaiting_approval", run.last_error
    services.plan_approve(run=run, expected_version=1)
    advance_run(str(run.pk))
    run.refresh_from_db()
    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)
    return run


def verifier_requests(server: FakeOpenAIServer) -> list[RecordedRequest]:
    return [
        r
        for r in server.requests
        if r.payload["response_format"]["json_schema"]["name"] == "Verification"
    ]


def test_supported_verdicts_come_back_over_the_wire_and_are_stored(owner, endpoint):
    def confirm(user: str) -> str:
        ids = re.findall(r"^Finding (\S+):$", user, re.MULTILINE)
        return json.dumps({"verdicts": [{"claim_id": i, "verdict": "supported"} for i in ids]})

    endpoint.responder = responder(confirm)
    run = research(owner)

    findings = [s for s in Report.model_validate(run.report).statements() if s.kind == "finding"]
    assert findings and all(s.verdict and s.verdict.verdict == "supported" for s in findings)
    (call,) = verifier_requests(endpoint)
    assert "<<<UNTRUSTED_EVIDENCE" in call.messages[1]["content"]
    assert "48,200" in _blocks(call.messages[1]["content"], "EVIDENCE")[0]


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            "Every finding looks supported to me.",
            "The verifier could not judge the findings: The model 'fake-model' gave an invalid "
            "finding verification answer twice",
        ),
        (
            json.dumps({"verdicts": [{"claim_id": "f99", "verdict": "unsupported"}]}),
            "The verifier answered for “f99”, which is no finding it was shown",
        ),
    ],
)
def test_a_hostile_verifier_over_the_wire_is_survived_with_a_clear_reason(
    owner, endpoint, answer, reason
):
    endpoint.responder = responder(lambda _: answer)
    run = research(owner)

    report = Report.model_validate(run.report)
    findings = [s for s in report.statements() if s.kind == "finding"]
    assert findings and all(s.verdict is None for s in findings)
    assert any(line.startswith(reason) for line in report.methodology), report.methodology
    (synthesis,) = steps(run, "synthesize")
    assert reason in synthesis.summary
    assert verifier_requests(endpoint)  # it was asked, in the wire format
