"""Asking a report through the API: topics, questions, answers, cancel and retry.

The same ``research.questions`` calls the Questions tab makes; a run the caller may not see is
a 404, as everywhere. Answers are written in the background: asking answers 202 with the
question's status, and the caller reads the question again until it is ``answered``,
``not_answered`` or ``failed``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal
from uuid import UUID

from django.http import HttpRequest
from ninja import Schema, Status
from pydantic import Field

from research import questions as q
from research.api.base import READ, WRITE, _run, api
from research.api.errors import ApiError
from research.engine.answers import QUESTION_MAX_CHARS, FrozenEvidence
from research.engine.citations import describe_locator
from research.models import QuestionTopic, QuestionTurn, ResearchRun
from research.worker.answers import answer_text

TAGS = ["questions"]


class TopicIn(Schema):
    title: str = Field(min_length=1, max_length=q.TOPIC_TITLE_MAX_CHARS)


class QuestionIn(Schema):
    question: str = Field(min_length=1, max_length=QUESTION_MAX_CHARS)


class CitedOut(Schema):
    evidence_id: str
    excerpt: str
    locator_text: str
    source_title: str
    source_url: str


class StatementOut(Schema):
    kind: Literal["finding", "analysis", "caveat"]
    text: str
    cited: list[CitedOut]


class TurnOut(Schema):
    id: UUID
    topic_id: UUID
    question: str
    status: str
    answer_text: str | None = Field(description="The answer as plain text once it is written.")
    mode: str | None
    statements: list[StatementOut]
    error: str
    created_at: datetime
    completed_at: datetime | None


class TopicOut(Schema):
    id: UUID
    title: str
    report_version: int
    snapshot_hash: str
    created_at: datetime
    turns: list[TurnOut]


def _cited(frozen: FrozenEvidence, ids: list[str]) -> list[dict]:
    known, sources = frozen.evidence_by_id(), frozen.source_by_id()
    found = []
    for evidence_id in ids:
        item = known.get(evidence_id)
        if item is not None:
            source = sources.get(item.source_id)
            found.append(
                {
                    "evidence_id": item.id,
                    "excerpt": item.excerpt,
                    "locator_text": describe_locator(item),
                    "source_title": source.title if source else "",
                    "source_url": source.url if source else "",
                }
            )
    return found


def turn_out(turn: QuestionTurn, frozen: FrozenEvidence) -> dict:
    """A question and its answer as the API and the MCP server show them."""
    answer = turn.answer_contract
    finished = turn.status in (QuestionTurn.Status.ANSWERED, QuestionTurn.Status.NOT_ANSWERED)
    return {
        "id": turn.pk,
        "topic_id": turn.topic_id,
        "question": turn.question,
        "status": turn.status,
        "answer_text": answer_text(answer) if finished else None,
        "mode": answer.mode if answer else None,
        "statements": [
            {"kind": s.kind, "text": s.text, "cited": _cited(frozen, s.evidence_ids)}
            for s in (answer.statements if answer else [])
        ],
        "error": turn.error,
        "created_at": turn.created_at,
        "completed_at": turn.completed_at,
    }


def topic_out(topic: QuestionTopic) -> dict:
    frozen = topic.snapshot.frozen
    return {
        "id": topic.pk,
        "title": topic.title,
        "report_version": topic.snapshot.version,
        "snapshot_hash": topic.snapshot.content_hash,
        "created_at": topic.created_at,
        "turns": [turn_out(turn, frozen) for turn in topic.turns.order_by("created_at")],
    }


def _asking_run(request: HttpRequest, run_id: UUID) -> ResearchRun:
    run = _run(request, run_id)
    if not q.can_ask(request.auth, run):
        raise ApiError(403, "forbidden", "You may read this run's questions but not ask.")
    return run


def _refused(error: q.QuestionError) -> ApiError:
    return ApiError(409, "conflict", str(error))


@api.get("/runs/{run_id}/topics", response={200: list[TopicOut], **READ}, tags=TAGS)
def topic_list(request: HttpRequest, run_id: UUID):
    """The run's question topics, newest report version first, each with its questions."""
    return [topic_out(topic) for topic in q.topics_of(_run(request, run_id))]


@api.post("/runs/{run_id}/topics", response={201: TopicOut, **WRITE}, tags=TAGS)
def topic_new(request: HttpRequest, run_id: UUID, payload: TopicIn):
    """Start a topic on the newest version of the report (409 while there is no report)."""
    run = _asking_run(request, run_id)
    try:
        topic = q.topic_create(run=run, title=payload.title, user=request.auth)
    except q.QuestionError as error:
        raise _refused(error) from None
    return Status(201, topic_out(topic))


@api.get("/runs/{run_id}/topics/{topic_id}", response={200: TopicOut, **READ}, tags=TAGS)
def topic_get(request: HttpRequest, run_id: UUID, topic_id: UUID):
    """One topic with its questions and answers."""
    return topic_out(q.topic_get(_run(request, run_id), topic_id))


@api.post("/runs/{run_id}/topics/{topic_id}/questions", response={202: TurnOut, **WRITE}, tags=TAGS)
def question_new(request: HttpRequest, run_id: UUID, topic_id: UUID, payload: QuestionIn):
    """Ask a question; it is answered in the background (409 while another answer of the
    topic is being written)."""
    topic = q.topic_get(_asking_run(request, run_id), topic_id)
    try:
        turn = q.question_ask(topic=topic, question=payload.question, user=request.auth)
    except q.QuestionError as error:
        raise _refused(error) from None
    return Status(202, turn_out(turn, topic.snapshot.frozen))


@api.get(
    "/runs/{run_id}/topics/{topic_id}/questions/{turn_id}",
    response={200: TurnOut, **READ},
    tags=TAGS,
)
def question_get(request: HttpRequest, run_id: UUID, topic_id: UUID, turn_id: UUID):
    """One question and, once written, its answer."""
    topic = q.topic_get(_run(request, run_id), topic_id)
    return turn_out(q.turn_get(topic, turn_id), topic.snapshot.frozen)


@api.post(
    "/runs/{run_id}/topics/{topic_id}/questions/{turn_id}/{action}",
    response={200: TurnOut, **WRITE},
    tags=TAGS,
)
def question_control(
    request: HttpRequest,
    run_id: UUID,
    topic_id: UUID,
    turn_id: UUID,
    action: Literal["cancel", "retry"],
):
    """Cancel an answer being written, or retry a failed or cancelled one."""
    topic = q.topic_get(_asking_run(request, run_id), topic_id)
    turn = q.turn_get(topic, turn_id)
    try:
        turn = q.answer_cancel(turn=turn) if action == "cancel" else q.answer_retry(turn=turn)
    except q.QuestionError as error:
        raise _refused(error) from None
    return turn_out(turn, topic.snapshot.frozen)
