"""Live progress: the engine's EventSink, forwarded to one channel-layer group per run.

Events are an optimisation for people watching; the database is the record. A page
(re)connecting renders from the database first, so a dropped event loses nothing.
A failing channel layer never fails a run: the event is logged and dropped.
"""

from __future__ import annotations

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from pydantic import BaseModel

logger = logging.getLogger(__name__)


def run_group(run_id: object) -> str:
    """The channel-layer group of one run (names allow only [a-zA-Z0-9._-])."""
    return f"run.{run_id}"


class ChannelLayerEvents:
    """Implements ``research.engine.ports.EventSink`` on the configured channel layer."""

    def __init__(self) -> None:
        self.layer = get_channel_layer()

    def emit(self, event: BaseModel) -> None:
        payload = event.model_dump(mode="json")
        try:
            async_to_sync(self.layer.group_send)(
                run_group(payload["run_id"]), {"type": "run.event", "event": payload}
            )
        except Exception:  # progress display must never break research
            logger.warning(
                "Could not publish a progress event for run %s.",
                payload.get("run_id"),
                exc_info=True,
            )
