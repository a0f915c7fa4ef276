"""Throughput: concurrent quick runs on the scripted model across worker processes.

The runs are created in the benchmark's throwaway database, then two worker processes
(``evals.bench.worker``) with enough threads to hold all of them at once plan, approve,
research and report every run. Figures: runs per minute from the workers' start until the
last run finished, peak resident memory of each worker, and errors (exceptions, and runs
that ended neither completed nor with a partial report).
"""

from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from evals.environment import isolated_environment
from evals.taskset import load_tasks
from tests.fixtures.frozen_web.server import FrozenWeb

ROOT = Path(__file__).resolve().parents[2]
FINISHED = ("completed", "budget_exhausted", "failed", "cancelled")
GOOD = ("completed", "budget_exhausted")


def measure(
    *, web: FrozenWeb, data_dir: Path, runs: int = 20, workers: int = 2, timeout: float = 300.0
) -> dict[str, Any]:
    """Create ``runs`` quick runs and time ``workers`` processes working through them."""
    from evals.harness import eval_owner
    from research.models import ResearchRun

    owner = eval_owner()
    questions = itertools.cycle(task.question for task in load_tasks())
    created = [
        ResearchRun.objects.create(owner=owner, question=next(questions), depth="quick").pk
        for _ in range(runs)
    ]
    threads = -(-runs // workers)
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    # Slot limits as large as the batch, so the workers' capacity is what is measured.
    env.update(
        isolated_environment(
            data_dir,
            web,
            RESEARCH_MAX_ACTIVE_RUNS=str(runs),
            RESEARCH_MAX_ACTIVE_RUNS_PER_USER=str(runs),
        )
    )
    reports = [data_dir / f"worker-{n}.json" for n in range(workers)]
    started = time.perf_counter()
    processes = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "evals.bench.worker",
                "--threads",
                str(threads),
                "--report",
                str(report),
                "--seconds",
                str(timeout),
            ],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        for report in reports
    ]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ResearchRun.objects.filter(pk__in=created, status__in=FINISHED).count() == runs:
            break
        time.sleep(0.1)
    elapsed = time.perf_counter() - started
    worker_errors: list[str] = []
    for process in processes:
        _, stderr = process.communicate(timeout=60)
        if process.returncode != 0:
            worker_errors.append(stderr.strip()[-500:])
    results = [json.loads(path.read_text()) for path in reports if path.exists()]
    finished = list(ResearchRun.objects.filter(pk__in=created))
    bad = [run for run in finished if run.status not in GOOD]
    durations = [
        (run.completed_at - run.created_at).total_seconds()
        for run in finished
        if run.completed_at is not None
    ]
    errors = worker_errors + [e for r in results for e in r["errors"]]
    errors += [f"run {run.pk} ended {run.status}: {run.last_error}" for run in bad]
    return {
        "runs": runs,
        "workers": workers,
        "threads_per_worker": threads,
        "database": "SQLite (WAL), shared by the workers",
        "model": "scripted (extractive logic, no delay)",
        "elapsed_s": round(elapsed, 2),
        "runs_per_minute": round(runs / elapsed * 60, 1),
        "statuses": {
            status: sum(run.status == status for run in finished)
            for status in sorted({run.status for run in finished})
        },
        "run_seconds_median": round(statistics.median(durations), 2) if durations else None,
        "peak_rss_mb_per_worker": [r["peak_rss_mb"] for r in results],
        "errors": len(errors),
        "error_samples": errors[:3],
        "targets": {"errors": 0, "peak_rss_mb": 400},
    }
