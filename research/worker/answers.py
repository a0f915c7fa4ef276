"""Writing one answer in the background, from the frozen evidence of its report version.

``answer_turn`` is what the ``answer_question`` actor (research/worker/actors.py) runs. It
claims a waiting turn with one conditional UPDATE and a lease, writes the answer, and saves it
with a second conditional UPDATE that succeeds only while the turn is still being answered —
so a turn cancelled meanwhile keeps its cancellation and the late answer is dropped, and a
message delivered twice answers once. A worker that dies leaves an expired lease; the reaper
hands the turn back (``stale_turns``) and it is answered again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from research.engine.answers import (
    NOT_ANSWERED,
    Answer,
    AnswerDraft,
    AnswerRefused,
    FrozenEvidence,
    validate_answer,
)
from research.engine.ports import ModelClient, ModelError
from research.llm.answers import Turn, answer_prompt, extractive_answer
from research.models import QuestionTurn
from research.worker.events import publish_topic_changed

logger = logging.getLogger(__name__)

_S = QuestionTurn.Status
# A pending turn whose message has not started it within this many seconds was lost.
PENDING_GRACE_SECONDS = 60
# Dramatiq stops an answer after this long (one model call with its retries fits well inside);
# a claim lasts a minute longer, so a turn still claimed after that has lost its worker.
ANSWER_TIME_LIMIT_SECONDS = 10 * 60
ANSWER_LEASE_SECONDS = ANSWER_TIME_LIMIT_SECONDS + 60
# A failed answer's sentence is stored for the reader; longer text is cut.
_ERROR_CHARS = 500


def history_of(turn: QuestionTurn) -> list[Turn]:
    """The topic's earlier answered turns, oldest first (failed and cancelled ones are left
    out: an answer that was refused never becomes context for the next)."""
    earlier = QuestionTurn.objects.filter(
        topic_id=turn.topic_id,
        created_at__lt=turn.created_at,
        status__in=(_S.ANSWERED, _S.NOT_ANSWERED),
    ).order_by("created_at")
    return [Turn(question=t.question, answer=answer_text(t.answer_contract)) for t in earlier]


def answer_text(answer: Answer | None) -> str:
    """An answer as plain text, for history and plain-text clients."""
    if answer is None or not answer.statements:
        return NOT_ANSWERED
    return " ".join(s.text for s in answer.statements)


def compose_answer(
    frozen: FrozenEvidence, question: str, history: list[Turn], model: ModelClient | None
) -> Answer:
    """The checked answer: from the model when it can answer questions, else extractive.
    Raises :class:`AnswerRefused` or :class:`ModelError`."""
    answer_call = getattr(model, "answer", None)
    if answer_call is None:
        draft = extractive_answer(frozen, question)
        return validate_answer(draft, frozen=frozen, mode="extractive")
    result = answer_call(answer_prompt(frozen, question, history))
    draft = result.value
    if not isinstance(draft, AnswerDraft):
        raise ModelError("The model's answer had the wrong shape.")
    return validate_answer(draft, frozen=frozen, mode="model")


def answer_turn(turn_id: str, *, model: ModelClient | None) -> str | None:
    """Answer one waiting turn; returns its final status, or None when it was not ours."""
    now = timezone.now()
    claimed = QuestionTurn.objects.filter(pk=turn_id, status=_S.PENDING).update(
        status=_S.GENERATING,
        attempts=F("attempts") + 1,
        lease_expires_at=now + timedelta(seconds=ANSWER_LEASE_SECONDS),
        error="",
    )
    if claimed != 1:
        return None  # cancelled, answered already, or another worker has it
    turn = QuestionTurn.objects.select_related("topic__snapshot").get(pk=turn_id)
    _announce(turn.topic_id)
    frozen = turn.topic.snapshot.frozen
    fields: dict[str, object]
    try:
        answer = compose_answer(frozen, turn.question, history_of(turn), model)
    except AnswerRefused as refusal:
        fields = {"status": _S.FAILED, "error": str(refusal)[:_ERROR_CHARS]}
    except ModelError as error:
        fields = {"status": _S.FAILED, "error": f"The model could not answer: {error.reason}"}
    else:
        status = _S.ANSWERED if answer.answerable else _S.NOT_ANSWERED
        fields = {"status": status, "answer": answer.model_dump(mode="json")}
    fields["error"] = str(fields.get("error", ""))[:_ERROR_CHARS]
    saved = QuestionTurn.objects.filter(pk=turn_id, status=_S.GENERATING).update(
        completed_at=timezone.now(), lease_expires_at=None, **fields
    )
    _announce(turn.topic_id)
    return str(fields["status"]) if saved else None


def stale_turns() -> list[str]:
    """Turns whose worker died (lease expired) or whose message was lost, made waiting again."""
    now = timezone.now()
    with transaction.atomic():
        expired = list(
            QuestionTurn.objects.filter(status=_S.GENERATING, lease_expires_at__lt=now).values_list(
                "pk", flat=True
            )
        )
        QuestionTurn.objects.filter(pk__in=expired, status=_S.GENERATING).update(
            status=_S.PENDING, lease_expires_at=None
        )
    lost = list(
        QuestionTurn.objects.filter(
            Q(status=_S.PENDING, updated_at__lt=now - timedelta(seconds=PENDING_GRACE_SECONDS))
            | Q(pk__in=expired)
        ).values_list("pk", flat=True)
    )
    # Re-sent now: the next reap waits another grace period before sending it again.
    QuestionTurn.objects.filter(pk__in=lost).update(updated_at=now)
    return [str(pk) for pk in lost]


def _announce(topic_id: object) -> None:
    transaction.on_commit(lambda: publish_topic_changed(topic_id))
