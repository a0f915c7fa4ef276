"""Live threads of question topics over a WebSocket: ``/ws/topics/<topic_id>/``.

The consumer checks that the person may see the topic's run (signed in, or holding the share
link passed as ``?share=``), joins the topic's channel-layer group, then sends the thread as
it is in the database — so a page that (re)connects misses nothing. Each ``topic.changed``
message (sent after a question, an answer, a cancel or a retry is committed) re-renders the
thread; a periodic check catches a change whose message was lost. A refusal closes the socket
with 4404, the same for a topic that does not exist and one the person may not see.
"""

from __future__ import annotations

import asyncio
from typing import Any
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer
from django.contrib.auth.models import AnonymousUser
from django.db.models import Max
from django.http import Http404

from research.models import QuestionTopic, QuestionTurn
from research.selectors import run_get_by_share_token, run_get_for_user
from research.web.questions import Asker, thread_html
from research.worker.events import register_server_loop, topic_group

NOT_FOUND = 4404


class TopicConsumer(AsyncWebsocketConsumer):
    """Pushes the rendered thread of one topic whenever its turns change."""

    # How often to look for a change whose message did not arrive.
    safety_check_seconds = 3.0

    async def connect(self) -> None:
        register_server_loop(asyncio.get_running_loop())
        self.topic_id = str(self.scope["url_route"]["kwargs"]["topic_id"])
        self.user = self.scope.get("user") or AnonymousUser()
        query = parse_qs((self.scope.get("query_string") or b"").decode())
        self.share_token = (query.get("share") or [""])[0]
        self.group = topic_group(self.topic_id)
        self.seen: Any = None
        self.joined = False
        await self.accept()
        await self.channel_layer.group_add(self.group, self.channel_name)
        self.joined = True
        await self._push()
        self.checker = asyncio.ensure_future(self._check_periodically())

    async def disconnect(self, code: int) -> None:
        checker = getattr(self, "checker", None)
        if checker is not None:
            checker.cancel()
        if getattr(self, "joined", False):
            await self.channel_layer.group_discard(self.group, self.channel_name)
            self.joined = False

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        """The page sends nothing the server acts on; messages are ignored."""

    async def topic_changed(self, message: dict[str, Any]) -> None:
        await self._push()

    async def _check_periodically(self) -> None:
        while self.joined:
            await asyncio.sleep(self.safety_check_seconds)
            if await database_sync_to_async(self._fingerprint)() != self.seen:
                await self._push()

    async def _push(self) -> None:
        html = await database_sync_to_async(self._render)()
        if html is None:
            if self.joined:
                await self.channel_layer.group_discard(self.group, self.channel_name)
                self.joined = False
            await self.close(code=NOT_FOUND)
        else:
            await self.send(text_data=html)

    def _fingerprint(self) -> Any:
        return QuestionTurn.objects.filter(topic_id=self.topic_id).aggregate(
            changed=Max("updated_at")
        )["changed"]

    def _render(self) -> str | None:
        """The thread, or None when the person may not (or no longer) see the topic."""
        fingerprint = self._fingerprint()
        topic = (
            QuestionTopic.objects.select_related("snapshot__run").filter(pk=self.topic_id).first()
        )
        if topic is None:
            return None
        try:
            if self.share_token:
                run = run_get_by_share_token(self.share_token)
            else:
                run = run_get_for_user(self.user, topic.snapshot.run_id)
        except Http404:
            return None
        if run.pk != topic.snapshot.run_id:
            return None
        self.seen = fingerprint
        return thread_html(Asker(run, self.user, self.share_token), topic)
