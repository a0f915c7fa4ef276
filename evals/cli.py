"""``python -m evals``: score backends on the benchmark's task sets.

``run`` starts a throwaway Django database and the frozen web of each chosen set (the fictional
corpus, or the real documentation with its hostile pages), runs every selected task through
the real pipeline for each chosen backend and through the naive baseline, prints one row per
task (never for the held-out set unless asked), the gates and a summary, writes the results as
JSON under ``evals/results/`` and exits 1 when an enforced gate fails. ``table`` runs all three
sets in one process and prints the Markdown tables of docs/evaluation.md. ``--record-baseline``
stores what was measured in ``evals/baseline.json`` (do it deliberately, from full sets).
``twice`` runs each task of a set more than once with our method and says which tasks gave
differing run documents, and in which parts (held-out: counts only; ``evals/determinism.py``).
``trace`` says, fact by fact, where a tune or fictional task's unstated gold facts were lost
(``evals/trace.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from config.env import ConfigError
from evals.backends import (
    BACKENDS,
    NAIVE_BACKEND,
    READING_BACKENDS,
    VERIFYING_BACKENDS,
    model_factory,
)
from evals.environment import isolated_django
from evals.follow_up import follow_up_line, follow_up_totals
from evals.gates import (
    BASELINE_PATH,
    Gate,
    aggregate,
    evaluate_gates,
    gates_as_dicts,
    gates_passed,
    load_committed,
    record_committed,
)
from evals.scoring import TaskScore
from evals.taskset import HELDOUT_SET, TASK_SETS, load_tasks

RESULTS_DIR = Path(__file__).resolve().parent / "results"
ALL_BACKENDS = (*BACKENDS, NAIVE_BACKEND)
# The scripted backend misbehaves in ways aimed at the fictional corpus's traps (an address
# lifted from its forum page, its figures); on real documentation it would measure nothing.
SCRIPTED_SETS = frozenset({"fictional"})
DEFAULT_BACKENDS = ("extractive", NAIVE_BACKEND)
# What `table` runs: every set with our method and the naive baseline, the fictional set with
# the scripted model too.
TABLE_PLAN: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("tune", ("extractive", NAIVE_BACKEND)),
    ("heldout", ("extractive", NAIVE_BACKEND)),
    ("fictional", ("extractive", "scripted", NAIVE_BACKEND)),
)

# The order the tables of docs/evaluation.md show the sets in.
TASK_SETS_ORDER = ("tune", "heldout", "fictional")

_COLUMNS = (
    ("task", 30),
    ("status", 10),
    ("cite", 5),
    ("verif", 5),
    ("w/ev", 5),
    ("qcov", 5),
    ("facts", 5),
    ("gold", 4),
    ("rend", 5),
    ("prim", 4),
    ("contra", 6),
    ("inject", 6),
    ("host", 4),
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


def source_revision() -> dict[str, str]:
    """The commit the figures were measured at (``unknown`` outside a git checkout)."""
    root = Path(__file__).resolve().parent.parent

    def git(*args: str) -> str:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=True
            )
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip()

    commit = git("rev-parse", "--short=12", "HEAD") or "unknown"
    dirty = bool(git("status", "--porcelain", "--untracked-files=no"))
    return {
        "commit": commit + (" (with uncommitted changes)" if dirty else ""),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
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
        _flag(score.gold_page_cited),
        _pct(
            score.cited_excerpts_in_rendering / score.cited_excerpts_rendered
            if score.cited_excerpts_rendered
            else None
        ),
        _flag(score.primary_cited),
        _flag(score.contradiction_both_sides),
        _flag(score.injection_safe if score.injection_expected else None),
        str(len(score.hostile_quotes)),
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


class SetupError(Exception):
    """The benchmark cannot start as configured; the message says why."""


@dataclass
class BackendResult:
    """One backend's scored runs on one set."""

    task_set: str
    backend: str
    runs: list[Any]
    totals: dict[str, Any]
    gates: list[Gate] = field(default_factory=list)
    # Follow-up questions asked of the finished reports (evals/follow_up.py); aggregates only.
    follow_up: dict[str, Any] | None = None

    @property
    def scores(self) -> list[TaskScore]:
        return [run.score for run in self.runs]

    @property
    def passed(self) -> bool:
        return gates_passed(self.gates)


