"""Asking a report: who may read and ask, topics, questions, cancel, retry, research further.

Rules (beside ``research.access``):
* Whoever may view a run may read its topics; only a completed or partial report has them.
* Owners, editors and team viewers may ask. People holding the share link may read; they may
  ask only when the owner allows it (``ResearchRun.link_viewers_may_ask``).
* Anyone who may ask may cancel an answer being written or retry a failed or cancelled one.
* A topic belongs to one report version (``ReportSnapshot``); later versions get new topics.
Lookups answer 404 for what a person may not see, like runs do.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction
from django.http import Http404
from django.utils import timezone

from accounts.models import User
from research.access import can_view_run, share_token_matches
from research.engine.answers import QUESTION_MAX_CHARS
from research.engine.states import RunStatus
from research.models import QuestionTopic, QuestionTurn, ReportSnapshot, ResearchRun
from research.services import run_refine
from research.worker.events import publish_topic_changed
from research.worker.snapshots import latest_snapshot, snapshot_freeze
from research.worker.store import evidence_from_row
from research.worker.tasks import enqueue_answer

TOPIC_TITLE_MAX_CHARS = 120
# Questions a topic may hold: a thread, not a chat log without end.
TOPIC_MAX_TURNS = 50
_S = QuestionTurn.Status


class QuestionError(Exception):
    """A request about questions that cannot be done, with a sentence saying why."""


def has_questions(run: ResearchRun) -> bool:
    """Whether the run has a report one can ask about (completed, or ended with a partial one)."""
    return run.report is not None and run.status in (
        RunStatus.COMPLETED,
        RunStatus.BUDGET_EXHAUSTED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
    )


def can_ask(user: User | AnonymousUser, run: ResearchRun, *, share_token: str = "") -> bool:
    """Whether this person may ask questions of ``run``'s report (see the module rules)."""
    if share_token:
        return run.link_viewers_may_ask and share_token_matches(run, share_token)
    return can_view_run(user, run)


def snapshot_current(run: ResearchRun) -> ReportSnapshot | None:
    """The newest frozen version of the run's report. A report saved before versions were
    frozen is frozen now from its own run's evidence (a finished run's evidence no longer
    changes); there is none for a run without a report."""
    if not has_questions(run):
        return None
    found = latest_snapshot(run)
    if found is None:
        with transaction.atomic():
            found = snapshot_freeze(run.pk, run.report_contract, as_contract=evidence_from_row)
    return found


def topic_get(run: ResearchRun, topic_id: object) -> QuestionTopic:
    """A topic of ``run`` (already checked for viewing), else Http404."""
    try:
        return QuestionTopic.objects.select_related("snapshot").get(pk=topic_id, snapshot__run=run)
    except (QuestionTopic.DoesNotExist, ValidationError, ValueError, TypeError):
        raise Http404("No such topic.") from None


def turn_get(topic: QuestionTopic, turn_id: object) -> QuestionTurn:
    try:
        return QuestionTurn.objects.get(pk=turn_id, topic=topic)
    except (QuestionTurn.DoesNotExist, ValidationError, ValueError, TypeError):
        raise Http404("No such question.") from None


def topics_of(run: ResearchRun) -> list[QuestionTopic]:
    return list(
        QuestionTopic.objects.filter(snapshot__run=run)
        .select_related("snapshot")
        .order_by("-snapshot__version", "created_at")
    )


def _clean(text: str, *, limit: int, what: str) -> str:
    text = " ".join((text or "").split())
    if not text:
        raise QuestionError(f"Write the {what}.")
    if len(text) > limit:
        raise QuestionError(f"The {what} is too long; keep it under {limit} characters.")
    return text


def topic_create(*, run: ResearchRun, title: str, user: User | None) -> QuestionTopic:
    """A new topic on the newest version of the run's report."""
    snapshot = snapshot_current(run)
    if snapshot is None:
        raise QuestionError("Questions can be asked once the report is written.")
    title = _clean(title, limit=TOPIC_TITLE_MAX_CHARS, what="topic name")
    return QuestionTopic.objects.create(snapshot=snapshot, title=title, created_by=user)


