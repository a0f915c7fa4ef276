"""``python -m evals run``: score a model backend on the frozen-corpus benchmark.

Starts the frozen web and a throwaway Django database, runs every selected task through the
real pipeline, prints one table row per task and the gates, writes the results as JSON under
``evals/results/`` and exits non-zero when a gate fails. ``--record-baseline`` stores the
backend's gold-fact recall in ``evals/baseline.json`` (do it deliberately, when a change is
meant to move recall).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from config.env import ConfigError
from evals.backends import BACKENDS, model_factory
from evals.environment import isolated_django
from evals.gates import BASELINE_PATH, aggregate, evaluate_gates, gates_as_dicts, load_baseline
from evals.scoring import TaskScore
from evals.taskset import load_tasks

RESULTS_DIR = Path(__file__).resolve().parent / "results"

_COLUMNS = (
    ("task", 30),
    ("status", 10),
    ("cite", 5),
    ("verif", 5),
    ("w/ev", 5),
    ("qcov", 5),
    ("facts", 5),
    ("pass", 5),
    ("prim", 4),
    ("indep", 5),
    ("contra", 6),
    ("inject", 6),
    ("claim", 5),
    ("dups", 4),
    ("srch", 4),
    ("read", 4),
    ("calls", 5),
    ("secs", 5),
)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    return {
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value * 100:.0f}"


def _flag(value: bool | None) -> str:
    return "—" if value is None else ("ok" if value else "FAIL")


def table_row(score: TaskScore) -> str:
    cells = [
        score.task_id,
        score.status,
        _pct(score.valid_citations / score.citations if score.citations else None),
        _pct(score.verified_excerpts / score.evidence_items if score.evidence_items else None),
        _pct(
            score.findings_with_evidence / score.factual_statements
            if score.factual_statements
            else None
        ),
        _pct(score.question_coverage),
        _pct(score.fact_recall),
        _pct(score.passage_recall),
        _flag(score.primary_cited),
        str(score.independent_sources),
        _flag(score.contradiction_both_sides),
        _flag(score.injection_safe if score.injection_expected else None),
        str(len(score.injected_claims)) if score.injection_expected else "—",
        str(len(score.duplicate_violations)),
        str(score.searches),
        str(score.fetched_sources),
        str(score.model_calls),
        f"{score.wall_seconds:.1f}",
    ]
    return " ".join(
        cell[:width].ljust(width) for cell, (_, width) in zip(cells, _COLUMNS, strict=True)
    )


def table_header() -> str:
    return " ".join(name.ljust(width) for name, width in _COLUMNS)


def record_baseline(backend: str, recall: float | None, path: Path = BASELINE_PATH) -> None:
    data = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    data.setdefault(
        "about",
        "Gold-fact recall each deterministic backend reached when it was last recorded with "
        "`python -m evals run --backend NAME --record-baseline`; the gate fails below it.",
    )
    data.setdefault("gold_fact_recall", {})[backend] = recall
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")


class SetupError(Exception):
    """The benchmark cannot start as configured; the message says why."""


def _run_in_isolation(backend: str, tasks: list[Any]) -> list[Any]:
    """Run ``tasks`` on a throwaway database; raises :class:`SetupError` when it cannot."""
    out = sys.stdout
    with ExitStack() as stack:
        try:
            web, _ = stack.enter_context(isolated_django())
        except ConfigError as exc:
            raise SetupError(str(exc)) from None
        from evals.harness import run_tasks

        try:
            # Built here: the openai backend reads the LLM_* settings, which need Django.
            model = model_factory(backend)
        except ValueError as exc:
            raise SetupError(str(exc)) from None
        out.write(f"Scoring the {backend} backend on {len(tasks)} tasks.\n{table_header()}\n")

        def show(result: Any) -> None:
            out.write(table_row(result.score) + "\n")
            out.flush()

        return run_tasks(tasks, web=web, model=model, on_done=show)


def run_command(args: argparse.Namespace) -> int:
    try:
        tasks = load_tasks(args.tasks.split(",") if args.tasks else None)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    out = sys.stdout

    try:
        runs = _run_in_isolation(args.backend, tasks)
    except SetupError as exc:
        print(exc, file=sys.stderr)
        return 2

    scores = [run.score for run in runs]
    totals = aggregate(scores)
    selected_all = not args.tasks
    baseline = load_baseline(args.backend) if selected_all else None
    gates = evaluate_gates(totals, baseline_recall=baseline)
    out.write("\n")
    for gate in gates:
        value = "—" if gate.value is None else f"{gate.value:.4g}"
        verdict = "pass" if gate.passed else "FAIL"
        note = f" ({gate.detail})" if gate.detail else ""
        out.write(f"{verdict:<5}{gate.name:<34}{value:>10}  {gate.threshold}{note}\n")
    out.write(
        f"\nquestion coverage {_pct(totals['question_coverage'])}%, gold-fact recall "
        f"{_pct(totals['gold_fact_recall'])}%, gold-passage recall "
        f"{_pct(totals['gold_passage_recall'])}%, primary-source use "
        f"{_pct(totals['primary_source_use'])}%; {totals['searches']} searches, "
        f"{totals['fetched_sources']} reads, {totals['model_calls']} model calls, "
        f"{totals['wall_seconds']:.1f} s\n"
    )

    results = {
        "backend": args.backend,
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
        "tasks": [score.as_dict() for score in scores],
        "totals": totals,
        "baseline_gold_fact_recall": baseline,
        "gates": gates_as_dicts(gates),
        "passed": all(gate.passed for gate in gates),
    }
    output = Path(args.output) if args.output else RESULTS_DIR / f"evals-{args.backend}.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out.write(f"Wrote {output}\n")
    if args.documents:
        folder = Path(args.documents)
        folder.mkdir(parents=True, exist_ok=True)
        for run in runs:
            path = folder / f"{args.backend}-{run.task.id}.json"
            path.write_text(json.dumps(run.document, indent=2, ensure_ascii=False) + "\n")
        out.write(f"Wrote {len(runs)} run documents to {folder}\n")
    if args.record_baseline:
        if not selected_all:
            print("A baseline is recorded from the full task set only.", file=sys.stderr)
            return 2
        record_baseline(args.backend, totals["gold_fact_recall"])
        out.write(f"Recorded gold-fact recall {totals['gold_fact_recall']} in {BASELINE_PATH}\n")
    return 0 if results["passed"] else 1


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="score a backend on the benchmark tasks")
    run.add_argument("--backend", choices=BACKENDS, default="extractive")
    run.add_argument("--tasks", help="comma-separated task ids or categories (default: all)")
    run.add_argument("--output", help="results file (default: evals/results/evals-BACKEND.json)")
    run.add_argument("--documents", metavar="DIR", help="also write every run document here")
    run.add_argument(
        "--record-baseline",
        action="store_true",
        help="store this backend's gold-fact recall as the new baseline",
    )
    args = parser.parse_args(argv)
    return run_command(args)
