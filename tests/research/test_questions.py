"""Asking a report: frozen evidence per version, extractive and model answers, the one-answer-
per-topic rule, cancel, retry, the reaper and who may ask."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from research.engine.answers import UNSUPPORTED_LABEL_PREFIXES, FrozenEvidence
from research.engine.contracts import Report
from research.llm.config import LLMConfig
from research.llm.openai_compatible import OpenAICompatibleClient
from research.models import QuestionTurn, ReportSnapshot, ResearchRun
from research.questions import (
    QuestionError,
    answer_cancel,
    answer_retry,
    can_ask,
    question_ask,
    research_further,
    snapshot_current,
    topic_create,
)
from research.services import run_refine
from research.worker.answers import answer_turn, stale_turns
from research.worker.store import DjangoStore
from tests.llm.fake_openai import FakeOpenAIServer, error, json_completion
from tests.web.factories import completed_run, make_evidence, make_source

FARES = "The adult single fare rises from 2.80 to 3.10 euros on 5 January 2025."
DEPOT = "The new depot at the northern terminus opened in March 2024 with 40 tram bays."
_S = QuestionTurn.Status


@pytest.fixture
def fake_openai():
    server = FakeOpenAIServer()
    yield server
    server.close()


def model_for(server: FakeOpenAIServer) -> OpenAICompatibleClient:
    config = LLMConfig(
        base_url=server.base_url, api_key="test-key", model="fake-model", timeout_seconds=2.0
    )
    return OpenAICompatibleClient(config, sleep=lambda _seconds: None)


def run_with(owner, *excerpts: str, **fields) -> ResearchRun:
    run = completed_run(owner, sources=1, **fields)
    for excerpt in excerpts:
        make_evidence(run, make_source(run), excerpt=excerpt, heading="Overview")
    return run


def ask(run: ResearchRun, question: str, user=None) -> QuestionTurn:
    topic = topic_create(run=run, title="Follow-up", user=user or run.owner)
    return question_ask(topic=topic, question=question, user=user or run.owner)


def evidence_id(run: ResearchRun, excerpt: str) -> str:
    return run.evidence.get(excerpt=excerpt).pk


# -- frozen evidence ---------------------------------------------------------------------------


def test_saving_a_report_freezes_one_version_per_distinct_content(owner):
    run = run_with(owner, FARES)
    report = run.report_contract
    store = DjangoStore(lease_owner=None)
    store.save_report(str(run.pk), report=report)
    store.save_report(str(run.pk), report=report)  # a worker repeating its last step
    assert ReportSnapshot.objects.filter(run=run).count() == 1
    first = ReportSnapshot.objects.get(run=run)
    assert {e.excerpt for e in first.frozen.evidence} >= {FARES}
    assert first.frozen.citations  # claim id → evidence ids of the saved report

    revised = report.model_copy(update={"title": "A revised title"})
    store.save_report(str(run.pk), report=revised)
    versions = list(ReportSnapshot.objects.filter(run=run).order_by("version"))
    assert [v.version for v in versions] == [1, 2]
    assert versions[0].content_hash == first.content_hash
    assert versions[0].frozen.report.title == report.title


def test_a_snapshot_row_cannot_be_changed(owner):
    snapshot = snapshot_current(run_with(owner, FARES))
    snapshot.version = 9
    with pytest.raises(ValueError, match="immutable"):
        snapshot.save()


def test_research_further_leaves_the_frozen_version_unchanged(owner):
    run = run_with(owner, FARES)
    before = snapshot_current(run)
    child = run_refine(run=run, instruction="Also look at the depot.", user=owner)
    make_evidence(child, child.sources.first(), excerpt=DEPOT)
    after = ReportSnapshot.objects.get(pk=before.pk)
    assert after.content == before.content and after.content_hash == before.content_hash
    assert ReportSnapshot.objects.filter(run=run).count() == 1


# -- extractive answers ------------------------------------------------------------------------


def test_extractive_answer_quotes_the_frozen_passage(owner):
    run = run_with(owner, FARES, DEPOT)
    turn = ask(run, "How much does the adult single fare rise to?")
    assert answer_turn(str(turn.pk), model=None) == _S.ANSWERED
    turn.refresh_from_db()
    answer = turn.answer_contract
    assert answer.mode == "extractive"
    first = answer.statements[0]
    assert first.kind == "finding" and "3.10 euros" in first.text
    assert first.evidence_ids == [evidence_id(run, FARES)]


def test_a_question_the_evidence_does_not_answer_says_so(owner):
    run = run_with(owner, FARES, DEPOT)
    turn = ask(run, "Which composer wrote the city's anthem?")
    assert answer_turn(str(turn.pk), model=None) == _S.NOT_ANSWERED
    turn.refresh_from_db()
    assert turn.answer_contract.statements == []


def test_evidence_found_after_the_version_is_never_used(owner):
    run = run_with(owner, FARES)
    topic = topic_create(run=run, title="Depot", user=owner)
    make_evidence(run, run.sources.first(), excerpt=DEPOT)  # arrives after the freeze
    turn = question_ask(
        topic=topic, question="How many tram bays does the new depot have?", user=owner
    )
    assert answer_turn(str(turn.pk), model=None) == _S.NOT_ANSWERED


def test_research_further_is_offered_for_an_unanswered_question(owner):
    run = run_with(owner, FARES)
    turn = ask(run, "Which composer wrote the city's anthem?")
    answer_turn(str(turn.pk), model=None)
    turn.refresh_from_db()
    child = research_further(run=run, turn=turn, user=owner)
    assert child.parent_run_id == run.pk
    assert "Which composer wrote the city's anthem?" in child.refinement_instruction


# -- model answers: only frozen evidence may be cited ------------------------------------------


def draft(*statements: dict, answerable: bool = True) -> dict:
    return {"answerable": answerable, "statements": list(statements)}


def finding(text: str, *ids: str, claim_id: str = "a1") -> dict:
    return {"claim_id": claim_id, "kind": "finding", "text": text, "evidence_ids": list(ids)}


def test_model_answer_citing_frozen_evidence_is_kept(owner, fake_openai):
    run = run_with(owner, FARES)
    turn = ask(run, "What will the single fare be?")
    fake_openai.queue(
        json_completion(
            draft(finding("The adult single fare rises to 3.10 euros.", evidence_id(run, FARES)))
        )
    )
    assert answer_turn(str(turn.pk), model=model_for(fake_openai)) == _S.ANSWERED
    turn.refresh_from_db()
    assert turn.answer_contract.mode == "model"
    prompt = fake_openai.requests[0].messages[-1]["content"]
    assert FARES in prompt and "What will the single fare be?" in prompt


def test_model_answer_citing_another_runs_evidence_is_refused(owner, fake_openai):
    run = run_with(owner, FARES)
    other = run_with(owner, DEPOT)
    turn = ask(run, "How many tram bays does the depot have?")
    fake_openai.queue(
        json_completion(draft(finding("The depot has 40 tram bays.", evidence_id(other, DEPOT))))
    )
    assert answer_turn(str(turn.pk), model=model_for(fake_openai)) == _S.FAILED
    turn.refresh_from_db()
    assert turn.answer is None
    assert "not part of this report version" in turn.error


def test_model_answer_citing_a_later_versions_evidence_is_refused(owner, fake_openai):
    run = run_with(owner, FARES)
    topic = topic_create(run=run, title="Depot", user=owner)
    later = make_evidence(run, run.sources.first(), excerpt=DEPOT)
    DjangoStore(lease_owner=None).save_report(str(run.pk), report=run.report_contract)
    assert ReportSnapshot.objects.filter(run=run).count() == 2
    turn = question_ask(topic=topic, question="How many tram bays?", user=owner)
    fake_openai.queue(json_completion(draft(finding("The depot has 40 tram bays.", later.pk))))
    assert answer_turn(str(turn.pk), model=model_for(fake_openai)) == _S.FAILED
    assert "not part of this report version" in QuestionTurn.objects.get(pk=turn.pk).error


def test_model_sentence_its_excerpt_does_not_bear_out_becomes_a_caveat(owner, fake_openai):
    run = run_with(owner, FARES)
    turn = ask(run, "What will the single fare be?")
    fake_openai.queue(
        json_completion(
            draft(
                finding("The adult single fare rises to 4.50 euros.", evidence_id(run, FARES)),
                finding("Fares will fall next year.", claim_id="a2"),
            )
        )
    )
    assert answer_turn(str(turn.pk), model=model_for(fake_openai)) == _S.NOT_ANSWERED
    statements = QuestionTurn.objects.get(pk=turn.pk).answer_contract.statements
    assert [s.kind for s in statements] == ["caveat", "caveat"]
    assert all(s.text.startswith(UNSUPPORTED_LABEL_PREFIXES) for s in statements)


# -- one answer at a time, cancel, retry, the reaper -------------------------------------------


def test_one_answer_is_written_at_a_time_per_topic(owner):
    run = run_with(owner, FARES)
    turn = ask(run, "What will the single fare be?")
    with pytest.raises(QuestionError, match="still being written"):
        question_ask(topic=turn.topic, question="And the depot?", user=owner)


def test_questions_beyond_the_hourly_limit_are_refused_with_a_sentence(owner, settings):
    settings.RESEARCH_MAX_QUESTIONS_PER_HOUR = 2
    run = run_with(owner, FARES, link_viewers_may_ask=True)
    first = ask(run, "What will the single fare be?", user=owner)
    answer_cancel(turn=first)
    second = question_ask(topic=first.topic, question="And the day ticket?", user=owner)
    answer_cancel(turn=second)
    with pytest.raises(QuestionError, match="You have asked 2 questions in the last hour"):
        question_ask(topic=first.topic, question="And the weekly ticket?", user=owner)
    assert first.topic.turns.count() == 2  # nothing stored for the refused question
    # People holding the link are counted together, apart from the owner.
    link = question_ask(topic=first.topic, question="Asked through the link?", user=None)
    answer_cancel(turn=link)
    QuestionTurn.objects.filter(pk=second.pk).update(
        created_at=timezone.now() - timedelta(hours=2)
    )
    question_ask(topic=first.topic, question="An hour later?", user=owner)


def test_a_cancelled_answer_is_dropped_and_can_be_retried(owner):
    run = run_with(owner, FARES)
    turn = ask(run, "How much does the adult single fare rise to?")
    answer_cancel(turn=turn)
    assert answer_turn(str(turn.pk), model=None) is None
    assert QuestionTurn.objects.get(pk=turn.pk).status == _S.CANCELLED
    question_ask(topic=turn.topic, question="Another question meanwhile?", user=owner).delete()
    answer_retry(turn=turn)
    assert answer_turn(str(turn.pk), model=None) == _S.ANSWERED


def test_an_answer_cancelled_while_being_written_is_not_saved(owner, fake_openai):
    run = run_with(owner, FARES)
    turn = ask(run, "What will the single fare be?")

    real = model_for(fake_openai)

    class CancelledMeanwhile:
        """The model endpoint, while someone cancels the question during the call."""

        def answer(self, prompt):
            answer_cancel(turn=QuestionTurn.objects.get(pk=turn.pk))
            return real.answer(prompt)

    fake_openai.queue(
        json_completion(draft(finding("The fare rises to 3.10 euros.", evidence_id(run, FARES))))
    )
    assert answer_turn(str(turn.pk), model=CancelledMeanwhile()) is None
    stored = QuestionTurn.objects.get(pk=turn.pk)
    assert stored.status == _S.CANCELLED and stored.answer is None


def test_a_failed_model_answer_can_be_retried(owner, fake_openai):
    run = run_with(owner, FARES)
    turn = ask(run, "What will the single fare be?")
    fake_openai.queue(error(401, "The key is not valid.", kind="authentication_error"))
    assert answer_turn(str(turn.pk), model=model_for(fake_openai)) == _S.FAILED
    assert "could not answer" in QuestionTurn.objects.get(pk=turn.pk).error
    answer_retry(turn=turn)
    fake_openai.queue(
        json_completion(draft(finding("The fare rises to 3.10 euros.", evidence_id(run, FARES))))
    )
    assert answer_turn(str(turn.pk), model=model_for(fake_openai)) == _S.ANSWERED


def test_only_failed_or_cancelled_answers_are_retried(owner):
    turn = ask(run_with(owner, FARES), "What will the single fare be?")
    answer_turn(str(turn.pk), model=None)
    with pytest.raises(QuestionError, match="failed or cancelled"):
        answer_retry(turn=QuestionTurn.objects.get(pk=turn.pk))


def test_the_reaper_hands_back_an_answer_whose_worker_died(owner):
    turn = ask(run_with(owner, FARES), "How much does the adult single fare rise to?")
    QuestionTurn.objects.filter(pk=turn.pk).update(
        status=_S.GENERATING, lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert stale_turns() == [str(turn.pk)]
    assert QuestionTurn.objects.get(pk=turn.pk).status == _S.PENDING
    assert stale_turns() == []  # sent once; the next reap waits for the grace period
    assert answer_turn(str(turn.pk), model=None) == _S.ANSWERED


# -- who may ask -------------------------------------------------------------------------------


def test_team_members_may_ask_and_link_holders_only_when_allowed(owner, team, viewer, outsider):
    run = run_with(owner, FARES, team=team, visibility=ResearchRun.Visibility.LINK)
    assert can_ask(owner, run) and can_ask(viewer, run)
    assert not can_ask(outsider, run)
    assert not can_ask(outsider, run, share_token=run.share_token)
    run.link_viewers_may_ask = True
    assert can_ask(outsider, run, share_token=run.share_token)
    assert not can_ask(outsider, run, share_token="wrong")


def test_frozen_record_round_trips_its_report(owner):
    snapshot = snapshot_current(run_with(owner, FARES))
    assert isinstance(snapshot.frozen, FrozenEvidence)
    assert isinstance(snapshot.frozen.report, Report)
