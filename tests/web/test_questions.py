"""The Questions tab: who may read and ask (owner, editor, viewer, outsider, share link), the
ask → answer → thread flow, cancel and retry from the page, and the live thread over the
WebSocket."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from django.urls import reverse

from research.live.questions import NOT_FOUND, TopicConsumer
from research.models import QuestionTopic, QuestionTurn, ResearchRun
from research.questions import question_ask, topic_create
from research.worker.answers import answer_turn
from tests.web.factories import completed_run, make_evidence, make_source
from tests.web.test_live import communicator

FARES = "The adult single fare rises from 2.80 to 3.10 euros on 5 January 2025."
QUESTION = "How much does the adult single fare rise to?"


@pytest.fixture
def run(owner, team) -> ResearchRun:
    run = completed_run(owner, sources=1, team=team, visibility=ResearchRun.Visibility.LINK)
    make_evidence(run, make_source(run), excerpt=FARES)
    return run


@pytest.fixture
def topic(run, owner) -> QuestionTopic:
    return topic_create(run=run, title="Fares", user=owner)


def topic_url(run, topic) -> str:
    return reverse("research:topic_detail", args=[run.pk, topic.pk])


def shared(name: str, run, *args) -> str:
    return reverse(f"research:shared_{name}", args=[run.share_token, *args])


def test_team_members_read_and_ask(client_for, run, topic, editor, viewer):
    for user in (editor, viewer):
        page = client_for(user).get(topic_url(run, topic))
        assert page.status_code == 200
        assert b'name="question"' in page.content
        asked = client_for(user).post(
            reverse("research:topic_ask", args=[run.pk, topic.pk]), {"question": QUESTION}
        )
        assert asked.status_code == 302
        QuestionTurn.objects.filter(topic=topic).delete()


def test_outsider_gets_404_everywhere(client_for, run, topic, outsider):
    client = client_for(outsider)
    assert client.get(reverse("research:questions", args=[run.pk])).status_code == 404
    assert client.get(topic_url(run, topic)).status_code == 404
    assert (
        client.post(
            reverse("research:topic_ask", args=[run.pk, topic.pk]), {"question": QUESTION}
        ).status_code
        == 404
    )
    assert (
        client.post(reverse("research:topic_new", args=[run.pk]), {"title": "Mine"}).status_code
        == 404
    )
    assert not QuestionTurn.objects.exists()


def test_a_topic_of_another_run_is_not_found(client_for, run, owner):
    other = completed_run(owner, sources=1)
    foreign = topic_create(run=other, title="Elsewhere", user=owner)
    assert client_for(owner).get(topic_url(run, foreign)).status_code == 404


def test_share_link_reads_but_cannot_ask_unless_allowed(client_for, run, topic, owner):
    turn = question_ask(topic=topic, question=QUESTION, user=owner)
    answer_turn(str(turn.pk), model=None)
    anonymous = client_for(None)
    page = anonymous.get(shared("topic_detail", run, topic.pk))
    assert page.status_code == 200 and "3.10 euros" in page.content.decode()
    assert b'name="question"' not in page.content
    refused = anonymous.post(shared("topic_ask", run, topic.pk), {"question": "Another?"})
    assert refused.status_code == 404
    assert anonymous.post(shared("topic_new", run), {"title": "Mine"}).status_code == 404

    client_for(owner).post(
        reverse("research:questions_link_asking", args=[run.pk]), {"allowed": "on"}
    )
    allowed = anonymous.post(shared("topic_ask", run, topic.pk), {"question": "What about 2026?"})
    assert allowed.status_code == 302
    assert QuestionTurn.objects.filter(topic=topic, asked_by=None).count() == 1


def test_only_editors_switch_asking_through_the_link(client_for, run, viewer):
    response = client_for(viewer).post(
        reverse("research:questions_link_asking", args=[run.pk]), {"allowed": "on"}
    )
    assert response.status_code == 404
    run.refresh_from_db()
    assert not run.link_viewers_may_ask


def test_ask_answer_and_the_thread_shows_the_quote(client_for, run, topic, owner):
    client = client_for(owner)
    client.post(reverse("research:topic_ask", args=[run.pk, topic.pk]), {"question": QUESTION})
    turn = QuestionTurn.objects.get(topic=topic)
    busy = client.get(topic_url(run, topic)).content.decode()
    assert "Cancel" in busy and "disabled" in busy
    answer_turn(str(turn.pk), model=None)
    page = client.get(topic_url(run, topic)).content.decode()
    assert "3.10 euros" in page and "quoted from the evidence" in page


def test_not_answered_offers_research_further(client_for, run, topic, owner):
    turn = question_ask(topic=topic, question="Which composer wrote the city's anthem?", user=owner)
    answer_turn(str(turn.pk), model=None)
    client = client_for(owner)
    page = client.get(topic_url(run, topic)).content.decode()
    assert "does not answer this" in page and "Research further with this question" in page
    response = client.post(
        reverse("research:turn_action", args=[run.pk, topic.pk, turn.pk, "research-further"])
    )
    child = ResearchRun.objects.get(parent_run=run)
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{child.pk}/")


def test_viewers_cannot_start_research_further(client_for, run, topic, owner, viewer):
    turn = question_ask(topic=topic, question="Which composer wrote the city's anthem?", user=owner)
    answer_turn(str(turn.pk), model=None)
    client = client_for(viewer)
    assert (
        "Research further with this question"
        not in client.get(topic_url(run, topic)).content.decode()
    )
    url = reverse("research:turn_action", args=[run.pk, topic.pk, turn.pk, "research-further"])
    assert client.post(url).status_code == 404
    assert not ResearchRun.objects.filter(parent_run=run).exists()


def test_cancel_and_retry_from_the_page(client_for, run, topic, owner, htmx_headers):
    turn = question_ask(topic=topic, question=QUESTION, user=owner)
    client = client_for(owner, **htmx_headers)
    url = lambda action: reverse("research:turn_action", args=[run.pk, topic.pk, turn.pk, action])  # noqa: E731
    cancelled = client.post(url("cancel"))
    assert cancelled.status_code == 200 and "Retry" in cancelled.content.decode()
    assert client.post(url("cancel")).status_code == 400  # nothing left to cancel
    client.post(url("retry"))
    assert QuestionTurn.objects.get(pk=turn.pk).status == QuestionTurn.Status.PENDING
    assert client.post(url("unknown")).status_code == 404


def test_bad_input_gets_a_sentence(client_for, run, topic, owner):
    client = client_for(owner)
    empty = client.post(reverse("research:topic_ask", args=[run.pk, topic.pk]), {"question": "  "})
    assert empty.status_code == 400 and "Write the question" in empty.content.decode()
    long = client.post(reverse("research:topic_new", args=[run.pk]), {"title": "x" * 500})
    assert long.status_code == 400 and "too long" in long.content.decode()


def test_report_without_a_report_has_no_questions(client_for, owner):
    from tests.web.factories import awaiting_run

    pending = awaiting_run(owner)
    page = client_for(owner).get(reverse("research:questions", args=[pending.pk]))
    assert (
        page.status_code == 200
        and "once the research has written its report" in page.content.decode()
    )
    created = client_for(owner).post(
        reverse("research:topic_new", args=[pending.pk]), {"title": "T"}
    )
    assert created.status_code == 400


# -- live ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_live_thread_reaches_a_second_viewer_and_refuses_outsiders(
    owner, team, viewer, outsider, monkeypatch
):
    monkeypatch.setattr(TopicConsumer, "safety_check_seconds", 3600)
    run = completed_run(owner, sources=1, team=team, visibility=ResearchRun.Visibility.TEAM)
    make_evidence(run, make_source(run), excerpt=FARES)
    topic = topic_create(run=run, title="Fares", user=owner)

    watcher = communicator(viewer, f"/ws/topics/{topic.pk}/")
    stranger = communicator(outsider, f"/ws/topics/{topic.pk}/")

    async def scenario() -> None:
        assert (await watcher.connect())[0]
        first = await watcher.receive_from(timeout=5)
        assert "No questions in this topic yet" in first

        turn = await database_sync_to_async(question_ask)(
            topic=topic, question=QUESTION, user=owner
        )
        assert QUESTION.split()[0] in await watcher.receive_from(timeout=5)
        await database_sync_to_async(answer_turn)(str(turn.pk), model=None)
        seen = ""
        for _ in range(3):
            seen = await watcher.receive_from(timeout=5)
            if "3.10 euros" in seen:
                break
        assert "3.10 euros" in seen
        await watcher.disconnect()

        await stranger.connect()
        assert (await stranger.receive_output(timeout=5))["code"] == NOT_FOUND

    async_to_sync(scenario)()