def question_ask(*, topic: QuestionTopic, question: str, user: User | None) -> QuestionTurn:
    """Queue a question; refused while another answer of the topic is being written."""
    question = _clean(question, limit=QUESTION_MAX_CHARS, what="question")
    if topic.turns.count() >= TOPIC_MAX_TURNS:
        raise QuestionError(
            f"This topic holds its limit of {TOPIC_MAX_TURNS} questions; start a new topic."
        )
    _check_question_quota(topic, user)
    try:
        with transaction.atomic():
            turn = QuestionTurn.objects.create(topic=topic, question=question, asked_by=user)
            _send_after_commit(turn)
    except IntegrityError:
        raise QuestionError(
            "An answer in this topic is still being written; wait for it or cancel it."
        ) from None
    return turn


def _check_question_quota(topic: QuestionTopic, user: User | None) -> None:
    """Refuse a question beyond ``RESEARCH_MAX_QUESTIONS_PER_HOUR`` in the last hour: counted
    per person, and per run for the people asking through its share link (who have no
    account to count them by)."""
    limit = settings.RESEARCH_MAX_QUESTIONS_PER_HOUR
    recent = QuestionTurn.objects.filter(created_at__gte=timezone.now() - timedelta(hours=1))
    if user is not None:
        recent, who = recent.filter(asked_by=user), "You have"
    else:
        recent = recent.filter(topic__snapshot__run_id=topic.snapshot.run_id, asked_by__isnull=True)
        who = "People holding this report's link have"
    if recent.count() >= limit:
        raise QuestionError(
            f"{who} asked {limit} question{'s' if limit != 1 else ''} in the last hour, the "
            "most this server allows; ask again later."
        )


def answer_cancel(*, turn: QuestionTurn) -> QuestionTurn:
    """Stop waiting for an answer; a late answer is dropped (research/worker/answers.py)."""
    changed = QuestionTurn.objects.filter(pk=turn.pk, status__in=QuestionTurn.ACTIVE).update(
        status=_S.CANCELLED,
        error="Cancelled before the answer was finished.",
        lease_expires_at=None,
        completed_at=timezone.now(),
    )
    if changed != 1:
        raise QuestionError("Only an answer still being written can be cancelled.")
    transaction.on_commit(lambda: publish_topic_changed(turn.topic_id))
    turn.refresh_from_db()
    return turn


def answer_retry(*, turn: QuestionTurn) -> QuestionTurn:
    """Ask a failed or cancelled question again (the same turn, answered anew)."""
    try:
        with transaction.atomic():
            changed = QuestionTurn.objects.filter(
                pk=turn.pk, status__in=QuestionTurn.RETRYABLE
            ).update(
                status=_S.PENDING,
                error="",
                answer=None,
                completed_at=None,
                updated_at=timezone.now(),
            )
            if changed != 1:
                raise QuestionError("Only a failed or cancelled answer can be retried.")
            _send_after_commit(turn)
    except IntegrityError:
        raise QuestionError(
            "An answer in this topic is still being written; wait for it or cancel it."
        ) from None
    turn.refresh_from_db()
    return turn


def link_asking_update(*, run: ResearchRun, allowed: bool) -> ResearchRun:
    """Let people holding the share link ask questions (or stop them). Call after checking
    that the person may edit the run."""
    ResearchRun.objects.filter(pk=run.pk).update(
        link_viewers_may_ask=allowed, updated_at=timezone.now()
    )
    run.link_viewers_may_ask = allowed
    return run


def research_further(*, run: ResearchRun, turn: QuestionTurn, user: User) -> ResearchRun:
    """Start a follow-up run of the report's research with the unanswered question added."""
    if turn.status != _S.NOT_ANSWERED:
        raise QuestionError("Only a question the evidence does not answer starts new research.")
    return run_refine(run=run, instruction=f"Also answer this question: {turn.question}", user=user)


def _send_after_commit(turn: QuestionTurn) -> None:
    enqueue_answer(turn.pk)
    transaction.on_commit(lambda: publish_topic_changed(turn.topic_id))
