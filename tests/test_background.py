"""The configured broker and channel layer really carry messages (stub or Redis)."""

from __future__ import annotations

import threading
import uuid

import dramatiq
import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings
from dramatiq.brokers.redis import RedisBroker
from dramatiq.brokers.stub import StubBroker

import config.worker

received: list[str] = []
received_event = threading.Event()


@dramatiq.actor(queue_name=f"test-{uuid.uuid4().hex[:8]}", max_retries=0)
def remember(token: str) -> None:
    received.append(token)
    received_event.set()


def test_broker_matches_configuration():
    broker = dramatiq.get_broker()
    if settings.REDIS:
        assert isinstance(broker, RedisBroker)
    else:
        assert isinstance(broker, StubBroker)


def test_actor_message_round_trip_through_the_configured_broker():
    broker = dramatiq.get_broker()
    if isinstance(broker, RedisBroker):
        broker.flush(remember.queue_name)
    token = uuid.uuid4().hex
    worker = dramatiq.Worker(broker, worker_timeout=100, worker_threads=1)
    worker.start()
    try:
        remember.send(token)
        broker.join(remember.queue_name, timeout=10_000)
        worker.join()
    finally:
        worker.stop()
    assert token in received


@pytest.mark.skipif(
    settings.REDIS is not None, reason="the embedded worker exists only without Redis"
)
def test_embedded_worker_runs_inside_the_server_process():
    worker = config.worker.start_embedded_worker()
    try:
        assert worker is not None
        assert config.worker.start_embedded_worker() is worker  # started once per process
        received_event.clear()
        token = uuid.uuid4().hex
        remember.send(token)
        assert received_event.wait(10)
        assert token in received
    finally:
        config.worker.stop_embedded_worker()


def test_embedded_worker_is_off_with_redis(settings):
    settings.EMBEDDED_WORKER = False
    assert config.worker.start_embedded_worker() is None


def test_channel_layer_delivers_group_messages():
    layer = get_channel_layer()

    async def round_trip() -> dict:
        channel = await layer.new_channel()
        group = f"run-{uuid.uuid4().hex}"
        await layer.group_add(group, channel)
        await layer.group_send(group, {"type": "run.event", "html": "<p>step</p>"})
        message = await layer.receive(channel)
        await layer.group_discard(group, channel)
        return message

    assert async_to_sync(round_trip)() == {"type": "run.event", "html": "<p>step</p>"}
