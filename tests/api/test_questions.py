"""Asking a report through the API and the MCP server: topics, questions, answers, cancel and
retry, with the run's access rules (404 for outsiders, 403 for a read-only token)."""

from __future__ import annotations

import asyncio

import pytest

from research.api.mcp import build_server
from research.models import QuestionTurn, ResearchRun
from research.worker.answers import answer_turn
from tests.api.test_mcp import _calls, _data
from tests.web.factories import completed_run, make_evidence, make_source

FARES = "The adult single fare rises from 2.80 to 3.10 euros on 5 January 2025."
QUESTION = "How much does the adult single fare rise to?"


@pytest.fixture
def run(owner, team) -> ResearchRun:
    run = completed_run(owner, sources=1, team=team, visibility=ResearchRun.Visibility.TEAM)
    make_evidence(run, make_source(run), excerpt=FARES)
    return run


def base(run) -> str:
    return f"/api/v1/runs/{run.pk}/topics"


def test_topic_question_answer_through_the_api(api_for, run, viewer):
    client = api_for(viewer)
    topic = client.post(base(run), {"title": "Fares"}, content_type="application/json")
    assert topic.status_code == 201 and topic.json()["report_version"] == 1
    topic_id = topic.json()["id"]
    asked = client.post(
        f"{base(run)}/{topic_id}/questions", {"question": QUESTION}, content_type="application/json"
    )
    assert asked.status_code == 202 and asked.json()["status"] == "pending"
    busy = client.post(
        f"{base(run)}/{topic_id}/questions", {"question": "And?"}, content_type="application/json"
    )
    assert busy.status_code == 409 and "still being written" in busy.json()["message"]
    turn_id = asked.json()["id"]
    answer_turn(turn_id, model=None)
    answered = client.get(f"{base(run)}/{topic_id}/questions/{turn_id}").json()
    assert answered["status"] == "answered" and "3.10 euros" in answered["answer_text"]
    cited = answered["statements"][0]["cited"][0]
    assert cited["excerpt"] == FARES and cited["evidence_id"] == run.evidence.get(excerpt=FARES).pk
    listed = client.get(base(run)).json()
    assert [t["id"] for t in listed] == [topic_id] and len(listed[0]["turns"]) == 1


def test_cancel_and_retry_through_the_api(api_for, run, owner):
    client = api_for(owner)
    topic_id = client.post(base(run), {"title": "T"}, content_type="application/json").json()["id"]
    turn_id = client.post(
        f"{base(run)}/{topic_id}/questions", {"question": QUESTION}, content_type="application/json"
    ).json()["id"]
    cancelled = client.post(f"{base(run)}/{topic_id}/questions/{turn_id}/cancel")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert client.post(f"{base(run)}/{topic_id}/questions/{turn_id}/cancel").status_code == 409
    retried = client.post(f"{base(run)}/{topic_id}/questions/{turn_id}/retry")
    assert retried.json()["status"] == "pending"
    assert client.post(f"{base(run)}/{topic_id}/questions/{turn_id}/explode").status_code == 422


def test_outsiders_get_404_and_read_only_tokens_cannot_ask(api_for, run, owner, outsider):
    assert api_for(outsider).get(base(run)).status_code == 404
    assert (
        api_for(outsider)
        .post(base(run), {"title": "x"}, content_type="application/json")
        .status_code
        == 404
    )
    refused = api_for(owner, read_only=True).post(
        base(run), {"title": "x"}, content_type="application/json"
    )
    assert refused.status_code == 403
    assert (
        api_for(owner).post(base(run), {"title": ""}, content_type="application/json").status_code
        == 422
    )


@pytest.mark.django_db(transaction=True)
def test_questions_through_mcp(owner, outsider, team):
    run = completed_run(owner, sources=1)
    make_evidence(run, make_source(run), excerpt=FARES)

    async def steps(session):
        topic = _data(
            await session.call_tool("start_topic", {"run_id": str(run.pk), "title": "Fares"})
        )
        asked = _data(
            await session.call_tool(
                "ask_question",
                {"run_id": str(run.pk), "topic_id": topic["id"], "question": QUESTION},
            )
        )
        return topic, asked

    topic, asked = asyncio.run(_calls(build_server(owner), steps))
    assert asked["status"] == "pending"
    answer_turn(asked["id"], model=None)

    async def read(session):
        return _data(
            await session.call_tool(
                "get_answer",
                {"run_id": str(run.pk), "topic_id": topic["id"], "question_id": asked["id"]},
            )
        ), _data(await session.call_tool("list_topics", {"run_id": str(run.pk)}))

    answer, topics = asyncio.run(_calls(build_server(owner), read))
    assert answer["status"] == "answered" and "3.10 euros" in answer["answer_text"]
    assert topics[0]["turns"][0]["id"] == asked["id"]

    async def as_outsider(session):
        return await session.call_tool("list_topics", {"run_id": str(run.pk)})

    hidden = asyncio.run(_calls(build_server(outsider), as_outsider))
    assert hidden.isError and "No such research run" in hidden.content[0].text
    assert QuestionTurn.objects.count() == 1
