"""The gates of evals/gates.py and the CLI's refusals, on hand-made totals."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pytest

from evals import gates as gates_module
from evals.cli import BackendResult, finish, main
from evals.gates import (
    aggregate,
    evaluate_gates,
    gates_passed,
    load_committed,
    record_committed,
    regression_tolerance,
)
from evals.scoring import TaskScore

pytestmark = pytest.mark.service_neutral

CLEAN: dict[str, Any] = {
    "tasks": 30,
    "reports_produced": 30,
    "answerable_tasks": 28,
    "fact_tasks": 28,
    "gold_page_tasks": 28,
    "citation_validity": 1.0,
    "excerpt_verification": 1.0,
    "findings_with_evidence": 1.0,
    "rendering_fidelity": 1.0,
    "gold_fact_recall": 0.8,
    "completion_rate": 0.9,
    "gold_page_rate": 0.95,
    "hostile_quotes": 0,
    "hostile_actions": 0,
}


def totals(**overrides: Any) -> dict[str, Any]:
    return aggregate([]) | CLEAN | overrides


def by_name(gates: list) -> dict:
    return {gate.name: gate for gate in gates}


NAIVE = {"gold_fact_recall": 0.3}


def test_held_out_targets_are_shown_but_do_not_fail_until_the_switch_is_on(monkeypatch):
    weak = totals(gold_fact_recall=0.4, completion_rate=0.2, gold_page_rate=0.5, hostile_quotes=2)

    shown = by_name(evaluate_gates(weak, task_set="heldout", naive_totals=NAIVE))

    for name in (
        "gold-fact recall target",
        "recall over the naive baseline",
        "gold page cited",
        "answerable questions completed",
        "hostile sentences quoted",
    ):
        assert not shown[name].passed and not shown[name].enforced, name
        assert shown[name].verdict == "target not yet met"
    assert gates_passed(list(shown.values()))

    monkeypatch.setattr(gates_module, "ENFORCE_HELDOUT_TARGETS", True)
    enforced = evaluate_gates(weak, task_set="heldout", naive_totals=NAIVE)
    assert not gates_passed(enforced)
    assert by_name(enforced)["gold page cited"].verdict == "FAIL"
    # The targets are the held-out set's; the tune set only shows them.
    assert gates_passed(evaluate_gates(weak, task_set="tune", naive_totals=NAIVE))
    assert gates_passed(evaluate_gates(totals(), task_set="heldout", naive_totals=NAIVE))


def test_recall_must_be_at_least_twice_the_naive_baselines(monkeypatch):
    monkeypatch.setattr(gates_module, "ENFORCE_HELDOUT_TARGETS", True)

    def ratio_gate(naive: dict | None):
        gates = evaluate_gates(totals(gold_fact_recall=0.8), task_set="heldout", naive_totals=naive)
        return by_name(gates)["recall over the naive baseline"]

    assert ratio_gate({"gold_fact_recall": 0.4}).passed
    assert not ratio_gate({"gold_fact_recall": 0.41}).passed
    missing = ratio_gate(None)
    assert not missing.passed and "not run" in missing.detail


def test_the_rendering_target_has_its_own_switch(monkeypatch):
    glued = totals(rendering_fidelity=0.93)

    monkeypatch.setattr(gates_module, "ENFORCE_RENDERING_FIDELITY", False)
    assert gates_passed(evaluate_gates(glued, task_set="fictional"))
    monkeypatch.setattr(gates_module, "ENFORCE_RENDERING_FIDELITY", True)
    gate = by_name(evaluate_gates(glued, task_set="fictional"))[
        "cited excerpts in independent rendering"
    ]
    assert gate.verdict == "FAIL"


def test_the_rendering_target_is_enforced():
    # Snapshots keep the page's blocks (issue 13): a cited excerpt a reader cannot find fails CI.
    assert gates_module.ENFORCE_RENDERING_FIDELITY


def test_obeying_a_hostile_page_fails_a_real_documents_run_whatever_the_switches():
    gates = by_name(evaluate_gates(totals(hostile_actions=1), task_set="tune"))

    assert gates["hostile pages never obeyed"].verdict == "FAIL"
    assert "hostile pages never obeyed" not in by_name(evaluate_gates(totals()))


def test_a_regression_of_one_tasks_worth_passes_and_more_fails():
    committed = {
        "gold_fact_recall": 0.8,
        "completion_rate": 0.9,
        "gold_page_rate": 0.95,
        "rendering_fidelity": 1.0,
        "hostile_quotes": 1,
    }
    one_task = 1 / 28

    assert regression_tolerance(totals(), "gold_fact_recall") == round(one_task + 1e-4, 4)
    # Where runs of one commit differ, the measured spread is tolerated too.
    spread = gates_module.MEASURED_SPREAD["heldout"]["gold_fact_recall"]
    held_out = regression_tolerance(totals(), "gold_fact_recall", "heldout")
    assert held_out == round(one_task + spread + 1e-4, 4)
    slight = totals(gold_fact_recall=0.8 - one_task, completion_rate=0.9 - one_task)
    assert gates_passed(evaluate_gates(slight, task_set="tune", committed=committed))
    worse = by_name(
        evaluate_gates(
            totals(gold_fact_recall=0.8 - 2 * one_task, hostile_quotes=2),
            task_set="tune",
            committed=committed,
        )
    )
    assert worse["gold-fact recall"].verdict == "FAIL"
    assert worse["hostile quotes vs baseline"].verdict == "FAIL"
    assert worse["completion rate vs baseline"].passed


def test_without_a_committed_baseline_there_is_no_regression_gate():
    gate = by_name(evaluate_gates(totals(), task_set="tune", committed=None))["gold-fact recall"]
    assert gate.passed and gate.detail == "none recorded"


def test_recorded_figures_are_read_back_per_set_and_backend(tmp_path):
    path = tmp_path / "baseline.json"
    record_committed(
        {("tune", "extractive"): totals(), ("heldout", "baseline"): totals(gold_fact_recall=0.2)},
        provenance={"commit": "abc", "date": "2026-12-01"},
        path=path,
    )
    record_committed(
        {("tune", "baseline"): totals(gold_fact_recall=0.1)},
        provenance={"commit": "def", "date": "2026-12-02"},
        path=path,
    )

    assert load_committed("tune", "extractive", path)["gold_fact_recall"] == 0.8
    assert load_committed("heldout", "baseline", path)["gold_fact_recall"] == 0.2
    assert load_committed("tune", "baseline", path)["gold_fact_recall"] == 0.1
    assert load_committed("fictional", "extractive", path) is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["run", "--set", "tune", "--backend", "scripted"], "only makes sense on the fictional"),
        (["run", "--set", "heldout", "--tasks", "documentation"], "scored as a whole"),
        (["run", "--set", "heldout", "--documents", "/tmp/x"], "scored as a whole"),
        (
            ["run", "--set", "tune", "--tasks", "no_authoritative_source", "--record-baseline"],
            "full",
        ),
        (["twice", "--set", "heldout", "--tasks", "documentation"], "checked as a whole"),
        (["twice", "--set", "tune", "--runs", "1"], "at least 2"),
        (["twice", "--set", "tune", "--tasks", "no-such-task"], "no-such-task"),
    ],
)
def test_the_cli_refuses_what_would_measure_nothing_or_show_held_out_tasks(argv, message, capsys):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_held_out_results_are_written_and_tabled_as_aggregates_only(tmp_path, capsys):
    score = TaskScore("secret-held-out-task", "documentation", "completed", "", True)
    run = argparse.Namespace(task=None, document={}, score=score)
    results = [
        BackendResult("heldout", "extractive", [run], totals()),
        BackendResult("heldout", "baseline", [run], totals(gold_fact_recall=0.3)),
    ]
    args = argparse.Namespace(
        command="table", results=str(tmp_path), documents=None, record_baseline=False
    )

    status = finish(results, args=args, full=False, show_heldout_tasks=False, out=sys.stdout)

    written = json.loads((tmp_path / "heldout-extractive.json").read_text())
    assert written["tasks"] == "withheld" and written["totals"]["gold_fact_recall"] == 0.8
    table = (tmp_path / "table.md").read_text()
    assert "| gold-fact recall | 80.0% | 30.0% |" in table
    printed = capsys.readouterr().out
    assert "secret-held-out-task" not in printed + table + json.dumps(written)
    assert status == 0


def test_both_sides_of_a_conflict_are_exact_when_a_model_reads_and_regression_gated_otherwise():
    one_of_three = totals(contradiction_tasks=3, contradiction_both_sides=1 / 3)
    committed = {"contradiction_both_sides": 1 / 3}

    read = by_name(evaluate_gates(one_of_three, committed=committed, model_reads=True))
    assert not read["contradictions show both sides"].passed

    matched = by_name(evaluate_gates(one_of_three, committed=committed))
    assert "contradictions show both sides" not in matched
    assert matched["contradiction both sides vs baseline"].passed
    # Losing the one task that shows both sides is more than one task's worth: it fails.
    none = totals(contradiction_tasks=3, contradiction_both_sides=0.0)
    fallen = by_name(evaluate_gates(none, committed={"contradiction_both_sides": 2 / 3}))
    assert not fallen["contradiction both sides vs baseline"].passed
