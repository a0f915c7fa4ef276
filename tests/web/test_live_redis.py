"""Live progress over channels-redis: a WebSocket with nothing to say stays open.

channels-redis reads with a 5-second blocking BZPOPMIN. redis-py 8's default socket timeout is
also 5 s, so without explicit timeouts every quiet socket's read timed out and the connection
was closed with 1011 (see config/settings.py). Runs on the PostgreSQL + Redis pass of CI.
"""

from __future__ import annotations

import asyncio

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.conf import settings

from research.engine.contracts import StepStarted
from research.live.consumer import RunConsumer
from research.worker.events import run_group
from tests.web.factories import make_run, make_step
from tests.web.test_live import _db, communicator, ws_path

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(not settings.REDIS, reason="needs REDIS_URL: tests the Redis channel layer"),
]

QUIET_SECONDS = 30


def test_a_quiet_websocket_stays_open_and_still_receives_events(owner, monkeypatch):
    monkeypatch.setattr(RunConsumer, "coalesce_seconds", 0)
    monkeypatch.setattr(RunConsumer, "safety_check_seconds", 3600)
    assert "RedisChannelLayer" in settings.CHANNEL_LAYERS["default"]["BACKEND"]
    run = make_run(owner, status="researching")
    socket = communicator(owner, ws_path(run))
    layer = get_channel_layer()

    async def go():
        connected, _ = await socket.connect()
        assert connected
        first = await socket.receive_output(timeout=5)
        assert first["type"] == "websocket.send"
        # Six channels-redis read timeouts pass with no message at all.
        await asyncio.sleep(QUIET_SECONDS)
        assert not socket.future.done(), socket.future.exception()
        step = await _db(make_step, run, "search", payload={"query": "after the quiet"})
        await layer.group_send(
            run_group(run.pk),
            {
                "type": "run.event",
                "event": StepStarted(
                    run_id=str(run.pk), step_id=str(step.pk), kind="search"
                ).model_dump(mode="json"),
            },
        )
        pushed = await socket.receive_output(timeout=10)
        await socket.disconnect()
        return pushed

    pushed = async_to_sync(go)()
    assert pushed["type"] == "websocket.send"
    assert "after the quiet" in pushed["text"]
