"""Answers are written by the ``answer_question`` actor through the configured broker, and a
question whose worker died is handed to another by the reaper."""

from __future__ import annotations

from datetime import timedelta

import dramatiq
import pytest
from django.utils import timezone
from dramatiq.brokers.redis import RedisBroker

from research.models import QuestionTurn
from research.questions import question_ask, topic_create
from research.worker.actors import answer_question
from research.worker.reaper import reap_once
from tests.web.factories import completed_run, make_evidence, make_source

pytestmark = pytest.mark.django_db(transaction=True)

FARES = "The adult single fare rises from 2.80 to 3.10 euros on 5 January 2025."


@pytest.fixture
def worker():
    broker = dramatiq.get_broker()
    if isinstance(broker, RedisBroker):
        broker.flush(answer_question.queue_name)
    worker = dramatiq.Worker(broker, worker_timeout=100, worker_threads=1)
    worker.start()
    yield broker
    worker.stop()


def wait_for(broker) -> None:
    broker.join(answer_question.queue_name, timeout=20_000)


def test_a_question_is_answered_by_a_worker_after_commit(owner, worker):
    run = completed_run(owner, sources=1)
    make_evidence(run, make_source(run), excerpt=FARES)
    topic = topic_create(run=run, title="Fares", user=owner)
    turn = question_ask(
        topic=topic, question="How much does the adult single fare rise to?", user=owner
    )
    wait_for(worker)
    stored = QuestionTurn.objects.get(pk=turn.pk)
    assert stored.status == QuestionTurn.Status.ANSWERED
    assert "3.10 euros" in stored.answer_contract.statements[0].text


def test_an_answer_whose_worker_died_is_finished_by_another(owner, worker):
    run = completed_run(owner, sources=1)
    make_evidence(run, make_source(run), excerpt=FARES)
    topic = topic_create(run=run, title="Fares", user=owner)
    # As a worker leaves it when killed mid-answer: claimed, lease running out, no answer.
    turn = QuestionTurn.objects.create(
        topic=topic,
        question="How much does the adult single fare rise to?",
        status=QuestionTurn.Status.GENERATING,
        attempts=1,
        lease_expires_at=timezone.now() - timedelta(seconds=1),
    )
    reap_once()
    wait_for(worker)
    stored = QuestionTurn.objects.get(pk=turn.pk)
    assert stored.status == QuestionTurn.Status.ANSWERED and stored.attempts == 2
