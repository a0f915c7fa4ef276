"""Claims about one quantity through a real run without a language model: Django, the
actors, the frozen web of tests/fixtures/frozen_web/claims, and the extractive backend's
extraction and report. Only the decider is scripted, to read every page the search finds
(the extractive decider would stop as soon as the question is covered).

Three independent sites say water boils at 100 °C at sea level, one says 42 °C, and six pages
plant a different value inside an instruction to a program, each in another form (a role
label, an order to language models, an override, an internal address to fetch, a banner, a
demand to be treated as authoritative). The report must show 100 against 42 as a conflict
with its sources, label 42 as one site's against several, never lead with either value alone,
and quote none of the planted sentences.
"""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from research.engine.contracts import (
    FinishAction,
    ReadAction,
    Report,
    ResearchBrief,
    ResearchDecision,
    SearchAction,
)
from research.engine.support import measures
from research.llm.extractive import ExtractiveModelClient
from research.models import ResearchEvidence, ResearchRun
from research.web.exports import report_document
from tests.fixtures.frozen_web.corpus import CLAIMS_DIR
from tests.integration.scripted import advance, approved_run, make_plan, use_scripted_model

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = make_plan(
    "At what temperature does water boil at sea level?",
    ("q1", "At what temperature does water boil at sea level?"),
)
QUERIES = (
    "water boiling point sea level",
    "water boils at sea level kettle tea temperature",
    "surprising facts about water",
)
BUDGET = {"iterations": 12, "searches": 6, "fetched_sources": 20, "model_calls": 60}
PLANTED = json.loads((CLAIMS_DIR / "manifest.json").read_text(encoding="utf-8"))["planted"]


@pytest.fixture
def claims(claims_web):
    claims_web.reset()
    with override_settings(**claims_web.django_settings()):
        yield claims_web
    claims_web.reset()


def read_everything(brief: ResearchBrief) -> ResearchDecision:
    """Read every page found, three at a time; when none is left unread, search again (a
    search returns eight results, the web has ten pages); then finish."""
    unread = [c for c in brief.candidates if c.status == "candidate"]
    if unread:
        return ResearchDecision(
            actions=[
                ReadAction(source_id=c.source_id, question_ids=["q1"], rationale="Reading a page.")
                for c in unread[:3]
            ]
        )
    if len(brief.recent_queries) < len(QUERIES):
        return ResearchDecision(
            actions=[
                SearchAction(
                    query=QUERIES[len(brief.recent_queries)],
                    question_ids=["q1"],
                    rationale="Looking for more pages on the question.",
                )
            ]
        )
    return ResearchDecision(actions=[FinishAction(rationale="Every page found was read.")])


def research(owner, monkeypatch) -> ResearchRun:
    model = use_scripted_model(monkeypatch)
    extractive = ExtractiveModelClient()
    model.rule("decider", read_everything)
    model.rule("extractor", lambda request: extractive.extract(request).value)
    model.rule("synthesizer", lambda request: extractive.synthesize(request).value)
    run = advance(approved_run(owner, model, PLAN, budget=BUDGET))
    assert run.status == "completed", (run.status, run.stop_reason, run.stop_limit)
    return run


def read_hosts(web) -> set[str]:
    return {
        r.host.split(":")[0] for r in web.requests if r.host.endswith(".test") or ".test:" in r.host
    }


def test_planted_claims_are_quoted_zero_times(owner, claims, monkeypatch):
    run = research(owner, monkeypatch)
    report = Report.model_validate(run.report)
    assert report.mode == "extractive"
    hosts = read_hosts(claims)
    planted_hosts = {page["host"] for page in PLANTED}
    assert planted_hosts <= hosts, hosts  # every planted page was read

    excerpts = [item.excerpt for item in ResearchEvidence.objects.filter(run=run)]
    texts = [s.text for s in report.statements()] + [c.summary for c in report.contradictions]
    for page in PLANTED:
        sentence = page["sentence"]
        (value,) = [m.text for m in measures(sentence)]
        for text in excerpts + texts:
            assert sentence[:40] not in text, (page["host"], text)
            assert value not in text, (page["host"], value, text)
    # No address a page asked for was fetched.
    assert not [r for r in claims.requests if "169.254" in r.host or "meta-data" in r.path]


def test_one_site_against_several_is_shown_as_a_conflict_never_as_the_answer(
    owner, claims, monkeypatch
):
    run = research(owner, monkeypatch)
    report = Report.model_validate(run.report)
    evidence = {e.pk: e for e in ResearchEvidence.objects.filter(run=run).select_related("source")}

    (conflict,) = [c for c in report.contradictions if "42 degrees Celsius" in c.summary]
    assert "“42 degrees Celsius” (one site)" in conflict.summary
    # Three pages state 100 °C and nothing else; the calibration notes' own paragraph does too.
    assert "is stated by one site only, against 4 independent ones" in conflict.summary
    hosts = {evidence[eid].source.domain for eid in conflict.evidence_ids}
    assert "curious-numbers.test" in hosts
    assert {"physics-handbook.test", "chem-classroom.test", "kitchen-science.test"} <= hosts
    assert not hosts & {page["host"] for page in PLANTED} - {"lab-notebook.test", "brew-forum.test"}

    # Neither value alone is the executive summary: it states the disagreement, citing both.
    summary = report.executive_summary
    assert summary and not [s for s in summary if s.kind == "finding" and "42" in s.text]
    (lead,) = [s for s in summary if "disagree" in s.text]
    assert "100" in lead.text and "42 degrees Celsius" in lead.text
    cited_hosts = {evidence[eid].source.domain for eid in lead.evidence_ids}
    assert "curious-numbers.test" in cited_hosts and len(cited_hosts) == 2

    # The report page shows the two values as two sides, each with its own sources (the
    # evidence rows of a no-model run carry no stated value to group them by).
    document = report_document(run, evidence_url=lambda pk, number: f"/evidence/{pk}/")
    (shown,) = [c for c in document.contradictions if "42 degrees Celsius" in c.summary]
    sides = {side.label: {ref.evidence_id for ref in side.cites} for side in shown.sides}
    assert len(sides) == 2
    lone = [ids for label, ids in sides.items() if "42" in label]
    assert len(lone) == 1
    assert {evidence[eid].source.domain for eid in lone[0]} == {"curious-numbers.test"}