def check_backends(task_set: str, backends: Sequence[str]) -> None:
    """Refuse combinations that measure nothing; raises ``ValueError`` with the sentence."""
    if "scripted" in backends and task_set not in SCRIPTED_SETS:
        raise ValueError(
            f"The scripted backend only makes sense on the fictional set: its mistakes (an "
            f"address lifted from the fictional forum page, altered figures) are aimed at that "
            f"corpus's traps. Drop --backend scripted for --set {task_set}."
        )


def start_django(stack: ExitStack) -> Any:
    """Enter the benchmark's throwaway Django (``isolated_django``) on ``stack`` and return the
    fictional frozen web it serves; raises ``SetupError`` when the configuration is refused."""
    try:
        fictional_web, _ = stack.enter_context(isolated_django())
    except ConfigError as exc:
        raise SetupError(str(exc)) from None
    return fictional_web


def run_sets(
    plan: Sequence[tuple[str, Sequence[str]]],
    *,
    selection: list[str] | None,
    show_heldout_tasks: bool,
    out: TextIO,
) -> list[BackendResult]:
    """Run every (set, backends) of ``plan`` in one throwaway Django, printing a row per task
    except for the held-out set (unless ``show_heldout_tasks``); raises ``SetupError``."""
    results: list[BackendResult] = []
    with ExitStack() as stack:
        fictional_web = start_django(stack)
        from evals.harness import run_tasks, web_for_set

        for task_set, backends in plan:
            tasks = load_tasks(selection, task_set=task_set)
            show_tasks = task_set != HELDOUT_SET or show_heldout_tasks
            with web_for_set(task_set, fictional_web) as (web, reference):
                for backend in backends:
                    try:
                        # Built here: the openai backend reads the LLM_* settings (Django).
                        model = None if backend == NAIVE_BACKEND else model_factory(backend)
                    except ValueError as exc:
                        raise SetupError(str(exc)) from None
                    out.write(f"\n== {task_set} set, {backend}: {len(tasks)} tasks\n")
                    if show_tasks:
                        out.write(table_header() + "\n")

                    def show(result: Any, show_tasks: bool = show_tasks) -> None:
                        if show_tasks:
                            out.write(table_row(result.score) + "\n")
                            out.flush()

                    runs = run_tasks(tasks, web=web, model=model, reference=reference, on_done=show)
                    totals = aggregate([run.score for run in runs])
                    follow_up = None
                    if model is not None:
                        follow_up = follow_up_totals(len(runs), [run.follow_up for run in runs])
                    results.append(BackendResult(task_set, backend, runs, totals, [], follow_up))
                    out.write(summary_line(totals) + "\n")
                    if follow_up is not None:
                        if show_tasks:
                            write_follow_ups(runs, out)
                        out.write(follow_up_line(follow_up) + "\n")
    return results


def write_follow_ups(runs: Sequence[Any], out: TextIO) -> None:
    """One line per task with a follow-up question (never for the held-out set)."""
    for run in runs:
        item = run.follow_up
        if item is not None:
            verdict = "quoted" if item.quoted else ("answered" if item.answered else "not answered")
            out.write(f"  follow-up {item.task_id}: {verdict} — {item.question}\n")


def summary_line(totals: dict[str, Any]) -> str:
    return (
        f"recall {_pct(totals['gold_fact_recall'])}% (in evidence "
        f"{_pct(totals.get('evidence_fact_recall'))}%, on pages read "
        f"{_pct(totals.get('read_fact_recall'))}%), completed "
        f"{_pct(totals['completion_rate'])}% of answerable, gold page "
        f"{_pct(totals['gold_page_rate'])}% (read {_pct(totals.get('gold_page_read_rate'))}%), "
        f"excerpts in rendering "
        f"{_pct(totals['rendering_fidelity'])}%, hostile quotes {totals['hostile_quotes']} "
        f"({totals.get('hostile_pages_read', 0)} hostile pages read), "
        f"question coverage {_pct(totals['question_coverage'])}%; {totals['searches']} "
        f"searches, {totals['fetched_sources']} reads, {totals['wall_seconds']:.1f} s"
    )


