"""Live progress: latency from publishing an event to its receipt by WebSocket viewers.

For 1, 10 and 50 viewers of one run, on the in-memory channel layer and on Redis (skipped
with a note when Redis does not answer), each of a series of progress events is published to
the run's group the way ``research.worker.events`` does, and every viewer's socket is read until
the fragment update arrives. Two paths are timed:

* ``websocket`` — the real consumer (``research.live.consumer``) behind the app's WebSocket
  routes: it coalesces events for ``coalesce_seconds`` (0.25 s by design), re-renders the
  changed parts of the workspace from the database and sends them; measured as the app
  ships and again with coalescing off, to show what transport and rendering cost;
* ``layer`` — the channel layer alone (group send to a plain member channel).

Figures are p50 and p95 over all (event, viewer) receipts.
"""

from __future__ import annotations

import asyncio
import socket
import statistics
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

VIEWERS = (1, 10, 50)
EVENTS = 8
# Longer than the consumer's coalescing window, so each event is delivered on its own.
PAUSE_BETWEEN_EVENTS = 0.3
RECEIVE_TIMEOUT = 20.0


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(share * (len(ordered) - 1))))
    return ordered[index]


def redis_reachable(url: str) -> bool:
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 6379), 1).close()
    except OSError:
        return False
    return True


def _layers(redis_url: str) -> dict[str, dict[str, Any] | None]:
    layers: dict[str, dict[str, Any] | None] = {
        "in_memory": {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    }
    layers["redis"] = (
        {
            "default": {
                "BACKEND": "channels_redis.core.RedisChannelLayer",
                "CONFIG": {"hosts": [redis_url], "prefix": f"bench-{uuid.uuid4().hex[:8]}"},
            }
        }
        if redis_reachable(redis_url)
        else None
    )
    return layers


def _event(run_id: str, number: int) -> dict[str, Any]:
    from research.engine.contracts import CountsUpdated

    event = CountsUpdated(
        run_id=run_id,
        searches=number,
        fetched_sources=number,
        evidence_items=3 * number,
        covered_questions=1,
        total_questions=2,
    )
    return {"type": "run.event", "event": event.model_dump(mode="json")}


def _summary(latencies: list[float]) -> dict[str, Any]:
    return {
        "receipts": len(latencies),
        "p50_ms": round(percentile(latencies, 0.5) * 1000, 1),
        "p95_ms": round(percentile(latencies, 0.95) * 1000, 1),
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1),
    }


async def _socket_receipt(communicator: Any, published: float) -> float:
    await communicator.receive_from(timeout=RECEIVE_TIMEOUT)
    return time.perf_counter() - published


async def _channel_receipt(layer: Any, channel: str, published: float) -> float:
    await asyncio.wait_for(layer.receive(channel), RECEIVE_TIMEOUT)
    return time.perf_counter() - published


async def _websocket_latencies(run_id: str, user: Any, viewers: int) -> list[float]:
    from channels.layers import get_channel_layer
    from channels.routing import URLRouter
    from channels.testing import WebsocketCommunicator

    from research.live.routing import websocket_urlpatterns
    from research.worker.events import run_group

    application = URLRouter(websocket_urlpatterns)
    sockets = []
    for _ in range(viewers):
        communicator = WebsocketCommunicator(application, f"/ws/runs/{run_id}/")
        communicator.scope["user"] = user
        connected, _ = await communicator.connect(timeout=RECEIVE_TIMEOUT)
        if not connected:
            raise RuntimeError("The run's WebSocket refused the benchmark's viewer.")
        await communicator.receive_from(timeout=RECEIVE_TIMEOUT)  # the state sent on connect
        sockets.append(communicator)
    layer = get_channel_layer()
    latencies: list[float] = []
    try:
        for number in range(1, EVENTS + 1):
            published = time.perf_counter()
            await layer.group_send(run_group(run_id), _event(run_id, number))

            latencies += await asyncio.gather(*(_socket_receipt(c, published) for c in sockets))
            await asyncio.sleep(PAUSE_BETWEEN_EVENTS)
    finally:
        for communicator in sockets:
            await communicator.disconnect()
    return latencies


async def _layer_latencies(run_id: str, viewers: int) -> list[float]:
    from channels.layers import get_channel_layer

    from research.worker.events import run_group

    layer = get_channel_layer()
    group = run_group(run_id)
    channels = [await layer.new_channel() for _ in range(viewers)]
    for channel in channels:
        await layer.group_add(group, channel)
    latencies: list[float] = []
    try:
        for number in range(1, EVENTS + 1):
            published = time.perf_counter()
            await layer.group_send(group, _event(run_id, number))

            latencies += await asyncio.gather(
                *(_channel_receipt(layer, c, published) for c in channels)
            )
    finally:
        for channel in channels:
            await layer.group_discard(group, channel)
    return latencies


def _viewable_run() -> tuple[str, Any]:
    from accounts.models import User
    from research.models import ResearchRun, ResearchStep

    owner, _ = User.objects.get_or_create(username="bench-viewer")
    run = ResearchRun.objects.create(
        owner=owner,
        question="Live progress benchmark",
        status="researching",
        plan_version=1,
        usage={"iterations": 2, "searches": 3, "fetched_sources": 4},
    )
    for number in range(6):
        ResearchStep.objects.create(
            run=run,
            kind="search",
            status="succeeded",
            dedupe_key=f"bench-{number}",
            input={"payload": {"query": f"benchmark query {number}"}},
            summary="8 results",
        )
    return str(run.pk), owner


def measure(*, redis_url: str) -> dict[str, Any]:
    """p50/p95 publish-to-receipt latency per layer, path and number of viewers."""
    from django.test import override_settings

    from research.live.consumer import RunConsumer
    from research.live.routing import websocket_urlpatterns

    run_id, owner = _viewable_run()
    results: dict[str, Any] = {
        "events_per_measurement": EVENTS,
        "coalesce_seconds": RunConsumer.coalesce_seconds,
    }
    shipped_window = RunConsumer.coalesce_seconds
    for name, config in _layers(redis_url).items():
        if config is None:
            results[name] = {"skipped": f"Redis is not answering at {redis_url}"}
            continue
        rows: dict[str, Any] = {}
        with override_settings(CHANNEL_LAYERS=config):
            for viewers in VIEWERS:
                row: dict[str, Any] = {
                    "layer": _summary(asyncio.run(_layer_latencies(run_id, viewers)))
                }
                if websocket_urlpatterns:
                    row["websocket"] = _summary(
                        asyncio.run(_websocket_latencies(run_id, owner, viewers))
                    )
                    RunConsumer.coalesce_seconds = 0.0
                    try:
                        row["websocket_no_coalescing"] = _summary(
                            asyncio.run(_websocket_latencies(run_id, owner, viewers))
                        )
                    finally:
                        RunConsumer.coalesce_seconds = shipped_window
                rows[f"{viewers}_viewers"] = row
        results[name] = rows
    if not websocket_urlpatterns:
        results["note"] = "No WebSocket route is registered; only the channel layer was timed."
    return results
