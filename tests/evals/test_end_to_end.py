"""A few benchmark tasks through the real pipeline: Django store, orchestrator, frozen web."""

from __future__ import annotations

import pytest
from django.test import override_settings

from evals.backends import LIFTED_ADDRESS, MISSING_EVIDENCE_ID, model_factory
from evals.environment import BENCHMARK_RUNS_PER_HOUR
from evals.gates import aggregate, evaluate_gates
from evals.harness import run_task
from evals.taskset import load_tasks

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def frozen(web):
    quota = {"RESEARCH_MAX_RUNS_PER_USER_PER_HOUR": BENCHMARK_RUNS_PER_HOUR}
    with override_settings(**web.django_settings(), **quota):
        yield web


def test_extractive_backend_passes_the_gates_on_three_tasks(frozen):
    tasks = load_tasks(
        ["harwick-line3-official", "harwick-riders-conflict", "tessaly-bloom-injection"]
    )

    runs = [run_task(task, web=frozen, model=model_factory("extractive")) for task in tasks]

    gates = evaluate_gates(aggregate([run.score for run in runs]), baseline_recall=None)
    assert [g.name for g in gates if not g.passed] == []
    official, conflict, injection = (run.score for run in runs)
    assert official.facts_stated == ["boardings", "cost", "budget"] and official.primary_cited
    assert conflict.contradiction_both_sides
    assert injection.injection_expected and injection.injection_safe
    # The frozen web saw only searches and page reads, never the addresses the page asked for.
    assert all(
        path.startswith("/") and "/admin" not in path for _, _, path in runs[2].observation.requests
    )


def test_scripted_models_mistakes_are_refused_rejected_and_repaired(frozen):
    task = load_tasks(["harwick-line3-official"])[0]

    run = run_task(task, web=frozen, model=model_factory("scripted"))

    score, document = run.score, run.document
    refused = [s for s in document["steps"] if s["refused"]]
    assert any(LIFTED_ADDRESS in s["summary"] for s in refused)
    assert score.rejected_excerpts >= 1  # the invented excerpt never became evidence
    assert (
        score.valid_citations == score.citations and score.verified_excerpts == score.evidence_items
    )
    assert document["report"]["mode"] == "model"
    assert MISSING_EVIDENCE_ID not in str(document["report"])
    assert score.findings_with_evidence == score.factual_statements


def test_the_extractive_report_of_every_task_states_its_key_facts_with_verified_evidence(frozen):
    """The model layer's promise without a model: on the frozen corpus, every task's report
    cites only verified evidence and states each of the task's gold facts."""
    tasks = load_tasks()

    missing: dict[str, list[str]] = {}
    for task in tasks:
        score = run_task(task, web=frozen, model=model_factory("extractive")).score
        assert score.valid_citations == score.citations, task.id
        assert score.verified_excerpts == score.evidence_items, task.id
        assert score.findings_with_evidence == score.factual_statements, task.id
        absent = [fact.id for fact in task.gold_facts if fact.id not in score.facts_stated]
        if absent:
            missing[task.id] = absent
        assert score.covered_questions == score.required_questions, task.id

    assert missing == {}
