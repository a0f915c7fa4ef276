"""A broker that cannot be reached when work is handed over loses nothing: the change is
saved, the person is told the work starts when the queue is back, and a worker's reaper
sends the run once it is.

The outage is real: the actor is pointed at a Redis broker on a port nobody listens on, so
redis-py's own connection error is what the service sees."""

from __future__ import annotations

import socket
from datetime import timedelta

import dramatiq
import pytest
from django.urls import reverse
from django.utils import timezone
from dramatiq.brokers.redis import RedisBroker

from research import services
from research.models import ResearchRun
from research.worker.actors import advance_run
from research.worker.leases import stale_runs
from research.worker.reaper import reap_once
from tests.web.factories import awaiting_run, make_run

pytestmark = pytest.mark.django_db(transaction=True)

OUTAGE_SENTENCE = "Saved; the work queue cannot be reached right now, so it will start when the"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def broker_down(monkeypatch):
    """``advance_run`` sends to a Redis broker that refuses connections."""
    unreachable = RedisBroker(
        url=f"redis://127.0.0.1:{closed_port()}/0?socket_connect_timeout=1", middleware=[]
    )
    monkeypatch.setattr(advance_run, "broker", unreachable)
    yield unreachable
    unreachable.close()


@pytest.fixture
def working_broker():
    broker = dramatiq.get_broker()
    broker.flush(advance_run.queue_name)
    yield broker
    broker.flush(advance_run.queue_name)


def run_queued_messages(broker) -> None:
    worker = dramatiq.Worker(broker, worker_timeout=100, worker_threads=1)
    worker.start()
    try:
        broker.join(advance_run.queue_name, timeout=60_000)
        worker.join()
    finally:
        worker.stop()


def age(run: ResearchRun, seconds: int) -> None:
    ResearchRun.objects.filter(pk=run.pk).update(
        updated_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_creating_research_while_the_broker_is_down_keeps_the_run(
    owner, client_for, broker_down, working_broker, settings
):
    client = client_for(owner)
    response = client.post(
        reverse("research:run_new"),
        {
            "question": "How large is the European heat-pump market?",
            "depth": "quick",
            "source_mode": "full_web",
            "visibility": "private",
        },
    )
    run = ResearchRun.objects.get(owner=owner)
    assert response.status_code == 302
    assert response["Location"] == reverse("research:run_detail", args=[run.pk])
    assert run.status == ResearchRun.Status.CREATED
    assert OUTAGE_SENTENCE in client.get(response["Location"]).content.decode()

    # The queue comes back. The run is not re-sent while its message might still arrive...
    broker_down.close()
    advance_run.broker = working_broker
    assert str(run.pk) not in stale_runs()
    # ...but once it has been quiet for a lease period, any worker's reaper sends it.
    age(run, settings.RESEARCH_LEASE_SECONDS + 1)
    assert reap_once() == [str(run.pk)]
    run_queued_messages(working_broker)
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.AWAITING_APPROVAL, run.last_error
    assert run.plan and run.plan_version == 1


def test_the_service_raises_queue_unavailable_after_committing(owner, broker_down):
    with pytest.raises(services.QueueUnavailable) as raised:
        services.run_create(owner=owner, question="What changed in 2024?")
    assert ResearchRun.objects.filter(pk=raised.value.run_id).exists()


def test_approving_while_the_broker_is_down_queues_the_run_for_the_reaper(
    owner, client_for, broker_down, working_broker, settings
):
    from tests.web.test_plan_review import form_data

    run = awaiting_run(owner)
    client = client_for(owner)
    response = client.post(
        reverse("research:run_plan", args=[run.pk]), {**form_data(run), "op": "approve"}
    )
    assert response.status_code == 302
    assert OUTAGE_SENTENCE in client.get(response["Location"]).content.decode()
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.QUEUED
    advance_run.broker = working_broker
    age(run, settings.RESEARCH_LEASE_SECONDS + 1)
    assert reap_once() == [str(run.pk)]


def test_a_control_while_the_broker_is_down_says_it_continues_later(
    owner, client_for, broker_down, htmx_headers, settings
):
    run = make_run(owner, status=ResearchRun.Status.PAUSED, resume_phase="researching")
    response = client_for(owner).post(
        reverse("research:run_control", args=[run.pk, "resume"]), **htmx_headers
    )
    assert response.status_code == 200
    assert OUTAGE_SENTENCE in response.content.decode()
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.QUEUED  # resumed research waits for a slot
    age(run, settings.RESEARCH_LEASE_SECONDS + 1)
    assert str(run.pk) in stale_runs()


def test_a_refinement_nobody_took_up_is_re_sent(owner, settings):
    run = awaiting_run(owner, refinement_instruction="Add the 2024 figures.")
    assert str(run.pk) not in stale_runs()
    age(run, settings.RESEARCH_LEASE_SECONDS + 1)
    assert str(run.pk) in stale_runs()
    plain = awaiting_run(owner)
    age(plain, settings.RESEARCH_LEASE_SECONDS + 1)
    assert str(plain.pk) not in stale_runs()  # waiting for a person, not for a worker