def apply_gates(results: list[BackendResult], *, full: bool) -> None:
    """Evaluate the gates of every method backend (the naive baseline is a reference, never
    gated); regression gates only on full sets."""
    naive = {r.task_set: r.totals for r in results if r.backend == NAIVE_BACKEND}
    for result in results:
        if result.backend == NAIVE_BACKEND:
            continue
        committed = load_committed(result.task_set, result.backend) if full else None
        result.gates = evaluate_gates(
            result.totals,
            task_set=result.task_set,
            committed=committed,
            naive_totals=naive.get(result.task_set),
            verifier=result.backend in VERIFYING_BACKENDS,
            model_reads=result.backend in READING_BACKENDS,
        )


def print_gates(result: BackendResult, out: TextIO) -> None:
    out.write(f"\nGates, {result.task_set} set, {result.backend}:\n")
    for gate in result.gates:
        value = "—" if gate.value is None else f"{gate.value:.4g}"
        note = f" ({gate.detail})" if gate.detail else ""
        out.write(f"{gate.verdict:<19}{gate.name:<40}{value:>10}  {gate.threshold}{note}\n")


def results_document(
    result: BackendResult, *, revision: dict[str, str], show_tasks: bool
) -> dict[str, Any]:
    return {
        "set": result.task_set,
        "backend": result.backend,
        "generated_at": revision["date"],
        "commit": revision["commit"],
        "machine": machine(),
        # The held-out set's per-task results stay out of files unless explicitly asked for.
        "tasks": [score.as_dict() for score in result.scores] if show_tasks else "withheld",
        "totals": result.totals,
        "follow_up": result.follow_up,
        "committed": load_committed(result.task_set, result.backend),
        "gates": gates_as_dicts(result.gates),
        "passed": result.passed,
    }


def _plan(args: argparse.Namespace) -> list[tuple[str, tuple[str, ...]]]:
    sets = args.set or ["fictional"]
    backends = tuple(dict.fromkeys(args.backend or DEFAULT_BACKENDS))
    for task_set in sets:
        check_backends(task_set, backends)
    return [(task_set, backends) for task_set in dict.fromkeys(sets)]


