"""Crash tests with real worker processes on the Redis broker and PostgreSQL.

A worker killed with SIGKILL mid-research leaves its lease to expire; another worker's
reaper picks the run up and finishes it from the last committed step. Two workers given
the same run never both execute it. These need separate processes sharing one broker and
one database, so they run in the PostgreSQL + Redis pass of CI and skip on SQLite.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import dramatiq
import pytest
from django.conf import settings
from django.db import connection
from django.db.models import Count

from research import services
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.worker.actors import advance_run

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "How did the Solvik heat pump grant change installations, and what did it cost?"

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        settings.REDIS is None, reason="needs REDIS_URL: workers share a Redis broker"
    ),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="needs PostgreSQL: workers share the database"
    ),
]


def wait_for(condition: Callable[[], bool], *, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.2)
    pytest.fail(f"timed out after {seconds:.0f} s waiting for {what}")


@pytest.fixture
def start_worker(web, tmp_path) -> Iterator[Callable[[str], subprocess.Popen]]:
    """Start `manage.py rundramatiq` processes wired to the test database and the frozen web."""
    yield from worker_starter(web, tmp_path)


def worker_starter(
    web, tmp_path: Path, extra_env: dict[str, str] | None = None
) -> Iterator[Callable[[str], subprocess.Popen]]:
    """The body of ``start_worker``, for fixtures that add variables (``extra_env``)."""
    overrides = web.django_settings()
    db = connection.settings_dict
    env = {
        **os.environ,
        "DATABASE_URL": f"postgresql://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        "REDIS_URL": settings.REDIS.url,
        "DATA_DIR": str(tmp_path),
        "RESEARCH_FETCH_ALLOWED_HOSTS": ",".join(overrides["RESEARCH_FETCH_ALLOWED_HOSTS"]),
        "RESEARCH_FETCH_STATIC_HOSTS": ",".join(overrides["RESEARCH_FETCH_STATIC_HOSTS"]),
        "RESEARCH_SEARCH_PROVIDERS": "searxng",
        "SEARXNG_URL": overrides["SEARXNG_URL"],
        # Slow enough to be killed mid-research, quick enough to finish in a test.
        "RESEARCH_FETCH_DOMAIN_INTERVAL": "0.7",
        "RESEARCH_SEARCH_PROVIDER_INTERVAL": "0",
        "RESEARCH_LEASE_SECONDS": "10",
        "RESEARCH_REAPER_INTERVAL_SECONDS": "1",
        **(extra_env or {}),
    }
    env.pop("DJANGO_SETTINGS_MODULE", None)
    workers: list[subprocess.Popen] = []

    def start(name: str) -> subprocess.Popen:
        log = (tmp_path / f"{name}.log").open("w")
        process = subprocess.Popen(
            [sys.executable, "manage.py", "rundramatiq", "--processes", "1", "--threads", "2"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        workers.append(process)
        return process

    dramatiq.get_broker().flush_all()
    yield start
    for process in workers:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
    for process in workers:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
    dramatiq.get_broker().flush_all()


def approved_run(owner, web) -> ResearchRun:
    from django.test import override_settings

    with override_settings(**web.django_settings()):
        run = services.run_create(owner=owner, question=QUESTION, depth="quick")
        advance_run(str(run.pk))  # plan in this process
    run.refresh_from_db()
    assert run.status == "awaiting_approval", run.last_error
    return run


def finished(run: ResearchRun) -> bool:
    run.refresh_from_db()
    return run.status in ("completed", "budget_exhausted", "failed", "cancelled")


def assert_no_duplicates(run: ResearchRun) -> None:
    assert not ResearchStep.objects.filter(run=run, status__in=["pending", "running"]).exists()
    dup_sources = (
        ResearchSource.objects.filter(run=run, canonical_url_hash__isnull=False)
        .values("canonical_url_hash")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not dup_sources.exists()
    dup_evidence = (
        ResearchEvidence.objects.filter(run=run)
        .values("evidence_hash")
        .annotate(n=Count("pk"))
        .filter(n__gt=1)
    )
    assert not dup_evidence.exists()


def test_killed_worker_is_replaced_and_the_run_completes_without_duplicates(
    owner, web, start_worker
):
    run = approved_run(owner, web)
    # Pages are held, so the first worker is certainly mid-read when it is killed, however
    # quickly the run would otherwise cover its questions.
    release = web.hold(*{document.path for document in web.documents})
    first = start_worker("worker-1")
    services.plan_approve(run=run, expected_version=run.plan_version)  # enqueues on commit

    wait_for(
        lambda: ResearchStep.objects.filter(
            run=run, kind="read", status__in=["pending", "running"]
        ).exists(),
        seconds=60,
        what="the first worker to start reading a source",
    )
    run.refresh_from_db()
    assert run.status == "researching" and run.lease_owner
    dead_owner = run.lease_owner
    os.killpg(first.pid, signal.SIGKILL)
    first.wait(timeout=10)
    release.set()
    steps_before = ResearchStep.objects.filter(run=run, status="succeeded").count()

    start_worker("worker-2")
    wait_for(lambda: finished(run), seconds=150, what="the second worker to finish the run")

    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)
    assert run.report is not None
    assert run.lease_owner != dead_owner
    assert ResearchStep.objects.filter(run=run, status="succeeded").count() >= steps_before
    assert_no_duplicates(run)
    budget, usage = run.budget, run.usage
    assert usage["searches"] <= budget["searches"]
    assert usage["fetched_sources"] <= budget["fetched_sources"]
    assert usage["model_calls"] <= budget["model_calls"]


def test_two_workers_given_the_same_run_execute_it_once(owner, web, start_worker):
    run = approved_run(owner, web)
    start_worker("worker-a")
    start_worker("worker-b")
    services.plan_approve(run=run, expected_version=run.plan_version)
    advance_run.send(str(run.pk))
    advance_run.send(str(run.pk))

    wait_for(lambda: finished(run), seconds=150, what="the run to finish")

    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)
    # A step started by two workers would count two attempts.
    assert set(ResearchStep.objects.filter(run=run).values_list("attempt", flat=True)) <= {0, 1}
    assert_no_duplicates(run)
