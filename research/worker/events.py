"""Live progress: the engine's EventSink, forwarded to one channel-layer group per run.

Events are an optimisation for people watching; the database is the record. A page
(re)connecting renders from the database first, so a dropped event loses nothing.
A failing channel layer never fails a run: the event is logged and dropped.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import redis.exceptions
from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer

from research.engine.contracts import ProgressEvent

logger = logging.getLogger(__name__)

# The event loop of the ASGI server in this process, recorded by the WebSocket consumer.
# The in-memory layer's queues belong to that loop, so worker threads (the embedded mode)
# must hand their sends to it instead of running them on a loop of their own.
_server_loop: asyncio.AbstractEventLoop | None = None


def register_server_loop(loop: asyncio.AbstractEventLoop | None) -> None:
    global _server_loop
    _server_loop = loop


def run_group(run_id: object) -> str:
    """The channel-layer group of one run (names allow only [a-zA-Z0-9._-])."""
    return f"run.{run_id}"


class ChannelLayerEvents:
    """Implements ``research.engine.ports.EventSink`` on the configured channel layer."""

    def __init__(self) -> None:
        self.layer = get_channel_layer()

    def emit(self, event: ProgressEvent) -> None:
        message = {"type": "run.event", "event": event.model_dump(mode="json")}
        publish(self.layer, run_group(event.run_id), message, about=f"run {event.run_id}")


def topic_group(topic_id: object) -> str:
    """The channel-layer group of one question topic (research/live/questions.py)."""
    return f"topic.{topic_id}"


def publish_topic_changed(topic_id: object) -> None:
    """Tell everyone viewing the topic that its turns changed; best effort."""
    publish(
        get_channel_layer(),
        topic_group(topic_id),
        {"type": "topic.changed", "topic_id": str(topic_id)},
        about=f"topic {topic_id}",
    )


def publish(layer: Any, group: str, message: dict[str, Any], *, about: str) -> None:
    """Send ``message`` to ``group``; a broken channel layer is logged, never raised."""
    try:
        loop = _server_loop
        if (
            isinstance(layer, InMemoryChannelLayer)
            and loop is not None
            and loop.is_running()
            and not loop.is_closed()
        ):
            future = asyncio.run_coroutine_threadsafe(layer.group_send(group, message), loop)
            future.result(timeout=5)
        else:
            async_to_sync(layer.group_send)(group, message)
    except (OSError, redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as exc:
        # Redis is down: one line per event, not a traceback; work goes on without it.
        logger.warning("Could not publish a progress event for %s: %s", about, exc)
    except Exception:  # progress display must never break research
        logger.warning("Could not publish a progress event for %s.", about, exc_info=True)