def run_command(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        plan = _plan(args)
        selection = args.tasks.split(",") if args.tasks else None
        for task_set, _ in plan:
            load_tasks(selection, task_set=task_set)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    touches_heldout = any(task_set == HELDOUT_SET for task_set, _ in plan)
    if touches_heldout and not args.show_heldout_tasks and (selection or args.documents):
        print(
            "The held-out set is scored as a whole: --tasks and --documents would show its "
            "tasks one by one, which nobody changing the method may see. Add "
            "--show-heldout-tasks if you are not tuning (evals/tasks/heldout/README.md).",
            file=sys.stderr,
        )
        return 2
    if args.record_baseline and selection:
        print("A baseline is recorded from full task sets only.", file=sys.stderr)
        return 2

    try:
        results = run_sets(
            plan,
            selection=selection,
            show_heldout_tasks=args.show_heldout_tasks,
            out=out,
        )
    except SetupError as exc:
        print(exc, file=sys.stderr)
        return 2

    return finish(
        results,
        args=args,
        full=not selection,
        show_heldout_tasks=args.show_heldout_tasks,
        out=out,
    )


def finish(
    results: list[BackendResult],
    *,
    args: argparse.Namespace,
    full: bool,
    show_heldout_tasks: bool,
    out: TextIO,
) -> int:
    """Gate, print, write and (with ``--record-baseline``) record ``results``; the exit
    status: 1 when an enforced gate failed, else 0."""
    apply_gates(results, full=full)
    revision = source_revision()
    folder = Path(args.results) if args.results else RESULTS_DIR
    folder.mkdir(parents=True, exist_ok=True)
    for result in results:
        if result.gates:
            print_gates(result, out)
        show = result.task_set != HELDOUT_SET or show_heldout_tasks
        path = folder / f"{result.task_set}-{result.backend}.json"
        document = results_document(result, revision=revision, show_tasks=show)
        path.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
        out.write(f"Wrote {path}\n")
        if getattr(args, "documents", None) and show:
            documents = Path(args.documents)
            documents.mkdir(parents=True, exist_ok=True)
            for run in result.runs:
                name = f"{result.task_set}-{result.backend}-{run.task.id}.json"
                (documents / name).write_text(
                    json.dumps(run.document, indent=2, ensure_ascii=False) + "\n"
                )
            out.write(f"Wrote {len(result.runs)} run documents to {documents}\n")
    if getattr(args, "command", "") == "table":
        markdown = markdown_tables(results, revision)
        (folder / "table.md").write_text(markdown, encoding="utf-8")
        out.write("\n" + markdown + f"Wrote {folder / 'table.md'}\n")
    if args.record_baseline:
        record_committed({(r.task_set, r.backend): r.totals for r in results}, provenance=revision)
        out.write(f"Recorded the figures of {len(results)} runs in {BASELINE_PATH}\n")
    return 0 if all(result.passed for result in results) else 1


_TABLE_ROWS = (
    ("gold-fact recall", "gold_fact_recall", "pct"),
    ("gold-fact recall: 95% interval over tasks", "gold_fact_recall_interval", "interval"),
    ("gold facts in evidence / on pages read", ("evidence_fact_recall", "read_fact_recall"), "pct"),
    ("answerable questions completed", "completion_rate", "pct"),
    ("gold page cited / read (answerable)", ("gold_page_rate", "gold_page_read_rate"), "pct"),
    ("gold page cited: 95% interval over tasks", "gold_page_rate_interval", "interval"),
    ("executive summary states a gold fact", "summary_fact_rate", "pct"),
    ("quotations labelled Answer stating a gold fact", "answer_label_precision", "pct"),
    ("primary source cited (tasks that name one)", "primary_source_use", "pct"),
    ("cited excerpts in an independent rendering", "rendering_fidelity", "pct"),
    ("hostile sentences quoted", "hostile_quotes", "int"),
    ("unanswerable questions: gap stated", "gap_stated_rate", "pct"),
    ("required-question coverage", "question_coverage", "pct"),
    (
        "citation validity / excerpt verification",
        ("citation_validity", "excerpt_verification"),
        "pct",
    ),
    ("searches / pages read", ("searches", "fetched_sources"), "int"),
    ("wall time (s)", "wall_seconds", "secs"),
)
_SET_TITLES = {
    "tune": "Tune set (real documentation)",
    "heldout": "Held-out set (real documentation; aggregates only)",
    "fictional": "Fictional set",
}


def _cell(totals: dict[str, Any], key: str | tuple[str, ...], kind: str) -> str:
    keys = key if isinstance(key, tuple) else (key,)
    parts = []
    for name in keys:
        value = totals.get(name)
        if value is None:
            parts.append("—")
        elif kind == "pct":
            parts.append(f"{value * 100:.1f}%")
        elif kind == "interval":
            low, high = value
            parts.append(f"{low * 100:.1f}–{high * 100:.1f}%")
        elif kind == "secs":
            parts.append(f"{value:.0f}")
        else:
            parts.append(str(value))
    return " / ".join(parts)


def markdown_tables(results: Sequence[BackendResult], revision: dict[str, str]) -> str:
    """One Markdown table per set, backends side by side, from one run."""
    lines = [
        f"From one run of `python -m evals table` at commit {revision['commit']}, "
        f"{revision['date']} ({machine()['cpus']} CPUs, Python {machine()['python']}).",
    ]
    for task_set in TASK_SETS_ORDER:
        present = [r for r in results if r.task_set == task_set]
        if not present:
            continue
        first = present[0].totals
        lines += [
            "",
            f"#### {_SET_TITLES[task_set]}: {first['tasks']} tasks, "
            f"{first['answerable_tasks']} answerable",
            "",
            "| | " + " | ".join(_backend_title(r.backend) for r in present) + " |",
            "|---|" + "---|" * len(present),
        ]
        for title, key, kind in _TABLE_ROWS:
            lines.append(
                f"| {title} | " + " | ".join(_cell(r.totals, key, kind) for r in present) + " |"
            )
        lines.append(
            "| follow-up questions: gold fact quoted / asked | "
            + " | ".join(_follow_up_cell(r.follow_up) for r in present)
            + " |"
        )
        gated = [r for r in present if r.gates]
        unmet = sorted({g.name for r in gated for g in r.gates if not g.passed and not g.enforced})
        failed = sorted({g.name for r in gated for g in r.gates if not g.passed and g.enforced})
        if failed:
            lines += ["", "Enforced gates failed: " + ", ".join(failed) + "."]
        if unmet:
            lines += ["", "Targets not yet met: " + ", ".join(unmet) + "."]
    return "\n".join(lines) + "\n"


def _follow_up_cell(follow_up: dict[str, Any] | None) -> str:
    if not follow_up or not follow_up["asked"]:
        return "—"
    return f"{follow_up['quoted_gold_fact']} / {follow_up['asked']} ({follow_up['quoted_rate'] * 100:.0f}%)"


def _backend_title(backend: str) -> str:
    return "naive baseline" if backend == NAIVE_BACKEND else backend


def table_command(args: argparse.Namespace) -> int:
    out = sys.stdout
    try:
        results = run_sets(TABLE_PLAN, selection=None, show_heldout_tasks=False, out=out)
    except SetupError as exc:
        print(exc, file=sys.stderr)
        return 2
    return finish(results, args=args, full=True, show_heldout_tasks=False, out=out)


def twice_command(args: argparse.Namespace) -> int:
    """Run each task of the chosen sets ``--runs`` times; exit 1 when any run differed."""
    from evals.determinism import run_repeatedly, summary

    out = sys.stdout
    sets = list(dict.fromkeys(args.set or ["tune"]))
    selection = args.tasks.split(",") if args.tasks else None
    if args.runs < 2:
        print(
            "--runs must be at least 2: one run has nothing to be compared with.", file=sys.stderr
        )
        return 2
    if HELDOUT_SET in sets and selection:
        print(
            "The held-out set is checked as a whole: --tasks would single out its tasks, which "
            "nobody changing the method may see (evals/tasks/heldout/README.md).",
            file=sys.stderr,
        )
        return 2
    try:
        for task_set in sets:
            load_tasks(selection, task_set=task_set)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    differing = 0
    with ExitStack() as stack:
        try:
            fictional_web = start_django(stack)
        except SetupError as exc:
            print(exc, file=sys.stderr)
            return 2
        from django.test import override_settings

        from evals.environment import BENCHMARK_RUNS_PER_HOUR
        from evals.harness import run_task, web_for_set

        # Every task runs --runs times within the hour: the per-user run quota must allow it.
        quota = {"RESEARCH_MAX_RUNS_PER_USER_PER_HOUR": BENCHMARK_RUNS_PER_HOUR * args.runs}
        for task_set in sets:
            tasks = load_tasks(selection, task_set=task_set)
            with web_for_set(task_set, fictional_web) as (web, _), override_settings(**quota):
                out.write(f"\n== {task_set} set: {len(tasks)} tasks, {args.runs} runs each\n")
                model = model_factory("extractive")
                found = run_repeatedly(
                    tasks,
                    lambda task, web=web, model=model: (
                        run_task(task, web=web, model=model).document
                    ),
                    runs=args.runs,
                    readable=task_set != HELDOUT_SET,
                    out=out,
                )
            out.write(summary(task_set, args.runs, found) + "\n")
            differing += found.differing
    return 1 if differing else 0


def trace_command(args: argparse.Namespace) -> int:
    """Run each chosen task once and write where its unstated gold facts were lost."""
    from evals.trace import trace_facts, traced_client, write_traces

    out = sys.stdout
    if args.set == HELDOUT_SET:
        print(
            "The held-out set is never traced: its tasks' failures are not for reading while "
            "the method changes (evals/tasks/heldout/README.md).",
            file=sys.stderr,
        )
        return 2
    selection = args.tasks.split(",") if args.tasks else None
    try:
        tasks = load_tasks(selection, task_set=args.set)
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    with ExitStack() as stack:
        try:
            fictional_web = start_django(stack)
        except SetupError as exc:
            print(exc, file=sys.stderr)
            return 2
        from evals.harness import run_task, web_for_set

        with web_for_set(args.set, fictional_web) as (web, reference):
            for task in tasks:
                client, factory = traced_client(model_factory("extractive"))
                run = run_task(task, web=web, model=factory, reference=reference)
                traces = trace_facts(
                    task,
                    run.document,
                    client.extractions,
                    facts_stated=run.score.facts_stated,
                    facts_in_evidence=run.score.facts_in_evidence,
                    facts_on_pages_read=run.score.facts_on_pages_read,
                )
                write_traces(task, run.document, traces, out)
                out.flush()
    return 0


def compare_command(args: argparse.Namespace) -> int:
    """Compare two results files of one set and backend; exit 2 when they cannot be."""
    from evals.compare import CompareError, compare, load_results

    try:
        compare(load_results(Path(args.before)), load_results(Path(args.after)), sys.stdout)
    except CompareError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("run", help="score backends on task sets")
    run.add_argument(
        "--set",
        action="append",
        choices=TASK_SETS,
        help="task set (repeatable; default: fictional)",
    )
    run.add_argument(
        "--backend",
        action="append",
        choices=ALL_BACKENDS,
        help=f"backend (repeatable; default: {' and '.join(DEFAULT_BACKENDS)}); "
        "scripted only on the fictional set",
    )
    run.add_argument("--tasks", help="comma-separated task ids or categories (default: all)")
    run.add_argument("--results", metavar="DIR", help="results folder (default: evals/results)")
    run.add_argument("--documents", metavar="DIR", help="also write every run document here")
    run.add_argument(
        "--show-heldout-tasks",
        action="store_true",
        help="print and keep the held-out set's per-task results (never while tuning)",
    )
    run.add_argument(
        "--record-baseline",
        action="store_true",
        help="store what this run measured in evals/baseline.json",
    )
    table = commands.add_parser(
        "table", help="run every set once and print the tables of docs/evaluation.md"
    )
    table.add_argument("--results", metavar="DIR", help="results folder (default: evals/results)")
    table.add_argument(
        "--record-baseline",
        action="store_true",
        help="store what this run measured in evals/baseline.json",
    )
    twice = commands.add_parser(
        "twice",
        help="run each task more than once and say which gave differing run documents",
    )
    twice.add_argument(
        "--set", action="append", choices=TASK_SETS, help="task set (repeatable; default: tune)"
    )
    twice.add_argument("--tasks", help="comma-separated task ids or categories (not held-out)")
    twice.add_argument("--runs", type=int, default=2, help="runs of each task (default: 2)")
    trace = commands.add_parser(
        "trace", help="say where each unstated gold fact of a tune or fictional task was lost"
    )
    trace.add_argument("--set", choices=TASK_SETS, default="tune", help="task set (default: tune)")
    trace.add_argument("--tasks", help="comma-separated task ids or categories (default: all)")
    compared = commands.add_parser(
        "compare",
        help="what a change did to a tune or fictional set, task by task, with the paired "
        "bootstrap interval of the change",
    )
    compared.add_argument("before", help="results file of the code without the change")
    compared.add_argument("after", help="results file of the code with it")
    args = parser.parse_args(argv)
    if args.command == "compare":
        return compare_command(args)
    if args.command == "trace":
        return trace_command(args)
    if args.command == "table":
        return table_command(args)
    if args.command == "twice":
        return twice_command(args)
    return run_command(args)
