"""The reaper and graceful shutdown hand runs over to another worker."""

from datetime import timedelta

import dramatiq
import pytest
from django.utils import timezone
from dramatiq.brokers.stub import StubBroker

from research.engine.ports import LeaseLost
from research.models import ResearchRun
from research.worker.actors import advance_run
from research.worker.leases import claim_run, stale_runs
from research.worker.reaper import SHUTTING_DOWN, ReaperMiddleware, reap_once
from research.worker.store import DjangoStore
from tests.conftest import make_run


@pytest.fixture
def broker():
    broker = dramatiq.get_broker()
    broker.flush(advance_run.queue_name)
    yield broker
    broker.flush(advance_run.queue_name)


@pytest.fixture
def shutdown_flag():
    SHUTTING_DOWN.clear()
    yield SHUTTING_DOWN
    SHUTTING_DOWN.clear()


def queued_messages(broker) -> int:
    if isinstance(broker, StubBroker):  # keeps its queues in memory
        return broker.queues[advance_run.queue_name].qsize()
    return broker.client.llen(f"{broker.namespace}:{advance_run.queue_name}")


def test_reaper_re_sends_runs_whose_worker_died(owner, broker):
    dead = make_run(
        owner,
        status="researching",
        lease_owner="host:123:dead",
        lease_expires_at=timezone.now() - timedelta(seconds=5),
    )
    make_run(
        owner,
        status="researching",
        lease_owner="host:456:alive",
        lease_expires_at=timezone.now() + timedelta(minutes=1),
    )
    assert reap_once() == [str(dead.pk)]
    assert queued_messages(broker) == 1


def test_shutdown_releases_the_lease_at_the_next_heartbeat(owner, shutdown_flag):
    run = make_run(owner, status="researching")
    assert claim_run(run.pk, "worker-a", needs_slot=False)
    store = DjangoStore(lease_owner="worker-a")
    store.heartbeat(str(run.pk))  # a normal heartbeat renews

    ReaperMiddleware().before_worker_shutdown(dramatiq.get_broker(), worker=None)
    assert shutdown_flag.is_set()
    with pytest.raises(LeaseLost, match="shutting down"):
        store.heartbeat(str(run.pk))
    run.refresh_from_db()
    assert run.lease_owner == "" and run.status == "researching"
    # Released, not expired: the reaper hands it on at once, no lease period to wait.
    assert str(run.pk) in stale_runs()
    assert ResearchRun.objects.get(pk=run.pk).status == "researching"
