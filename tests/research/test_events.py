import logging
import uuid

import pytest
from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from research.engine.contracts import PhaseChanged
from research.worker.events import ChannelLayerEvents, run_group


def test_events_reach_the_run_group_on_the_configured_layer():
    run_id = str(uuid.uuid4())
    layer = get_channel_layer()

    async def subscribe() -> str:
        channel = await layer.new_channel()
        await layer.group_add(run_group(run_id), channel)
        return channel

    channel = async_to_sync(subscribe)()
    ChannelLayerEvents().emit(
        PhaseChanged(run_id=run_id, phase="searching", status="researching", message="Searching")
    )
    message = async_to_sync(layer.receive)(channel)
    assert message["type"] == "run.event"
    assert message["event"]["phase"] == "searching"
    assert message["event"]["run_id"] == run_id


@pytest.mark.parametrize(
    ("error", "traceback"),
    [(ConnectionError("layer down"), False), (RuntimeError("layer confused"), True)],
)
def test_a_broken_layer_logs_a_warning_and_does_not_raise(monkeypatch, caplog, error, traceback):
    sink = ChannelLayerEvents()

    async def explode(*args, **kwargs):
        raise error

    monkeypatch.setattr(sink.layer, "group_send", explode)
    with caplog.at_level(logging.WARNING, logger="research.worker.events"):
        sink.emit(PhaseChanged(run_id="r1", phase="searching", status="researching"))

    warnings = [r for r in caplog.records if r.name == "research.worker.events"]
    assert [r.levelno for r in warnings] == [logging.WARNING]
    message = warnings[0].getMessage()
    assert message.startswith("Could not publish a progress event for run r1")
    if traceback:
        assert warnings[0].exc_info is not None and warnings[0].exc_info[1] is error
    else:
        assert "layer down" in message and warnings[0].exc_info is None


def test_worker_threads_hand_in_memory_sends_to_the_server_loop():
    """In the embedded mode the in-memory layer's queues belong to the server's loop."""
    import asyncio
    import threading

    from channels.layers import InMemoryChannelLayer

    from research.worker import events

    layer = InMemoryChannelLayer()
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        events.register_server_loop(loop)
        channel = asyncio.run_coroutine_threadsafe(layer.new_channel(), loop).result(2)
        asyncio.run_coroutine_threadsafe(layer.group_add(run_group("r9"), channel), loop).result(2)
        sink = ChannelLayerEvents()
        sink.layer = layer
        sink.emit(PhaseChanged(run_id="r9", phase="searching", status="researching"))
        message = asyncio.run_coroutine_threadsafe(layer.receive(channel), loop).result(2)
        assert message["event"]["run_id"] == "r9"
    finally:
        events.register_server_loop(None)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(2)
