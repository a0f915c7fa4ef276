"""The MCP server's tools for asking a report: topics, questions and answers.

They act as the server's caller with the API's rules (``research.api.questions``): the same
access checks, the same services and the same JSON. Answers are written in the background;
``ask_question`` returns at once and the agent polls ``get_answer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from asgiref.sync import sync_to_async
from mcp.server.fastmcp import FastMCP

from research import questions as q
from research.api import base
from research.api.questions import topic_out, turn_out


def register_question_tools(
    server: FastMCP,
    caller: Any,
    *,
    guard: Callable[[Callable[..., Any]], Callable[..., Any]],
    writable: Callable[[Any], None],
    error: type[Exception],
) -> None:
    """Add the question tools to ``server`` for ``caller``."""

    def asking_run(run_id: str):
        writable(caller)
        run = base._run(caller, run_id)
        if not q.can_ask(caller.auth, run):
            raise error("You may read this run's questions but not ask.")
        return run

    def jsonable(value: Any) -> Any:
        if isinstance(value, dict):
            return {key: jsonable(item) for key, item in value.items()}
        if isinstance(value, list):
            return [jsonable(item) for item in value]
        if hasattr(value, "isoformat"):
            return value.isoformat()
        return (
            str(value)
            if value is not None and not isinstance(value, int | float | bool | str)
            else value
        )

    @guard
    def topics(run_id: str) -> list[dict]:
        return jsonable([topic_out(t) for t in q.topics_of(base._run(caller, run_id))])

    @guard
    def new_topic(run_id: str, title: str) -> dict:
        try:
            topic = q.topic_create(run=asking_run(run_id), title=title, user=caller.auth)
        except q.QuestionError as exc:
            raise error(str(exc)) from None
        return jsonable(topic_out(topic))

    @guard
    def ask(run_id: str, topic_id: str, question: str) -> dict:
        topic = q.topic_get(asking_run(run_id), topic_id)
        try:
            turn = q.question_ask(topic=topic, question=question, user=caller.auth)
        except q.QuestionError as exc:
            raise error(str(exc)) from None
        return jsonable(turn_out(turn, topic.snapshot.frozen))

    @guard
    def answer(run_id: str, topic_id: str, question_id: str) -> dict:
        topic = q.topic_get(base._run(caller, run_id), topic_id)
        return jsonable(turn_out(q.turn_get(topic, question_id), topic.snapshot.frozen))

    @guard
    def control(run_id: str, topic_id: str, question_id: str, action: str) -> dict:
        topic = q.topic_get(asking_run(run_id), topic_id)
        turn = q.turn_get(topic, question_id)
        if action not in ("cancel", "retry"):
            raise error("action must be cancel or retry.")
        try:
            turn = q.answer_cancel(turn=turn) if action == "cancel" else q.answer_retry(turn=turn)
        except q.QuestionError as exc:
            raise error(str(exc)) from None
        return jsonable(turn_out(turn, topic.snapshot.frozen))

    def tool(function):
        return sync_to_async(function, thread_sensitive=True)

    @server.tool()
    async def list_topics(run_id: str) -> list[dict]:
        """The question topics of a run's report, each with its questions and answers."""
        return await tool(topics)(run_id)

    @server.tool()
    async def start_topic(run_id: str, title: str) -> dict:
        """Start a topic (a thread of questions) on the newest version of a run's report."""
        return await tool(new_topic)(run_id, title)

    @server.tool()
    async def ask_question(run_id: str, topic_id: str, question: str) -> dict:
        """Ask a question about the report; answered from its frozen evidence in the
        background. Poll get_answer with the returned id."""
        return await tool(ask)(run_id, topic_id, question)

    @server.tool()
    async def get_answer(run_id: str, topic_id: str, question_id: str) -> dict:
        """A question and its answer: status, plain text, statements with exact excerpts."""
        return await tool(answer)(run_id, topic_id, question_id)

    @server.tool()
    async def control_answer(run_id: str, topic_id: str, question_id: str, action: str) -> dict:
        """Cancel an answer being written (action "cancel") or retry a failed one ("retry")."""
        return await tool(control)(run_id, topic_id, question_id, action)
