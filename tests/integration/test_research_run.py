"""A research run end to end: Django, the store, the actors, the frozen web, no model key."""

from __future__ import annotations

import pytest
from django.test import override_settings

from research import services
from research.engine.ledger import normalize_for_matching
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.worker.actors import advance_run

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How many daily boardings did Harwick Metro Line 3 have, and what did it cost to build?"


@pytest.fixture
def frozen_settings(web):
    with override_settings(**web.django_settings()):
        yield web


def run_to_approval(owner) -> ResearchRun:
    run = services.run_create(owner=owner, question=QUESTION, depth="quick")
    advance_run(str(run.pk))
    run.refresh_from_db()
    return run


def test_extractive_run_plans_researches_and_writes_a_verified_report(owner, frozen_settings):
    run = run_to_approval(owner)
    assert run.status == "awaiting_approval", run.last_error
    assert run.plan and run.plan_version == 1
    assert not run.lease_owner  # released after planning

    services.plan_approve(run=run, expected_version=1)
    advance_run(str(run.pk))
    run.refresh_from_db()

    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)
    assert run.report is not None
    assert run.report["mode"] == "extractive"
    evidence = {e.pk: e for e in ResearchEvidence.objects.filter(run=run).select_related("source")}
    assert evidence, "the run stored no evidence"
    for item in evidence.values():
        text = item.source.snapshot_text[item.locator["start"] : item.locator["end"]]
        assert normalize_for_matching(text) == normalize_for_matching(item.excerpt)
    cited = [
        evidence_id
        for section in run.report["sections"]
        for statement in section["statements"]
        for evidence_id in statement["evidence_ids"]
    ]
    assert cited and set(cited) <= set(evidence)
    report_text = " ".join(
        statement["text"]
        for section in run.report["sections"]
        for statement in section["statements"]
    )
    assert "48,200" in report_text or "48200" in report_text
    assert run.usage["searches"] >= 1 and run.usage["fetched_sources"] >= 1
    steps = ResearchStep.objects.filter(run=run)
    assert steps.filter(kind="search").exists() and steps.filter(kind="read").exists()
    assert not steps.filter(status__in=["pending", "running"]).exists()
    assert ResearchSource.objects.filter(run=run, status="fetched").exists()


def test_running_the_same_message_again_duplicates_nothing(owner, frozen_settings):
    run = run_to_approval(owner)
    services.plan_approve(run=run, expected_version=1)
    advance_run(str(run.pk))
    counts = (
        ResearchStep.objects.filter(run=run).count(),
        ResearchSource.objects.filter(run=run).count(),
        ResearchEvidence.objects.filter(run=run).count(),
    )
    advance_run(str(run.pk))
    assert counts == (
        ResearchStep.objects.filter(run=run).count(),
        ResearchSource.objects.filter(run=run).count(),
        ResearchEvidence.objects.filter(run=run).count(),
    )


def test_a_run_held_by_another_worker_is_left_alone(owner, frozen_settings):
    from research.worker.leases import claim_run

    run = services.run_create(owner=owner, question=QUESTION, depth="quick")
    assert claim_run(run.pk, "someone-else", needs_slot=False)
    advance_run(str(run.pk))
    run.refresh_from_db()
    assert run.status == "created"
    assert not ResearchStep.objects.filter(run=run).exists()


def test_research_further_carries_verified_evidence_into_the_new_run(owner, frozen_settings):
    run = run_to_approval(owner)
    services.plan_approve(run=run, expected_version=1)
    advance_run(str(run.pk))
    run.refresh_from_db()
    # Deterministic: the extractive backend over the frozen web answers this question well
    # inside the quick budgets (the only clock-bound one, ten minutes, is never near), so a
    # parent that stops early is a failure to report, not a reason to skip.
    assert run.status == "completed", (run.status, run.terminal_reason, run.last_error)

    child = services.run_refine(run=run, instruction="Also compare with the forecast", user=owner)
    parent_evidence = ResearchEvidence.objects.filter(run=run, out_of_scope=False).count()
    carried = ResearchEvidence.objects.filter(run=child).select_related("source")
    assert carried.count() == parent_evidence
    for item in carried:
        assert item.source.run_id == child.pk
        text = item.source.snapshot_text[item.locator["start"] : item.locator["end"]]
        assert normalize_for_matching(text) == normalize_for_matching(item.excerpt)
    assert not set(carried.values_list("pk", flat=True)) & set(
        ResearchEvidence.objects.filter(run=run).values_list("pk", flat=True)
    )

    advance_run(str(child.pk))  # revise the plan with the instruction
    child.refresh_from_db()
    assert child.status == "awaiting_approval", child.last_error
    services.plan_approve(run=child, expected_version=child.plan_version)
    advance_run(str(child.pk))
    child.refresh_from_db()
    assert child.status in ("completed", "budget_exhausted"), child.last_error
    cited = {
        evidence_id
        for section in child.report["sections"]
        for statement in section["statements"]
        for evidence_id in statement["evidence_ids"]
    }
    assert cited <= set(ResearchEvidence.objects.filter(run=child).values_list("pk", flat=True))


def test_a_report_templates_sections_are_in_the_plan_even_when_approved_unedited(
    owner, frozen_settings
):
    from research.report_templates import template_sections

    run = services.run_create(
        owner=owner, question=QUESTION, depth="quick", report_template="due_diligence"
    )
    advance_run(str(run.pk))
    run.refresh_from_db()

    assert run.status == "awaiting_approval", run.last_error
    sections = run.plan["deliverable"]["requested_sections"]
    assert sections == list(template_sections("due_diligence"))
