"""Live progress over the WebSocket: session-authenticated, Origin-checked, refused (close
code 4404) for anyone who may not see the run, state from the database first, then rendered
fragments for each burst of engine events."""

from __future__ import annotations

import pytest
from asgiref.sync import async_to_sync
from channels.auth import AuthMiddlewareStack
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.routing import URLRouter
from channels.security.websocket import AllowedHostsOriginValidator
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client

from accounts.models import Membership
from research.engine.contracts import PhaseChanged, SourceUpdated, StepStarted
from research.live.consumer import NOT_FOUND, RunConsumer
from research.live.routing import websocket_urlpatterns
from research.models import ResearchRun
from research.web.workspace import live_url
from research.worker.events import ChannelLayerEvents, run_group
from tests.web.factories import awaiting_run, make_run, make_source, make_step

pytestmark = pytest.mark.django_db(transaction=True)

application = AllowedHostsOriginValidator(AuthMiddlewareStack(URLRouter(websocket_urlpatterns)))


@pytest.fixture(autouse=True)
def prompt_consumer(monkeypatch):
    """Push at once, and leave the periodic safety check out unless a test wants it."""
    monkeypatch.setattr(RunConsumer, "coalesce_seconds", 0)
    monkeypatch.setattr(RunConsumer, "safety_check_seconds", 3600)


def session_cookie(user) -> bytes:
    if user is None:
        return b""
    client = Client()
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


def communicator(user, path: str, origin: bytes = b"http://localhost") -> WebsocketCommunicator:
    headers = [(b"origin", origin), (b"host", b"localhost")]
    cookie = session_cookie(user)
    if cookie:
        headers.append((b"cookie", cookie))
    return WebsocketCommunicator(application, path, headers=headers)


def ws_path(run: ResearchRun) -> str:
    return live_url(run)


async def _db(function, *args, **kwargs):
    return await database_sync_to_async(function)(*args, **kwargs)


def _set(run: ResearchRun, **fields) -> None:
    ResearchRun.objects.filter(pk=run.pk).update(**fields)


def _scenario(user, path, steps):
    """Connect, run ``steps`` (async callables taking the communicator), disconnect."""

    socket = communicator(user, path)

    async def go():
        connected, _ = await socket.connect()
        try:
            return connected, [await step(socket) for step in steps]
        finally:
            await socket.disconnect()

    return async_to_sync(go)()


async def receive(socket) -> dict:
    return await socket.receive_output(timeout=5)


@pytest.fixture
def people(owner, editor, viewer, outsider):
    return {
        "owner": owner,
        "editor": editor,
        "viewer": viewer,
        "outsider": outsider,
        "anonymous": None,
    }


@pytest.mark.parametrize("role", ["owner", "editor", "viewer", "outsider", "anonymous"])
def test_only_people_who_may_see_the_run_receive_it(role, people, owner, team):
    run = make_run(
        owner, status="researching", team=team, visibility="link", question="Live question"
    )
    make_step(run, "search", payload={"query": "live query"})
    connected, (message,) = _scenario(people[role], ws_path(run), [receive])
    assert connected  # accepted, then refused with 4404 when not allowed
    if role in ("owner", "editor", "viewer"):
        assert message["type"] == "websocket.send"
        html = message["text"]
        assert '<section id="run-header"' in html and "Live question" in html
        assert '<section id="run-timeline"' in html and "Searching “live query”" in html
        assert '<section id="run-progress"' in html and '<section id="run-sources"' in html
    else:
        assert message == {"type": "websocket.close", "code": NOT_FOUND}


def test_a_share_token_does_not_open_the_live_feed(owner, team):
    run = make_run(owner, status="researching", team=team, visibility="link")
    path = f"/ws/runs/{run.pk}/?share={run.share_token}"
    connected, (message,) = _scenario(None, path, [receive])
    assert message == {"type": "websocket.close", "code": NOT_FOUND}


def test_missing_run_is_refused_like_a_forbidden_one(owner):
    path = "/ws/runs/00000000-0000-0000-0000-000000000000/"
    connected, (message,) = _scenario(owner, path, [receive])
    assert message == {"type": "websocket.close", "code": NOT_FOUND}


def test_foreign_origin_is_refused(owner):
    run = make_run(owner, status="researching")

    socket = communicator(owner, ws_path(run), origin=b"https://evil.example")

    async def go():
        connected, _ = await socket.connect()
        await socket.disconnect()
        return connected

    assert async_to_sync(go)() is False


