"""Live progress of one run over a WebSocket, as HTML fragments HTMX swaps in.

The consumer joins the run's channel-layer group, then sends the current state rendered
from the database, so a page that (re)connects is complete whatever it missed. Engine
events only say *what* changed; the consumer re-renders those parts of the workspace from
the database, coalescing bursts of events into one message. Access is checked on connect
and again before every message, so a member removed from the team stops receiving updates
at once. A refusal is the same for a run that does not exist and one the user may not see:
the socket is closed with code 4404 (the WebSocket analogue of 404).
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.db.models import Count, Max
from django.http import Http404
from pydantic import TypeAdapter, ValidationError

from research import telemetry
from research.engine.contracts import ProgressEvent
from research.engine.states import is_terminal
from research.models import ResearchRun, ResearchSource, ResearchStep
from research.selectors import run_get_for_user
from research.web.workspace import live_fragments, run_shape
from research.worker.events import register_server_loop, run_group

NOT_FOUND = 4404
_EVENTS: TypeAdapter[ProgressEvent] = TypeAdapter(ProgressEvent)
ALL_SECTIONS = frozenset({"header", "progress", "timeline", "sources"})
# Parts of the workspace each engine event can change.
SECTIONS_FOR_EVENT: dict[str, frozenset[str]] = {
    "phase_changed": frozenset({"header", "progress", "timeline"}),
    "step_started": frozenset({"header", "timeline", "progress"}),
    "step_finished": frozenset({"header", "timeline", "progress"}),
    "source_updated": frozenset({"sources", "progress"}),
    "counts_updated": frozenset({"progress"}),
    "plan_ready": frozenset({"header", "plan", "controls", "timeline"}),
    "report_ready": frozenset({"header", "controls", "progress", "timeline"}),
}


class RunConsumer(AsyncWebsocketConsumer):
    """``/ws/runs/<run_id>/``: pushes rendered workspace fragments for one run."""

    # Events arriving within this many seconds are sent as one message.
    coalesce_seconds = 0.25
    # How often to look for changes no event announced.
    safety_check_seconds = 5.0

    async def connect(self) -> None:
        register_server_loop(asyncio.get_running_loop())
        self.run_id = str(self.scope["url_route"]["kwargs"]["run_id"])
        self.user = self.scope.get("user") or AnonymousUser()
        self.group = run_group(self.run_id)
        query = parse_qs((self.scope.get("query_string") or b"").decode())
        # The status and plan version the page was rendered with (see workspace.live_url).
        self.shape: str | None = (query.get("shape") or [None])[0]
        self.dirty: set[str] = set()
        self.flusher: asyncio.Task[None] | None = None
        self.checker: asyncio.Task[None] | None = None
        self.seen: tuple[Any, ...] | None = None
        self.joined = False
        await self.accept()
        self.counted = True
        telemetry.websocket_opened()
        # Join first, then read the database: an event sent in between is not lost.
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.joined = True
        await self._push(set(ALL_SECTIONS))
        self.checker = asyncio.ensure_future(self._check_periodically())

    async def disconnect(self, code: int) -> None:
        if getattr(self, "counted", False):
            self.counted = False
            telemetry.websocket_closed()
        for task in (self.flusher, getattr(self, "checker", None)):
            if task is not None:
                task.cancel()
        if getattr(self, "joined", False):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.joined = False

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page sends nothing the server acts on; messages are ignored."""

    async def run_event(self, message: dict[str, Any]) -> None:
        """A progress event from the engine (``{"type": "run.event", "event": {...}}``)."""
        try:
            event = _EVENTS.validate_python(message.get("event"))
        except ValidationError:
            # Not an event this version knows: re-render everything.
            self._mark_dirty(ALL_SECTIONS)
            return
        self._mark_dirty(SECTIONS_FOR_EVENT.get(event.type, ALL_SECTIONS))

    def _mark_dirty(self, sections: frozenset[str]) -> None:
        self.dirty |= sections
        if self.flusher is None or self.flusher.done():
            self.flusher = asyncio.ensure_future(self._flush_soon())

    async def _check_periodically(self) -> None:
        while self.joined:
            await asyncio.sleep(self.safety_check_seconds)
            fingerprint = await database_sync_to_async(self._fingerprint)()
            if fingerprint != self.seen:
                self._mark_dirty(ALL_SECTIONS)
            if fingerprint is None or is_terminal(fingerprint[0]["status"]):
                return

    async def _flush_soon(self) -> None:
        await asyncio.sleep(self.coalesce_seconds)
        while self.dirty:
            sections, self.dirty = self.dirty, set()
            await self._push(sections)

    async def _push(self, sections: set[str]) -> None:
        html = await database_sync_to_async(self._render)(sections)
        if html is None:
            await self._refuse()
        elif html:
            await self.send(text_data=html)

    async def _refuse(self) -> None:
        if self.joined:
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.joined = False
        await self.close(code=NOT_FOUND)

    def _fingerprint(self) -> tuple[Any, ...] | None:
        """What changes whenever the workspace would look different (None: no such run)."""
        run = (
            ResearchRun.objects.filter(pk=self.run_id)
            .values("status", "plan_version", "updated_at")
            .first()
        )
        if run is None:
            return None
        steps = ResearchStep.objects.filter(run_id=self.run_id).aggregate(
            count=Count("id"), started=Max("started_at"), completed=Max("completed_at")
        )
        sources = ResearchSource.objects.filter(run_id=self.run_id).aggregate(
            count=Count("id"), updated=Max("updated_at")
        )
        return (run, tuple(steps.values()), tuple(sources.values()))

    def _render(self, sections: set[str]) -> str | None:
        """Fragments for ``sections``, or None when the user may not (or no longer) see it."""
        # Taken before reading the run, so a change made meanwhile is caught by the next check.
        fingerprint = self._fingerprint()
        try:
            run = run_get_for_user(self.user, self.run_id)
        except Http404:
            return None
        self.seen = fingerprint
        if self.shape is not None and run_shape(run) != self.shape:
            # A new status changes which controls are legal and whether the plan is editable;
            # a new plan version replaces the plan the page shows.
            sections = sections | {"header", "controls", "plan", "progress"}
        self.shape = run_shape(run)
        return live_fragments(run, self.user, sections)
