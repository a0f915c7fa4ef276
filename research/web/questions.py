"""The Questions tab of a report: topics, their threads, asking, cancel, retry, research further.

Each view serves the signed-in URL (``runs/<run_id>/questions/…``) and the share-link URL
(``share/<token>/questions/…``); ``_with_run`` looks the run up either way (404 for what a
person may not see) and says whether they may ask. Threads are rendered by ``thread_html``,
which the live consumer (research/live/questions.py) pushes when an answer changes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import wraps
from typing import Any

from django.contrib import messages
from django.contrib.auth.models import AnonymousUser
from django.contrib.auth.views import redirect_to_login
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from accounts.models import User
from research.access import can_control_run, can_edit_run
from research.engine.answers import NOT_ANSWERED, FrozenEvidence
from research.engine.citations import describe_locator
from research.engine.states import RunStatus
from research.models import QuestionTopic, QuestionTurn, ResearchRun
from research.questions import (
    QuestionError,
    answer_cancel,
    answer_retry,
    can_ask,
    has_questions,
    link_asking_update,
    question_ask,
    research_further,
    topic_create,
    topic_get,
    topics_of,
    turn_get,
)
from research.selectors import run_get_by_share_token, run_get_for_user
from research.services import RunActionError

TEMPLATE = "research/questions.html"


@dataclass(frozen=True)
class Asker:
    """The run a page is about and how the person reached it."""

    run: ResearchRun
    user: User | AnonymousUser
    share_token: str = ""

    @property
    def may_ask(self) -> bool:
        return can_ask(self.user, self.run, share_token=self.share_token)

    @property
    def member(self) -> User | None:
        return self.user if self.user.is_authenticated and not self.share_token else None

    @property
    def may_research_further(self) -> bool:
        """Starting a follow-up run is the refine control: owners and editors only."""
        return self.member is not None and can_control_run(self.user, self.run)

    def url(self, name: str, *args: object) -> str:
        if self.share_token:
            return reverse(f"research:shared_{name}", args=[self.share_token, *args])
        return reverse(f"research:{name}", args=[self.run.pk, *args])

    def live_url(self, topic: QuestionTopic) -> str:
        share = f"?share={self.share_token}" if self.share_token else ""
        return f"/ws/topics/{topic.pk}/{share}"


def _with_run(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @wraps(view)
    def wrapper(
        request: HttpRequest, run_id: object = None, share_token: str = "", **kwargs: Any
    ) -> HttpResponse:
        if share_token:
            run = run_get_by_share_token(share_token)
        elif not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        else:
            run = run_get_for_user(request.user, run_id)
        return view(request, Asker(run, request.user, share_token), **kwargs)

    return wrapper


def _cited(frozen: FrozenEvidence, evidence_ids: list[str]) -> list[dict[str, str]]:
    known, sources = frozen.evidence_by_id(), frozen.source_by_id()
    cited = []
    for evidence_id in evidence_ids:
        item = known.get(evidence_id)
        if item is None:
            continue
        source = sources.get(item.source_id)
        cited.append(
            {
                "id": item.id,
                "excerpt": item.excerpt,
                "where": describe_locator(item),
                "title": (source.title or source.domain) if source else "",
                "url": source.url if source else "",
            }
        )
    return cited


def _turn_view(asker: Asker, topic: QuestionTopic, turn: QuestionTurn) -> dict[str, Any]:
    answer = turn.answer_contract
    statements = [
        {"kind": s.kind, "text": s.text, "cited": _cited(topic.snapshot.frozen, s.evidence_ids)}
        for s in (answer.statements if answer else [])
    ]
    further = (
        turn.status == QuestionTurn.Status.NOT_ANSWERED
        and asker.may_research_further
        and asker.run.status == RunStatus.COMPLETED
    )
    return {
        "turn": turn,
        "statements": statements,
        "mode": answer.mode if answer else "",
        "active": turn.status in QuestionTurn.ACTIVE,
        "retryable": turn.status in QuestionTurn.RETRYABLE,
        "further": further,
        "cancel_url": asker.url("turn_action", topic.pk, turn.pk, "cancel"),
        "retry_url": asker.url("turn_action", topic.pk, turn.pk, "retry"),
        "further_url": asker.url("turn_action", topic.pk, turn.pk, "research-further"),
    }


def thread_context(asker: Asker, topic: QuestionTopic) -> dict[str, Any]:
    turns = list(topic.turns.order_by("created_at"))
    return {
        "topic": topic,
        "turns": [_turn_view(asker, topic, turn) for turn in turns],
        "busy": any(turn.status in QuestionTurn.ACTIVE for turn in turns),
        "may_ask": asker.may_ask,
        "ask_url": asker.url("topic_ask", topic.pk),
        "not_answered": NOT_ANSWERED,
    }


def thread_html(asker: Asker, topic: QuestionTopic) -> str:
    """The thread as the live consumer pushes it (swapped in place by HTMX)."""
    return render_to_string(f"{TEMPLATE}#thread", {**thread_context(asker, topic), "oob": True})


def _page(
    request: HttpRequest, asker: Asker, topic: QuestionTopic | None, *, status: int = 200
) -> HttpResponse:
    run = asker.run
    context: dict[str, Any] = {
        "run": run,
        "asker": asker,
        "read_only": bool(asker.share_token),
        "available": has_questions(run),
        "topics": [(t, asker.url("topic_detail", t.pk)) for t in topics_of(run)],
        "new_topic_url": asker.url("topic_new"),
        "questions_url": asker.url("questions"),
        "report_url": reverse("research:run_shared", args=[asker.share_token])
        if asker.share_token
        else reverse("research:run_report", args=[run.pk]),
        "may_manage": asker.member is not None and can_edit_run(asker.user, run),
        "link_asking_url": reverse("research:questions_link_asking", args=[run.pk]),
    }
    if topic is not None:
        context.update(thread_context(asker, topic), live_url=asker.live_url(topic))
    return render(request, TEMPLATE, context, status=status)


@require_GET
@_with_run
def questions(request: HttpRequest, asker: Asker) -> HttpResponse:
    return _page(request, asker, None)


@require_GET
@_with_run
def topic_detail(request: HttpRequest, asker: Asker, topic_id: object) -> HttpResponse:
    return _page(request, asker, topic_get(asker.run, topic_id))


def _refused(request: HttpRequest, asker: Asker, error: Exception, topic=None) -> HttpResponse:
    if topic is not None and request.htmx:
        return _thread_response(request, asker, topic, error=str(error), status=400)
    messages.error(request, str(error))
    return _page(request, asker, topic, status=400)


def _done(request: HttpRequest, asker: Asker, topic: QuestionTopic) -> HttpResponse:
    """After a change: the thread for HTMX, else back to the topic page."""
    if request.htmx:
        return _thread_response(request, asker, topic)
    return redirect(asker.url("topic_detail", topic.pk))


def _thread_response(
    request: HttpRequest, asker: Asker, topic: QuestionTopic, *, error: str = "", status=200
) -> HttpResponse:
    context = {**thread_context(asker, topic), "thread_error": error}
    return render(request, f"{TEMPLATE}#thread", context, status=status)


@require_POST
@_with_run
def topic_new(request: HttpRequest, asker: Asker) -> HttpResponse:
    if not asker.may_ask:
        raise Http404("No such topic.")
    try:
        topic = topic_create(run=asker.run, title=request.POST.get("title", ""), user=asker.member)
    except QuestionError as error:
        return _refused(request, asker, error)
    return redirect(asker.url("topic_detail", topic.pk))


@require_POST
@_with_run
def topic_ask(request: HttpRequest, asker: Asker, topic_id: object) -> HttpResponse:
    topic = topic_get(asker.run, topic_id)
    if not asker.may_ask:
        raise Http404("No such topic.")
    try:
        question_ask(topic=topic, question=request.POST.get("question", ""), user=asker.member)
    except QuestionError as error:
        return _refused(request, asker, error, topic)
    return _done(request, asker, topic)


@require_POST
@_with_run
def turn_action(
    request: HttpRequest, asker: Asker, topic_id: object, turn_id: object, action: str
) -> HttpResponse:
    topic = topic_get(asker.run, topic_id)
    turn = turn_get(topic, turn_id)
    if not asker.may_ask or (action == "research-further" and not asker.may_research_further):
        raise Http404("No such question.")
    try:
        if action == "cancel":
            answer_cancel(turn=turn)
        elif action == "retry":
            answer_retry(turn=turn)
        elif action == "research-further":
            child = research_further(run=asker.run, turn=turn, user=asker.member)
            return redirect("research:run_detail", child.pk)
        else:
            raise Http404("No such action.")
    except (QuestionError, RunActionError) as error:
        return _refused(request, asker, error, topic)
    return _done(request, asker, topic)


@require_POST
@_with_run
def link_asking(request: HttpRequest, asker: Asker) -> HttpResponse:
    """The owner's switch: may people holding the share link ask questions?"""
    if asker.member is None or not can_edit_run(asker.user, asker.run):
        raise Http404("No such research run.")
    link_asking_update(run=asker.run, allowed=request.POST.get("allowed") == "on")
    return redirect(asker.url("questions"))
