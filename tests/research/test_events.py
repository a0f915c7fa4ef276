import uuid

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer

from research.engine.contracts import PhaseChanged
from research.events import ChannelLayerEvents, run_group


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


def test_a_broken_layer_does_not_raise(monkeypatch):
    sink = ChannelLayerEvents()

    async def explode(*args, **kwargs):
        raise ConnectionError("layer down")

    monkeypatch.setattr(sink.layer, "group_send", explode)
    sink.emit(PhaseChanged(run_id="r1", phase="searching", status="researching"))
