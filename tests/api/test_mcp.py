"""The MCP server, exercised by the official SDK's client: a quick research on the frozen web
with the extractive backend (start, approve, poll, report, every citation a verified excerpt),
the same access rules as the API, and the stdio transport of ``manage.py mcp``."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import sys
from pathlib import Path

import pytest
from django.test import override_settings
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.memory import create_connected_server_and_client_session

from accounts.services import api_token_create
from research.api.mcp import build_server
from research.engine.ledger import normalize_for_matching
from research.models import ResearchEvidence
from research.worker.actors import advance_run
from tests.cli.conftest import command_line  # noqa: F401 (the fixture)
from tests.web.factories import completed_run

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How many daily boardings did Harwick Metro Line 3 have, and what did it cost to build?"
ROOT = Path(__file__).resolve().parents[2]


def _data(result) -> object:
    assert not result.isError, result.content
    if result.structuredContent is not None:
        content = result.structuredContent
        return content.get("result", content) if set(content) == {"result"} else content
    return json.loads(result.content[0].text)


def _assert_citations_verified(run_id: str, report: dict) -> None:
    """Every citation of the MCP report is the excerpt stored at its place in its source."""
    rows = {
        r.pk: r for r in ResearchEvidence.objects.filter(run_id=run_id).select_related("source")
    }
    for citation in report["citations"]:
        row = rows[citation["evidence_ids"][0]]
        located = row.source.snapshot_text[row.locator["start"] : row.locator["end"]]
        assert normalize_for_matching(located) == normalize_for_matching(citation["excerpt"])


async def _calls(server, steps):
    async with create_connected_server_and_client_session(server) as session:
        return await steps(session)


def test_research_through_mcp_with_verified_citations(owner, web):
    _, secret = api_token_create(user=owner, name="agent")
    from accounts.models import ApiToken

    server = build_server(owner, ApiToken.objects.get())
    assert secret

    async def steps(session: ClientSession):
        names = {tool.name for tool in (await session.list_tools()).tools}
        assert names == {
            "start_research",
            "get_status",
            "approve_plan",
            "get_report",
            "list_recent_runs",
            "list_sources",
            "list_topics",
            "start_topic",
            "ask_question",
            "get_answer",
            "control_answer",
        }
        started = _data(await session.call_tool("start_research", {"question": QUESTION}))
        run_id = started["run_id"]
        await asyncio.to_thread(advance_run, run_id)
        status = _data(await session.call_tool("get_status", {"run_id": run_id}))
        assert status["status"] == "awaiting_approval" and status["plan"]
        approved = _data(
            await session.call_tool(
                "approve_plan", {"run_id": run_id, "version": status["plan_version"]}
            )
        )
        assert approved["status"] == "queued"
        await asyncio.to_thread(advance_run, run_id)
        done = _data(await session.call_tool("get_status", {"run_id": run_id}))
        assert done["status"] in ("completed", "budget_exhausted"), done["outcome"]
        report = _data(await session.call_tool("get_report", {"run_id": run_id}))
        sources = _data(await session.call_tool("list_sources", {"run_id": run_id}))
        recent = _data(await session.call_tool("list_recent_runs", {}))
        return run_id, report, sources, recent

    with override_settings(**web.django_settings()):
        run_id, report, sources, recent = asyncio.run(_calls(server, steps))
    assert report["citations"] and sources and recent[0]["run_id"] == run_id
    _assert_citations_verified(run_id, report)
    assert all(citation["url"].startswith("http") for citation in report["citations"])


def test_mcp_follows_the_access_rules(owner, outsider, viewer, team):
    run = completed_run(owner, team=team, visibility="team")
    _, _ = api_token_create(user=owner, name="reader", read_only=True)
    from accounts.models import ApiToken

    reader = build_server(owner, ApiToken.objects.get(name="reader"))

    async def as_outsider(session: ClientSession):
        return await session.call_tool("get_report", {"run_id": str(run.pk)})

    async def as_viewer(session: ClientSession):
        report = await session.call_tool("get_report", {"run_id": str(run.pk)})
        approve = await session.call_tool("approve_plan", {"run_id": str(run.pk), "version": 2})
        return report, approve

    async def as_reader(session: ClientSession):
        return await session.call_tool("start_research", {"question": "Anything?"})

    hidden = asyncio.run(_calls(build_server(outsider), as_outsider))
    assert hidden.isError and "No such research run" in hidden.content[0].text
    report, approve = asyncio.run(_calls(build_server(viewer), as_viewer))
    assert not report.isError and approve.isError
    refused = asyncio.run(_calls(reader, as_reader))
    assert refused.isError and "read-only" in refused.content[0].text


def test_manage_py_mcp_serves_the_sdk_client_over_stdio(command_line):  # noqa: F811
    params = StdioServerParameters(
        command=sys.executable,
        args=["manage.py", "mcp", "--user", "demo"],
        # The embedded default: the server process works on the runs it starts.
        env={**command_line.env, "EMBEDDED_WORKER": "true"},
        cwd=str(ROOT),
    )

    async def poll(session: ClientSession, run_id: str, wanted: set[str]) -> dict:
        for _ in range(240):
            status = _data(await session.call_tool("get_status", {"run_id": run_id}))
            if status["status"] in wanted:
                return status
            await asyncio.sleep(0.25)
        raise AssertionError(f"run {run_id} is still {status['status']}")

    async def steps():
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {tool.name for tool in (await session.list_tools()).tools}
            started = _data(await session.call_tool("start_research", {"question": QUESTION}))
            run_id = started["run_id"]
            waiting = await poll(session, run_id, {"awaiting_approval"})
            await session.call_tool(
                "approve_plan", {"run_id": run_id, "version": waiting["plan_version"]}
            )
            done = await poll(session, run_id, {"completed", "budget_exhausted", "failed"})
            report = _data(await session.call_tool("get_report", {"run_id": run_id}))
            recent = _data(await session.call_tool("list_recent_runs", {"limit": 5}))
            return tools, started, done, report, recent

    tools, started, done, report, recent = asyncio.run(steps())
    assert "start_research" in tools and "get_report" in tools
    assert done["status"] in ("completed", "budget_exhausted"), done
    assert started["run_id"] in [item["run_id"] for item in recent]
    # Every citation is an excerpt found at its place in the stored source, in the database
    # the server process wrote (the run outlives the server).
    assert report["citations"]
    with sqlite3.connect(command_line.data_dir / "db.sqlite3") as db:
        for citation in report["citations"]:
            locator, snapshot = db.execute(
                "SELECT e.locator, s.snapshot_text FROM research_researchevidence e "
                "JOIN research_researchsource s ON s.id = e.source_id WHERE e.id = ?",
                [citation["evidence_ids"][0]],
            ).fetchone()
            place = json.loads(locator)
            located = snapshot[place["start"] : place["end"]]
            assert normalize_for_matching(located) == normalize_for_matching(citation["excerpt"])
    assert command_line.run_status(started["run_id"]) == done["status"]


def _http_factory(app):
    import httpx

    def factory(headers=None, timeout=None, auth=None) -> httpx.AsyncClient:
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app),
            base_url="http://testserver",
            headers=headers,
            timeout=timeout,
            auth=auth,
        )

    return factory


def test_streamable_http_at_mcp_with_bearer_tokens(owner, outsider):
    import httpx
    from django.core.asgi import get_asgi_application
    from mcp.client.streamable_http import streamable_http_client

    from accounts.services import api_token_revoke
    from research.api.mcp_http import with_mcp

    # The app as config/asgi.py mounts it (importing that module would start its embedded worker).
    application = with_mcp(get_asgi_application())

    run = completed_run(owner)
    token, secret = api_token_create(user=owner, name="http agent")

    async def session_calls(bearer: str):
        client = _http_factory(application)(headers={"Authorization": f"Bearer {bearer}"})
        async with (
            client,
            streamable_http_client("http://testserver/mcp", http_client=client) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            report = _data(await session.call_tool("get_report", {"run_id": str(run.pk)}))
            recent = _data(await session.call_tool("list_recent_runs", {}))
            return report, recent

    report, recent = asyncio.run(session_calls(secret))
    assert report["citations"] and recent[0]["run_id"] == str(run.pk)
    rows = {r.pk: r for r in ResearchEvidence.objects.filter(run=run)}
    assert all(c["excerpt"] == rows[c["evidence_ids"][0]].excerpt for c in report["citations"])

    async def raw(headers):
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://testserver"
        ) as client:
            return await client.post("/mcp", json={}, headers=headers)

    anonymous = asyncio.run(raw({}))
    assert anonymous.status_code == 401 and anonymous.json()["code"] == "unauthenticated"
    api_token_revoke(user=owner, token_id=token.pk)
    revoked = asyncio.run(raw({"Authorization": f"Bearer {secret}"}))
    assert revoked.status_code == 401


def test_research_over_streamable_http_with_verified_citations(owner, web):
    from django.core.asgi import get_asgi_application
    from mcp.client.streamable_http import streamable_http_client

    from research.api.mcp_http import with_mcp

    application = with_mcp(get_asgi_application())
    _, secret = api_token_create(user=owner, name="http research agent")

    async def steps():
        client = _http_factory(application)(headers={"Authorization": f"Bearer {secret}"})
        async with (
            client,
            streamable_http_client("http://testserver/mcp", http_client=client) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            started = _data(await session.call_tool("start_research", {"question": QUESTION}))
            run_id = started["run_id"]
            await asyncio.to_thread(advance_run, run_id)
            status = _data(await session.call_tool("get_status", {"run_id": run_id}))
            assert status["status"] == "awaiting_approval", status
            await session.call_tool(
                "approve_plan", {"run_id": run_id, "version": status["plan_version"]}
            )
            await asyncio.to_thread(advance_run, run_id)
            done = _data(await session.call_tool("get_status", {"run_id": run_id}))
            report = _data(await session.call_tool("get_report", {"run_id": run_id}))
            return run_id, done, report

    with override_settings(**web.django_settings()):
        run_id, done, report = asyncio.run(steps())
    assert done["status"] in ("completed", "budget_exhausted"), done["outcome"]
    assert report["citations"]
    _assert_citations_verified(run_id, report)
