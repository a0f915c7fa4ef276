"""``python -m evals compare BEFORE AFTER``: what a change did to one set, task by task.

Two results files of the same set and backend (``python -m evals run --results DIR`` writes
``DIR/<set>-<backend>.json``), the code without a change and with it: the set's figures before
and after, the paired bootstrap interval of the per-task difference in gold-fact recall and in
the gold page cited with the paired randomization test's p-value (:mod:`evals.uncertainty`), and
every task whose stated, evidence or read facts, status or gold page changed. A held-out results
file holds aggregates only and is refused: its tasks are not for reading while the method
changes.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from evals.taskset import HELDOUT_SET
from evals.uncertainty import paired_difference

# (title, totals key, whether the figure is a share shown as a percentage)
FIGURES = (
    ("gold-fact recall", "gold_fact_recall", True),
    ("gold facts in evidence", "evidence_fact_recall", True),
    ("gold facts on pages read", "read_fact_recall", True),
    ("answerable questions completed", "completion_rate", True),
    ("gold page cited", "gold_page_rate", True),
    ("gold page read", "gold_page_read_rate", True),
    ("required-question coverage", "question_coverage", True),
    ("executive summary states a gold fact", "summary_fact_rate", True),
    ("quotations labelled Answer stating a gold fact", "answer_label_precision", True),
    ("pages read", "fetched_sources", False),
)
_FACT_LISTS = (
    ("stated", "facts_stated"),
    ("in evidence", "facts_in_evidence"),
    ("on pages read", "facts_on_pages_read"),
)


class CompareError(Exception):
    """Two files that cannot be compared; the message says why."""


def load_results(path: Path) -> dict[str, Any]:
    """A results document; raises ``CompareError`` with the reason it cannot be used."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CompareError(f"{path} does not exist.") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CompareError(f"{path} is not a results file ({exc}).") from None
    if not isinstance(document, dict) or not isinstance(document.get("totals"), dict):
        raise CompareError(f"{path} is not a results file: it has no totals.")
    if document.get("set") == HELDOUT_SET or not isinstance(document.get("tasks"), list):
        raise CompareError(
            f"{path} holds no per-task results (the held-out set keeps aggregates only, and "
            "its tasks are not for reading while the method changes); compare tune or "
            "fictional runs."
        )
    return document


def compare(before: Mapping[str, Any], after: Mapping[str, Any], out: TextIO) -> None:
    """Write the comparison of two results documents of one set and backend."""
    if (before.get("set"), before.get("backend")) != (after.get("set"), after.get("backend")):
        raise CompareError(
            f"The files are runs of different sets or backends ({before.get('set')} / "
            f"{before.get('backend')} against {after.get('set')} / {after.get('backend')})."
        )
    old_tasks = {task["task_id"]: task for task in before["tasks"]}
    new_tasks = {task["task_id"]: task for task in after["tasks"]}
    out.write(f"{after['set']} set, {after['backend']}: {len(new_tasks)} tasks\n")
    width = max(len(title) for title, _, _ in FIGURES)
    for title, key, share in FIGURES:
        old, new = before["totals"].get(key), after["totals"].get(key)
        out.write(f"  {title:{width}} {_figure(old, share)} -> {_figure(new, share)}\n")
    for title, value in (
        ("gold-fact recall", lambda task: task.get("fact_recall")),
        (
            "gold page cited",
            lambda task: None
            if task.get("gold_page_cited") is None
            else float(bool(task["gold_page_cited"])),
        ),
    ):
        old_values = _present({tid: value(task) for tid, task in old_tasks.items()})
        new_values = _present({tid: value(task) for tid, task in new_tasks.items()})
        mean, interval, p_value, count = paired_difference(old_values, new_values)
        span = (
            f"95% interval {interval[0] * 100:+.1f} to {interval[1] * 100:+.1f} points"
            if interval
            else "too few tasks for an interval"
        )
        if p_value is not None:
            span += f"; randomization test p = {p_value:.2f}"
        out.write(f"  change in {title}: {mean * 100:+.1f} points over {count} tasks ({span})\n")
    changed = [
        (task_id, lines)
        for task_id in sorted(set(old_tasks) & set(new_tasks))
        if (lines := _task_changes(old_tasks[task_id], new_tasks[task_id]))
    ]
    only = sorted(set(old_tasks) ^ set(new_tasks))
    if only:
        out.write(f"  tasks in only one file: {', '.join(only)}\n")
    out.write(f"  tasks changed: {len(changed)}\n")
    for task_id, lines in changed:
        out.write(f"    {task_id}: {'; '.join(lines)}\n")


def _present(values: Mapping[str, float | None]) -> dict[str, float]:
    return {task: value for task, value in values.items() if value is not None}


def _figure(value: Any, share: bool) -> str:
    if value is None:
        return "—"
    return f"{value * 100:.1f}%" if share else str(value)


def _task_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    lines = []
    for title, key in _FACT_LISTS:
        lost = sorted(set(old.get(key, [])) - set(new.get(key, [])))
        gained = sorted(set(new.get(key, [])) - set(old.get(key, [])))
        if lost or gained:
            lines.append(
                f"{title} " + " ".join([*(f"-{f}" for f in lost), *(f"+{f}" for f in gained)])
            )
    for title, key in (
        ("status", "status"),
        ("gold page cited", "gold_page_cited"),
        ("summary states a gold fact", "summary_states_fact"),
    ):
        if old.get(key) != new.get(key):
            lines.append(f"{title} {old.get(key)} -> {new.get(key)}")
    answers = [
        (task.get("answer_statements_with_fact", 0), task.get("answer_statements", 0))
        for task in (old, new)
    ]
    if answers[0] != answers[1]:
        (had, of), (has, now) = answers
        lines.append(f"Answer quotations stating a gold fact {had}/{of} -> {has}/{now}")
    return lines
