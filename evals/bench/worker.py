"""A benchmark worker process: threads that take waiting runs and drive them to the end.

``python -m evals.bench.worker --threads N --report FILE`` runs in an environment prepared by
``evals.bench.throughput`` (shared throwaway database, frozen web). Each thread claims a run
nobody holds, drives it with the scripted model, approves its plan as ``--auto-approve``
would, and takes the next; the process writes what it did and its peak memory to FILE.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import threading
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any


def _claim_new(run_id: object, owner: str) -> bool:
    """Claim a run only while it is still new: a lease can also be taken on a run waiting for
    approval, which another thread planned a moment ago and is about to approve."""
    from research.engine.states import RunStatus
    from research.models import ResearchRun
    from research.worker.leases import claim_run, release_lease

    if not claim_run(run_id, owner, needs_slot=False):
        return False
    if ResearchRun.objects.filter(pk=run_id, status=RunStatus.CREATED).exists():
        return True
    release_lease(run_id, owner)
    return False


def _drive_runs(
    stop_at: float, outcomes: Counter[str], errors: list[str], lock: threading.Lock
) -> None:
    from django.db import connection

    from evals.backends import scripted_client
    from evals.harness import orchestrator_factory
    from research import services
    from research.cli.run_driver import RunDriver
    from research.engine.states import RunStatus
    from research.models import ResearchRun

    try:
        while time.monotonic() < stop_at:
            driver = RunDriver(factory=orchestrator_factory(scripted_client), poll_seconds=0.05)
            waiting = ResearchRun.objects.filter(status=RunStatus.CREATED, lease_owner="")
            taken = next(
                (
                    pk
                    for pk in waiting.values_list("pk", flat=True)[:20]
                    if _claim_new(pk, driver.owner)
                ),
                None,
            )
            if taken is None:
                if not ResearchRun.objects.filter(status=RunStatus.CREATED).exists():
                    return  # every run has been taken
                time.sleep(0.05)
                continue
            driver.run_id = str(taken)
            try:
                status = driver.run()
                if status == RunStatus.AWAITING_APPROVAL:
                    run = ResearchRun.objects.get(pk=taken)
                    driver.take(
                        lambda run=run: services.plan_approve(
                            run=run, expected_version=run.plan_version
                        )
                    )
                    status = driver.run()
            except Exception:
                with lock:
                    errors.append(traceback.format_exc(limit=4))
                continue
            with lock:
                outcomes[status] += 1
    finally:
        connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--report", required=True)
    parser.add_argument("--seconds", type=float, default=300.0, help="give up after this long")
    args = parser.parse_args()

    import django

    django.setup()
    outcomes: Counter[str] = Counter()
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + args.seconds
    threads = [
        threading.Thread(target=_drive_runs, args=(stop_at, outcomes, errors, lock), daemon=True)
        for _ in range(args.threads)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # ru_maxrss is in kilobytes on Linux.
    report: dict[str, Any] = {
        "pid": os.getpid(),
        "outcomes": dict(outcomes),
        "errors": errors,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    Path(args.report).write_text(json.dumps(report), encoding="utf-8")


if __name__ == "__main__":
    main()
