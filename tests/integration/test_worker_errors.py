"""A worker attempt that ends in an unexpected error is counted on the run, logged once
with its traceback, and after RESEARCH_WORKER_MAX_ATTEMPTS in a row the run fails with a
retry instead of being re-sent by the reaper forever.

The error comes from the model edge: a scripted decider whose parser breaks with a
``RuntimeError`` (not a ``ModelError``), which the orchestrator does not expect. Messages
are counted on the configured broker: the in-memory stub on SQLite, Redis in the
PostgreSQL + Redis pass.
"""

from __future__ import annotations

import logging

import dramatiq
import pytest
from django.test import override_settings
from django.urls import reverse

from research import services
from research.llm.extractive import ExtractiveModelClient
from research.models import ResearchRun
from research.worker.actors import advance_run
from research.worker.reaper import reap_once
from tests.integration.scripted import (
    Researcher,
    advance,
    approved_run,
    make_plan,
    use_scripted_model,
)
from tests.research.test_reaper import queued_messages

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = make_plan(
    "How many weekday boardings does the Harwick Metro Line 3 extension have?",
    ("q1", "How many boardings per weekday do the Line 3 extension's stations record?"),
)
# What a careless client might put in an error message: none of it may reach a page.
SECRET = "sk-live0123456789abcdefXYZ"
BROKEN = f"the decision parser broke on field 7 (api_key={SECRET})\nTraceback line two"


def researcher() -> Researcher:
    return Researcher(
        queries={"q1": "Harwick Line 3 extension weekday boardings"},
        wanted={"q1": ("Harwick Regional Transit Authority",)},
    )


def broken_decider(brief):  # noqa: ANN001, ANN201 - a scripted answer
    raise RuntimeError(BROKEN)


@pytest.fixture
def model(monkeypatch):
    """The scripted model; extraction and the report come from the no-model backend."""
    client = use_scripted_model(monkeypatch)
    extractive = ExtractiveModelClient()
    client.rule("extractor", lambda request: extractive.extract(request).value)
    client.rule("synthesizer", lambda request: extractive.synthesise(request).value)
    return client


@pytest.fixture
def broker():
    broker = dramatiq.get_broker()
    broker.flush(advance_run.queue_name)
    yield broker
    broker.flush(advance_run.queue_name)


@pytest.fixture
def frozen(web):
    with override_settings(**web.django_settings()):
        yield web


def crash_logs(caplog, run: ResearchRun) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.levelno >= logging.ERROR
        and record.exc_info
        and str(run.pk) in record.getMessage()
    ]


def test_a_run_that_keeps_crashing_fails_after_three_attempts_and_is_not_resent(
    owner, model, frozen, broker, caplog, client
):
    model.rule("decider", broken_decider)
    run = approved_run(owner, model, PLAN)
    broker.flush(advance_run.queue_name)  # the approval's own message is delivered below
    caplog.set_level(logging.INFO, logger="research")

    sent = 0
    for attempt in (1, 2, 3):
        run = advance(run)  # the worker receives the message
        assert run.worker_attempts == attempt
        assert run.worker_error == (
            "RuntimeError: the decision parser broke on field 7 (api_key=…)"
        )
        assert len(crash_logs(caplog, run)) == attempt
        if attempt < 3:
            assert run.status == "researching" and run.lease_owner == ""
            assert reap_once() == [str(run.pk)]  # the reaper tries it again
            sent += 1
            assert queued_messages(broker) == 1
            broker.flush(advance_run.queue_name)

    assert (run.status, run.stop_reason, run.resume_phase) == (
        "failed",
        "worker_error",
        "researching",
    )
    assert run.last_error == (
        "The worker hit an unexpected error 3 times in a row: RuntimeError: the decision "
        "parser broke on field 7 (api_key=…)"
    )
    # Failed runs are never re-sent, however many reaper intervals pass.
    for _ in range(5):
        assert reap_once() == []
    assert queued_messages(broker) == 0 and sent == 2
    # One log record with its traceback per attempt, none per reaper interval.
    records = crash_logs(caplog, run)
    assert len(records) == 3
    assert "attempt 3 of 3; the run is now failed" in records[-1].getMessage()
    assert "Traceback" not in run.worker_error and SECRET not in run.last_error

    client.force_login(owner)
    workspace = client.get(reverse("research:run_detail", args=[run.pk]))
    html = workspace.content.decode()
    assert ">Failed: internal error</span>" in html
    assert "Retry researching" in html
    assert SECRET not in html and "Traceback" not in html

    # The person retries once the model is fixed: the count starts again and the run ends.
    model.rule("decider", researcher())
    run = services.run_retry(run=run)
    assert (run.worker_attempts, run.worker_error, run.stop_reason) == (0, "", "")
    run = advance(run)
    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)


def test_one_passing_error_is_forgiven_when_the_next_attempt_works(
    owner, model, frozen, broker, caplog
):
    calls = {"n": 0}
    decide = researcher()

    def flaky(brief):  # noqa: ANN001, ANN201 - a scripted answer
        calls["n"] += 1
        if calls["n"] == 1:
            raise ConnectionResetError("connection reset by peer")
        return decide(brief)

    model.rule("decider", flaky)
    run = approved_run(owner, model, PLAN)
    caplog.set_level(logging.INFO, logger="research")

    run = advance(run)
    assert (run.status, run.worker_attempts) == ("researching", 1)
    assert run.worker_error == "ConnectionResetError: connection reset by peer"
    assert reap_once() == [str(run.pk)]
    assert "attempt 1 of 3 ended in an error" in caplog.text

    run = advance(run)
    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)
    assert (run.worker_attempts, run.worker_error) == (0, "")
    assert len(crash_logs(caplog, run)) == 1


@override_settings(RESEARCH_WORKER_MAX_ATTEMPTS=1)
def test_the_number_of_attempts_is_a_setting(owner, model, frozen, broker):
    model.rule("decider", broken_decider)
    run = approved_run(owner, model, PLAN)
    run = advance(run)
    assert (run.status, run.worker_attempts, run.stop_reason) == ("failed", 1, "worker_error")
    assert reap_once() == []
