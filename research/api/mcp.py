"""An MCP server (the official ``mcp`` SDK) exposing research as tools for agents.

Each server acts as one person — a personal API token's or, for local use, a named user's — with
exactly the API's rules: the same access checks, the same services, the same JSON as
``/api/v1/`` (research.api.endpoints). Research is durable: ``start_research`` returns a run id at
once and the agent polls ``get_status``; nothing lives only in this process.
"""

from __future__ import annotations

import contextlib
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.http import Http404
from mcp.server.fastmcp import FastMCP

from accounts.models import ApiToken, User
from research import services
from research.api import base, reads
from research.api.errors import ApiError
from research.api.mcp_questions import register_question_tools
from research.models import ResearchRun, ResearchSource, ResearchStep


class ToolError(Exception):
    """A tool call that cannot be done; the SDK returns the sentence to the agent."""


class Caller:
    """What the API's helpers read from a request: who calls, with which token, and how to
    make an absolute link."""

    method = "POST"

    def __init__(self, user: User, token: ApiToken | None) -> None:
        self.auth = user
        self.api_token = token

    def build_absolute_uri(self, path: str) -> str:
        return settings.WEBHOOK_PUBLIC_URL.rstrip("/") + path


def _guard(function):
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        except ApiError as exc:
            raise ToolError(exc.message) from None
        except Http404 as exc:
            raise ToolError(str(exc) or "No such research run.") from None
        except services.QuotaExceeded as exc:
            raise ToolError(str(exc)) from None
        except services.RunActionError as exc:
            raise ToolError(str(exc)) from None

    return call


def _writable(caller: Caller) -> None:
    if caller.api_token is not None and caller.api_token.read_only:
        raise ToolError(
            "This token is read-only; create a token without that limit to start or approve research."
        )


def build_server(user: User, token: ApiToken | None = None) -> FastMCP:
    caller = Caller(user, token)
    server = FastMCP(
        "deep-research",
        instructions=(
            "Deep research with reviewed plans and verified citations. Start with start_research; "
            "poll get_status until the plan awaits approval (approve_plan) and then until the run "
            "is completed; get_report returns every citation with its exact excerpt and URL."
        ),
    )

    @_guard
    def start(question: str, depth: str, domains: list[str], auto_approve: bool) -> dict:
        _writable(caller)
        policy = {"mode": "only_domains", "domains": domains} if domains else None
        if depth not in ResearchRun.Depth.values:
            raise ToolError("depth must be quick, standard or thorough.")
        try:
            run = services.run_create(
                owner=user,
                question=question,
                depth=depth,
                source_policy=policy,
                team=token.team if token is not None else None,
                visibility="team" if token is not None and token.team_id else "private",
                auto_approve=auto_approve,
            )
        except services.QueueUnavailable as exc:
            run = ResearchRun.objects.get(pk=exc.run_id)
        run = ResearchRun.objects.select_related("owner", "team").get(pk=run.pk)
        return _status(run)

    def _status(run: ResearchRun) -> dict:
        out = base.run_out(caller, run)
        steps = ResearchStep.objects.filter(run=run).order_by("-created_at")[:5]
        return {
            "run_id": str(run.pk),
            "status": run.status,
            "outcome": out["outcome"],
            "plan_version": run.plan_version,
            "plan": run.plan if run.status == "awaiting_approval" else None,
            "controls": out["controls"],
            "usage": out["usage"],
            "recent_steps": [f"{s.kind}: {s.summary or s.status}" for s in steps],
            "links": out["links"],
        }

    @_guard
    def status(run_id: str) -> dict:
        return _status(base._run(caller, run_id))

    @_guard
    def approve(run_id: str, version: int) -> dict:
        _writable(caller)
        run = base._run(caller, run_id, need="control")
        # QueueUnavailable: approved and committed; the reaper queues it when the broker is back.
        with contextlib.suppress(services.QueueUnavailable):
            services.plan_approve(run=run, expected_version=version)
        return _status(ResearchRun.objects.select_related("owner", "team").get(pk=run.pk))

    @_guard
    def report(run_id: str) -> dict:
        run = base._run(caller, run_id)
        out = reads._report_out(caller, run, lambda eid: f"/api/v1/runs/{run.pk}/evidence/{eid}")
        return {
            "run_id": str(run.pk),
            "status": run.status,
            "report": out["report"].model_dump(mode="json"),
            "citations": [
                {
                    "number": c["number"],
                    "evidence_ids": c["evidence_ids"],
                    "excerpt": c["excerpt"],
                    "locator": c["locator"],
                    "url": c["link"] or c["source"]["url"],
                    "title": c["source"]["title"],
                }
                for c in out["citations"]
            ],
        }

    @_guard
    def recent(limit: int) -> list[dict]:
        runs = base._visible_runs(caller).select_related("owner", "team").order_by("-created_at")
        return [
            {
                "run_id": str(r.pk),
                "question": r.question,
                "status": r.status,
                "created_at": r.created_at.isoformat(),
            }
            for r in runs[: max(1, min(limit, 50))]
        ]

    @_guard
    def sources(run_id: str, limit: int) -> list[dict]:
        run = base._run(caller, run_id)
        rows = ResearchSource.objects.filter(run=run).defer(
            "snapshot_text", "snapshot_blocks", "metadata"
        )
        return [
            {
                "id": str(s.pk),
                "url": s.canonical_url or s.url,
                "title": s.title,
                "status": s.status,
                "source_class": s.source_class,
                "domain": s.domain,
            }
            for s in rows.order_by("created_at")[: max(1, min(limit, 200))]
        ]

    def tool(function):
        return sync_to_async(function, thread_sensitive=True)

    @server.tool()
    async def start_research(
        question: str,
        depth: str = "quick",
        domains: list[str] | None = None,
        auto_approve: bool = False,
    ) -> dict:
        """Start a research run; returns its id and status at once. The plan then waits for
        approve_plan unless auto_approve. ``domains`` limits the web to those sites."""
        return await tool(start)(question, depth, domains or [], auto_approve)

    @server.tool()
    async def get_status(run_id: str) -> dict:
        """Where a run stands: status, outcome, plan (while it awaits approval), recent steps."""
        return await tool(status)(run_id)

    @server.tool()
    async def approve_plan(run_id: str, version: int) -> dict:
        """Approve the plan version you reviewed (get_status shows plan_version)."""
        return await tool(approve)(run_id, version)

    @server.tool()
    async def get_report(run_id: str) -> dict:
        """The report with every citation: number, exact excerpt, where it is, source URL."""
        return await tool(report)(run_id)

    @server.tool()
    async def list_recent_runs(limit: int = 10) -> list[dict]:
        """Your most recent runs (and your teams' shared ones)."""
        return await tool(recent)(limit)

    @server.tool()
    async def list_sources(run_id: str, limit: int = 50) -> list[dict]:
        """The sources a run found, with their status and class."""
        return await tool(sources)(run_id, limit)

    register_question_tools(server, caller, guard=_guard, writable=_writable, error=ToolError)
    return server
