"""Bootstrap intervals over tasks, and `python -m evals compare` on two results files."""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from evals.cli import BackendResult, finish, main
from evals.gates import aggregate
from evals.scoring import TaskScore
from evals.uncertainty import bootstrap_interval, paired_difference, randomization_p

pytestmark = pytest.mark.service_neutral


def test_the_interval_holds_the_mean_and_narrows_with_more_tasks() -> None:
    few = [1.0, 0.0, 0.5, 1.0, 0.0, 0.5, 1.0, 0.0]
    many = few * 10

    low, high = bootstrap_interval(few)
    wide = high - low
    low_many, high_many = bootstrap_interval(many)

    assert low < 0.5 < high
    assert low_many < 0.5 < high_many
    assert high_many - low_many < wide / 2  # ten times the tasks: about a third the width


def test_the_interval_is_deterministic_and_degenerate_without_spread() -> None:
    values = [0.2, 0.9, 0.4, 0.7, 0.1]

    assert bootstrap_interval(values) == bootstrap_interval(list(values))
    assert bootstrap_interval([0.6] * 12) == (0.6, 0.6)
    assert bootstrap_interval([0.6]) is None
    assert bootstrap_interval([]) is None


def test_a_paired_difference_is_over_the_tasks_both_runs_hold() -> None:
    before = {"a": 0.5, "b": 1.0, "c": 0.0, "only-before": 1.0}
    after = {"a": 1.0, "b": 1.0, "c": 0.0, "only-after": 0.0}

    mean, interval, p_value, count = paired_difference(before, after)

    assert count == 3
    assert mean == pytest.approx(0.5 / 3, abs=1e-4)
    assert interval is not None and interval[0] >= 0.0 and interval[1] <= 0.5
    assert p_value is not None and p_value > 0.4  # one task of three moved: chance does that
    assert paired_difference({"a": 1.0}, {"a": 1.0}) == (0.0, None, 1.0, 1)
    assert paired_difference({}, {}) == (0.0, None, None, 0)


def test_the_randomization_test_tells_a_consistent_change_from_a_lone_one() -> None:
    consistent = [0.25] * 20  # every task gained a quarter
    lone = [0.0] * 19 + [1.0]  # one task gained everything
    mixed = [0.5, -0.5] * 10

    assert randomization_p(consistent) < 0.01
    assert randomization_p(lone) == 1.0
    assert randomization_p(mixed) == 1.0
    assert randomization_p([0.0] * 5) == 1.0
    assert randomization_p([]) is None
    assert randomization_p(consistent) == randomization_p(list(consistent))


def _score(task_id: str, stated: int, page: bool | None) -> TaskScore:
    score = TaskScore(task_id, "documentation", "completed", "", True)
    score.gold_facts = 10
    score.facts_stated = [f"fact-{n}" for n in range(stated)]
    score.gold_page_cited = page
    return score


def test_totals_and_the_table_carry_the_intervals(tmp_path: Path) -> None:
    scores = [_score(f"t{n}", n, n % 2 == 0) for n in range(11)]
    totals = aggregate(scores)

    low, high = totals["gold_fact_recall_interval"]
    assert low < totals["gold_fact_recall"] < high
    page_low, page_high = totals["gold_page_rate_interval"]
    assert page_low < totals["gold_page_rate"] < page_high

    run = argparse.Namespace(task=None, document={}, score=scores[0])
    args = argparse.Namespace(
        command="table", results=str(tmp_path), documents=None, record_baseline=False
    )
    finish(
        [BackendResult("heldout", "extractive", [run], totals)],
        args=args,
        full=False,
        show_heldout_tasks=False,
        out=io.StringIO(),
    )
    table = (tmp_path / "table.md").read_text()
    assert f"| gold-fact recall: 95% interval over tasks | {low * 100:.1f}–{high * 100:.1f}% |" in table


def _results(path: Path, task_set: str, tasks: list[dict[str, Any]], **totals: Any) -> Path:
    path.write_text(
        json.dumps(
            {
                "set": task_set,
                "backend": "extractive",
                "tasks": tasks,
                "totals": {"gold_fact_recall": 0.5, "fetched_sources": 10} | totals,
            }
        )
    )
    return path


def _task(task_id: str, stated: list[str], recall: float, page: bool = True) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "status": "completed",
        "facts_stated": stated,
        "facts_in_evidence": stated,
        "facts_on_pages_read": stated,
        "fact_recall": recall,
        "gold_page_cited": page,
    }


def test_compare_names_each_changed_task_and_the_paired_interval(tmp_path, capsys) -> None:
    before = _results(
        tmp_path / "before.json",
        "tune",
        [_task("a", ["x"], 0.5), _task("b", ["y", "z"], 1.0), _task("c", [], 0.0, False)],
    )
    after = _results(
        tmp_path / "after.json",
        "tune",
        [_task("a", ["x", "w"], 1.0), _task("b", ["y", "z"], 1.0), _task("c", [], 0.0, False)],
        gold_fact_recall=0.6667,
        fetched_sources=12,
    )

    assert main(["compare", str(before), str(after)]) == 0

    out = capsys.readouterr().out
    assert re.search(r"gold-fact recall +50\.0% -> 66\.7%", out)
    assert re.search(r"pages read +10 -> 12", out)
    assert "change in gold-fact recall: +16.7 points over 3 tasks" in out
    assert "randomization test p = 1.00" in out  # one task of three: chance does that
    assert "tasks changed: 1" in out
    assert "a: stated +w; in evidence +w; on pages read +w" in out


def test_compare_names_a_task_whose_summary_or_answers_changed(tmp_path, capsys) -> None:
    lead = {"summary_states_fact": False, "answer_statements": 3, "answer_statements_with_fact": 0}
    better = {"summary_states_fact": True, "answer_statements": 3, "answer_statements_with_fact": 1}
    before = _results(tmp_path / "before.json", "tune", [_task("a", ["x"], 0.5) | lead])
    after = _results(tmp_path / "after.json", "tune", [_task("a", ["x"], 0.5) | better])

    assert main(["compare", str(before), str(after)]) == 0

    out = capsys.readouterr().out
    assert "tasks changed: 1" in out
    assert (
        "a: summary states a gold fact False -> True; "
        "Answer quotations stating a gold fact 0/3 -> 1/3"
    ) in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("{not json", "is not a results file"),
        ('{"set": "tune"}', "it has no totals"),
        ('{"set": "heldout", "tasks": "withheld", "totals": {}}', "holds no per-task results"),
    ],
)
def test_compare_refuses_files_it_cannot_read_with_a_sentence(tmp_path, capsys, content, message):
    good = _results(tmp_path / "good.json", "tune", [_task("a", [], 0.0)])
    bad = tmp_path / "bad.json"
    if content is not None:
        bad.write_text(content)

    assert main(["compare", str(good), str(bad)]) == 2
    assert message in capsys.readouterr().err


def test_compare_refuses_runs_of_different_sets(tmp_path, capsys) -> None:
    tune = _results(tmp_path / "tune.json", "tune", [_task("a", [], 0.0)])
    fictional = _results(tmp_path / "fictional.json", "fictional", [_task("a", [], 0.0)])

    assert main(["compare", str(tune), str(fictional)]) == 2
    assert "different sets or backends" in capsys.readouterr().err
    sys.stdout.flush()