def test_events_push_fresh_fragments_from_the_database(owner):
    run = make_run(owner, status="researching")
    layer = get_channel_layer()

    async def new_step(socket):
        step = await _db(
            make_step, run, "search", payload={"query": "second query"}, status="running"
        )
        await layer.group_send(
            run_group(run.pk),
            {
                "type": "run.event",
                "event": StepStarted(
                    run_id=str(run.pk), step_id=str(step.pk), kind="search"
                ).model_dump(mode="json"),
            },
        )
        return await receive(socket)

    async def new_source(socket):
        await _db(make_source, run, title="A freshly found page", status="candidate")
        await layer.group_send(
            run_group(run.pk),
            {
                "type": "run.event",
                "event": SourceUpdated(
                    run_id=str(run.pk), source_id="s", status="candidate"
                ).model_dump(mode="json"),
            },
        )
        return await receive(socket)

    steps = [receive, new_step, new_source]
    _, (initial, step_message, source_message) = _scenario(owner, ws_path(run), steps)
    assert "second query" not in initial["text"]
    assert "Searching “second query”" in step_message["text"]
    timeline = '<section id="run-timeline" class="card timeline" hx-swap-oob="true"'
    assert timeline in step_message["text"]
    assert '<section id="run-sources"' not in step_message["text"]
    assert "A freshly found page" in source_message["text"]
    assert '<section id="run-timeline"' not in source_message["text"]


def test_a_status_change_reloads_plan_and_controls_over_http(owner):
    run = awaiting_run(owner, status="planning", plan=None, plan_version=0)
    path = ws_path(run)  # rendered while planning
    layer = get_channel_layer()

    async def plan_ready(socket):
        await _db(_set, run, status="awaiting_approval")
        await layer.group_send(
            run_group(run.pk),
            {
                "type": "run.event",
                "event": PhaseChanged(
                    run_id=str(run.pk), phase="plan_ready", status="awaiting_approval"
                ).model_dump(mode="json"),
            },
        )
        return await receive(socket)

    _, (_, message) = _scenario(owner, path, [receive, plan_ready])
    html = message["text"]
    assert '<div id="live-triggers" hidden hx-swap-oob="innerHTML">' in html
    assert f'hx-get="/runs/{run.pk}/plan/" hx-trigger="load" hx-target="#run-plan"' in html
    assert f'hx-get="/runs/{run.pk}/controls/" hx-trigger="load"' in html


def test_a_page_rendered_before_the_plan_was_ready_catches_up_on_connect(owner):
    run = awaiting_run(owner)  # the plan is ready now ...
    path = f"/ws/runs/{run.pk}/?shape=planning.0"  # ... but the page was rendered while planning
    _, (message,) = _scenario(owner, path, [receive])
    assert f'hx-get="/runs/{run.pk}/plan/"' in message["text"]


def test_removed_member_stops_receiving_updates(owner, team, editor):
    run = make_run(owner, status="researching", team=team, visibility="team")
    layer = get_channel_layer()

    async def removed(socket):
        await _db(lambda: Membership.objects.filter(user=editor, team=team).delete())
        await layer.group_send(
            run_group(run.pk),
            {
                "type": "run.event",
                "event": PhaseChanged(
                    run_id=str(run.pk), phase="searching", status="researching"
                ).model_dump(mode="json"),
            },
        )
        return await receive(socket)

    _, (initial, message) = _scenario(editor, ws_path(run), [receive, removed])
    assert initial["type"] == "websocket.send"
    assert message == {"type": "websocket.close", "code": NOT_FOUND}


def test_engine_events_reach_a_connected_page(owner):
    """Through the real EventSink the orchestrator uses, not a hand-made message."""
    run = make_run(owner, status="researching")

    async def emit(socket):
        await _db(
            make_step, run, "read", payload={"url": "https://example.org/a"}, status="running"
        )
        await _db(
            ChannelLayerEvents().emit,
            PhaseChanged(run_id=str(run.pk), phase="reading_source", status="researching"),
        )
        return await receive(socket)

    _, (_, message) = _scenario(owner, ws_path(run), [receive, emit])
    assert "Reading example.org" in message["text"]


def test_a_change_no_event_announced_is_still_shown(owner, monkeypatch):
    """If the channel layer loses an event, the periodic check refreshes the page anyway."""
    monkeypatch.setattr(RunConsumer, "safety_check_seconds", 0.05)
    run = make_run(owner, status="researching")

    async def silent_change(socket):
        await _db(make_step, run, "search", payload={"query": "unannounced query"})
        return await receive(socket)

    _, (_, message) = _scenario(owner, ws_path(run), [receive, silent_change])
    assert "Searching “unannounced query”" in message["text"]
