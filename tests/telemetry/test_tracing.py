"""One run, one trace: spans for phases, model calls, searches and fetches, sent over
OTLP/HTTP to a loopback collector, with no attribute carrying text from a source."""

from __future__ import annotations

import uuid

import pytest
from django.test import override_settings

from research import services, telemetry
from research.models import ResearchRun, ResearchSource
from research.telemetry.tracing import otlp_tracing, safe_attributes
from research.worker.actors import advance_run
from tests.telemetry.otlp_collector import serve_collector

QUESTION = "What limits the efficiency of household heat pumps in cold weather?"


@pytest.fixture
def collector():
    with serve_collector() as served:
        telemetry.configure(metrics=False, tracing=otlp_tracing(served.url))
        yield served
        telemetry.configure(metrics=False, tracing=None)


@pytest.mark.django_db(transaction=True)
def test_one_run_makes_one_trace_with_phase_spans_and_no_source_text(owner, web, collector):
    with override_settings(**web.django_settings()):
        run = services.run_create(owner=owner, question=QUESTION, depth="quick")
        advance_run(str(run.pk))
        run.refresh_from_db()
        assert run.status == "awaiting_approval", run.last_error
        services.plan_approve(run=run, expected_version=run.plan_version)
        advance_run(str(run.pk))
    telemetry.flush_traces()
    run = ResearchRun.objects.get(pk=run.pk)
    assert run.status in ("completed", "budget_exhausted"), run.last_error

    spans = collector.spans
    assert collector.requests >= 1
    assert {span.trace_id for span in spans} == {uuid.UUID(str(run.pk)).bytes}
    names = {span.name for span in spans}
    assert {
        "research.attempt",
        "research.phase.planning",
        "research.phase.research",
        "research.phase.synthesis",
        "research.model.plan",
        "research.model.decide",
        "research.search.provider",
        "research.fetch",
    } <= names, names
    by_id = {span.span_id: span for span in spans}
    for span in spans:
        if span.name.startswith("research.phase."):
            assert by_id[span.parent_span_id].name == "research.attempt"
    # Searches and fetches run on pool threads; they still hang below a phase span.
    for span in spans:
        if span.name in ("research.fetch", "research.search.provider"):
            ancestors = []
            parent = by_id.get(span.parent_span_id)
            while parent is not None:
                ancestors.append(parent.name)
                parent = by_id.get(parent.parent_span_id)
            assert "research.phase.research" in ancestors, (span.name, ancestors)

    texts = [
        text
        for text in ResearchSource.objects.filter(run=run).values_list("snapshot_text", flat=True)
        if text
    ]
    assert texts
    # Every attribute is an id (a run or step UUID) or a name from a closed set of the code
    # (a phase, a step kind, a provider, an outcome); nothing from a page or the question.
    closed = {"planning", "research", "synthesis", "plan", "decide", "extract", "synthesize"}
    closed |= {"verify"}
    closed |= {"searxng", "web", "ok", "error"}
    for span in spans:
        for key, value in span.attributes.items():
            assert key.startswith("research."), key
            if key in ("research.run_id", "research.step_id"):
                uuid.UUID(str(value))
                assert not any(str(value) in text for text in texts)
            else:
                assert value in closed, (key, value)


def test_text_and_unknown_keys_never_become_attributes():
    kept = safe_attributes(
        {
            "run_id": "0f8e2c1a-6f00-4d7b-9c1e-2b8f5e3c9a10",
            "phase": "research",
            "query": "heat pumps",
            "kind": "the text of a page",
            "step_id": "x" * 200,
            "hash": "ab12" * 16,
        }
    )
    assert kept == {
        "research.run_id": "0f8e2c1a-6f00-4d7b-9c1e-2b8f5e3c9a10",
        "research.phase": "research",
        "research.hash": "ab12" * 16,
    }
