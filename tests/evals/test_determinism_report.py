"""What ``python -m evals twice`` reports about repeated runs (evals/determinism.py): the
parts that differ, per task with the difference for a readable set, counts only for the
held-out set. The run documents here are built by hand; the pipeline's own determinism is
tests/evals/test_determinism.py's subject."""

import io
from dataclasses import dataclass

import pytest

from evals.determinism import differing_parts, run_repeatedly, summary

pytestmark = pytest.mark.service_neutral


@dataclass(frozen=True)
class Task:
    id: str


def document(run_id: str, report: str, reads: list[str]) -> dict:
    """A run document with the fields the comparison reads; ``run_id`` stands where a run's
    own ids do (in the report), ``reads`` are the addresses of its fetched sources."""
    return {
        "status": "completed",
        "stop_reason": None,
        "plan": {"questions": [{"id": "q1", "text": "Why?"}]},
        "report": {"run": run_id},
        "report_markdown": f"{report} [{run_id}]",
        "citations": [],
        "steps": [{"kind": "search", "query": "why"}],
        "sources": [
            {
                "id": f"{run_id}-{n}",
                "url": f"http://docs.test:{40000 + n}/{url}",
                "status": "fetched",
            }
            for n, url in enumerate(reads)
        ],
    }


RUN_A = "0f1e2d3c-4b5a-4968-8776-655443322110"
RUN_B = "9a8b7c6d-5e4f-4a3b-9c2d-1e0f9a8b7c6d"


def test_run_ids_and_ports_are_not_differences():
    first = document(RUN_A, "Because.", ["a", "b"])
    second = document(RUN_B, "Because.", ["a", "b"])
    second["sources"][0]["url"] = "http://docs.test:51234/a"
    assert differing_parts(first, second) == []


def test_each_differing_part_is_named_in_a_fixed_order():
    first = document(RUN_A, "Because.", ["a", "b"])
    second = document(RUN_B, "Because it is so.", ["a", "c"])
    assert differing_parts(first, second) == ["reads", "report_markdown"]


def runner(documents: dict[str, list[dict]]):
    calls: dict[str, int] = {}

    def run(task: Task) -> dict:
        calls[task.id] = calls.get(task.id, -1) + 1
        return documents[task.id][calls[task.id]]

    return run


def test_a_readable_set_names_the_task_and_shows_the_difference():
    documents = {
        "steady": [document(RUN_A, "Same.", ["a"]), document(RUN_B, "Same.", ["a"])],
        "wobbly": [document(RUN_A, "One order.", ["a"]), document(RUN_B, "Other order.", ["a"])],
    }
    out = io.StringIO()
    found = run_repeatedly(
        [Task("steady"), Task("wobbly")], runner(documents), runs=2, readable=True, out=out
    )
    assert (found.tasks, found.differing, dict(found.parts)) == (2, 1, {"report_markdown": 1})
    text = out.getvalue()
    assert "wobbly: differs in report_markdown" in text and "steady" not in text
    assert "-" + '"One order. [id0]"' in text and "+" + '"Other order. [id0]"' in text
    assert summary("tune", 2, found) == (
        "tune: 1 of 2 tasks gave differing run documents in 2 runs each (report_markdown 1)"
    )


def test_the_held_out_set_gets_counts_only():
    documents = {
        "secret-task": [
            document(RUN_A, "A secret answer.", ["a"]),
            document(RUN_B, "Another secret answer.", ["b"]),
        ]
    }
    out = io.StringIO()
    found = run_repeatedly(
        [Task("secret-task")], runner(documents), runs=2, readable=False, out=out
    )
    assert found.differing == 1 and set(found.parts) == {"reads", "report_markdown"}
    assert out.getvalue() == ""
    assert "secret" not in summary("heldout", 2, found)


def test_a_task_is_counted_once_however_many_later_runs_differ():
    documents = {
        "wobbly": [
            document(RUN_A, "One.", ["a"]),
            document(RUN_B, "Two.", ["a"]),
            document(RUN_B, "Three.", ["a"]),
        ]
    }
    found = run_repeatedly(
        [Task("wobbly")], runner(documents), runs=3, readable=False, out=io.StringIO()
    )
    assert found.differing == 1 and found.parts["report_markdown"] == 1
