"""Determinism: the same question on the same frozen web gives the same report.

Every held-out task is run twice through the benchmark harness (the real pipeline with the
extractive backend) and the two reports must be identical once the identifiers that differ
by construction — run, source and evidence ids, which embed the run — are numbered in order
of appearance (evals/determinism.py). The test reports only how many tasks differed, never
which or how: held-out tasks are not for reading while tuning (docs/evaluation.md);
``python -m evals twice --set heldout`` says in which parts they differed, and
``python -m evals twice --set tune`` shows the differences of readable tasks.
"""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from evals.backends import model_factory
from evals.determinism import comparable, differing_parts
from evals.environment import BENCHMARK_RUNS_PER_HOUR
from evals.harness import run_task
from evals.taskset import load_tasks

# Suite 1 only (.ci/run): every held-out task twice is most of a suite's time, and what it checks
# (same question, same web, same report) is checked once per CI run.
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.once_per_ci]


def differing_runs(task_set: str, web) -> tuple[int, int]:
    """How many of ``task_set``'s tasks gave different reports in two runs, of how many."""
    quota = {"RESEARCH_MAX_RUNS_PER_USER_PER_HOUR": BENCHMARK_RUNS_PER_HOUR * 2}
    tasks = load_tasks(task_set=task_set)
    differing = 0
    with override_settings(**web.django_settings(), **quota):
        for task in tasks:
            first, second = (
                comparable(run_task(task, web=web, model=model_factory("extractive")).document)
                for _ in range(2)
            )
            differing += int(first != second)
    return differing, len(tasks)


def test_two_runs_of_one_tune_task_are_compared_on_what_a_reader_sees(real_docs_hostile_web):
    """The comparison itself: ids differ between two runs, the comparable form does not, and
    a changed report would show (checked on a tune task, whose content may be read)."""
    task = load_tasks(["git-reflog-expiry"], task_set="tune")[0]
    with override_settings(**real_docs_hostile_web.django_settings()):
        first, second = (
            run_task(task, web=real_docs_hostile_web, model=model_factory("extractive")).document
            for _ in range(2)
        )
    assert first["run_id"] != second["run_id"]
    assert comparable(first) == comparable(second)
    changed = json.loads(json.dumps(second))
    changed["report_markdown"] += "\n- one more line"
    assert comparable(first) != comparable(changed)
    assert differing_parts(first, second) == []
    assert differing_parts(first, changed) == ["report_markdown"]


def test_every_held_out_task_run_twice_gives_identical_reports(real_docs_hostile_web):
    differing, total = differing_runs("heldout", real_docs_hostile_web)
    assert total > 30
    assert differing == 0, f"{differing} of {total} held-out tasks gave two different reports"
