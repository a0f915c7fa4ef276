"""Clarifying questions in the composer: with a model (the loopback OpenAI-compatible server)
the planner may ask up to three before planning — answered, they reach the plan; skipped or
failed, planning goes on — and without a model the composer shows optional gap hints."""

from __future__ import annotations

import pytest
from django.urls import reverse

from research.models import ResearchRun
from research.worker.store import DjangoStore
from tests.llm.fake_openai import FakeOpenAIServer, error, json_completion
from tests.web.test_composer import _post

QUESTION = "What are the latest rules for short-term rentals?"


@pytest.fixture
def model(settings):
    server = FakeOpenAIServer()
    settings.LLM_BASE_URL = server.base_url
    settings.LLM_API_KEY = "test-key"
    settings.LLM_MODEL = "fake-model"
    settings.LLM_MAX_ATTEMPTS = 1
    settings.RESEARCH_MODEL_CLIENT = ""
    yield server
    server.close()


def asked(*questions: str) -> dict:
    return {"questions": [{"question": q, "about": "scope"} for q in questions]}


def test_the_planner_asks_first_and_answers_reach_planning(owner, client_for, model):
    model.queue(json_completion(asked("Which city or country?", "As of which year?")))
    client = client_for(owner)
    page = _post(client, question=QUESTION, action="clarify")
    assert page.status_code == 200 and not ResearchRun.objects.exists()
    html = page.content.decode()
    assert "Which city or country?" in html and "Skip and plan" in html
    assert QUESTION in model.requests[0].messages[-1]["content"]

    created = _post(
        client,
        question=QUESTION,
        action="answered",
        clarify_question_0="Which city or country?",
        clarify_answer_0="Portugal",
        clarify_question_1="As of which year?",
        clarify_answer_1="",
    )
    assert created.status_code == 302
    run = ResearchRun.objects.get()
    assert run.clarifications == [{"question": "Which city or country?", "answer": "Portugal"}]
    loaded = DjangoStore(lease_owner=None).load_run(str(run.pk))
    assert loaded.clarifications == [
        "Asked before planning: “Which city or country?” Answer: “Portugal”"
    ]


def test_skip_plans_without_answers(owner, client_for, model):
    created = _post(
        client_for(owner),
        question=QUESTION,
        action="skip",
        clarify_question_0="Which city?",
        clarify_answer_0="typed, then skipped",
    )
    assert created.status_code == 302 and ResearchRun.objects.get().clarifications == []


def test_a_failing_model_never_blocks_planning(owner, client_for, model):
    model.queue(error(401, "The key is not valid.", kind="authentication_error"))
    created = _post(client_for(owner), question=QUESTION, action="clarify")
    assert created.status_code == 302 and ResearchRun.objects.count() == 1


def test_a_clear_request_goes_straight_to_planning(owner, client_for, model):
    model.queue(json_completion(asked()))
    assert _post(client_for(owner), question=QUESTION, action="clarify").status_code == 302


def test_without_a_model_the_composer_hints_at_gaps(owner, client_for, settings):
    settings.LLM_BASE_URL = ""
    settings.LLM_MODEL = ""
    client = client_for(owner)
    page = client.get(reverse("research:run_new")).content.decode()
    assert 'value="clarify"' not in page  # nothing to ask: the button plans at once
    hints = client.post(reverse("research:composer_hints"), {"question": QUESTION})
    assert hints.status_code == 200 and "depends on when" in hints.content.decode()
    clear = client.post(
        reverse("research:composer_hints"), {"question": "How many trams did the city buy in 2021?"}
    )
    assert "Optional hints" not in clear.content.decode()
    assert _post(client, question=QUESTION).status_code == 302  # hints never block


def test_hints_need_sign_in(client_for):
    response = client_for(None).post(reverse("research:composer_hints"), {"question": QUESTION})
    assert response.status_code == 302
