"""Metrics from separate worker processes, scraped from /metrics in this one.

Two `rundramatiq` processes (multiprocess mode: each writes its values to files in one
PROMETHEUS_MULTIPROC_DIR) plan and research one run; this test process serves /metrics,
which sums those files. Every counter is compared with what the database says happened.
Runs in the PostgreSQL + Redis pass, like the other multi-process tests.
"""

from __future__ import annotations

from collections import Counter

import pytest
from django.db.models import Q
from django.test import override_settings

from research import services
from research.models import ResearchRun, ResearchStep
from tests.integration.test_worker_crash import (
    QUESTION,
    finished,
    pytestmark,  # noqa: F401 - the same PostgreSQL + Redis requirement
    wait_for,
    worker_starter,
)
from tests.telemetry.test_helpers import scrape, value

TOKEN = "metrics-test-token-" + "x" * 16


@pytest.fixture
def prometheus_dir(tmp_path):
    path = tmp_path / "prometheus"
    path.mkdir()
    return path


@pytest.fixture
def metered_worker(web, tmp_path, prometheus_dir):
    extra = {
        "METRICS_ENABLED": "true",
        "METRICS_TOKEN": TOKEN,
        "PROMETHEUS_MULTIPROC_DIR": str(prometheus_dir),
        "RESEARCH_FETCH_DOMAIN_INTERVAL": "0",
    }
    yield from worker_starter(web, tmp_path, extra)


def _sum(text: str, name: str, **labels: str) -> float:
    from prometheus_client.parser import text_string_to_metric_families

    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == name and all(sample.labels.get(k) == v for k, v in labels.items())
    )


def test_counters_from_worker_processes_match_the_database(
    owner, web, metered_worker, prometheus_dir, settings
):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = TOKEN
    settings.PROMETHEUS_MULTIPROC_DIR = str(prometheus_dir)
    metered_worker("worker-a")
    metered_worker("worker-b")
    with override_settings(**web.django_settings()):
        run = services.run_create(owner=owner, question=QUESTION, depth="quick")
    wait_for(
        lambda: ResearchRun.objects.get(pk=run.pk).status == "awaiting_approval",
        seconds=90,
        what="a worker to draft the plan",
    )
    run.refresh_from_db()
    services.plan_approve(run=run, expected_version=run.plan_version)
    wait_for(lambda: finished(run), seconds=150, what="the workers to finish the run")
    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)

    text = scrape(TOKEN)
    assert value(text, f'research_runs_finished_total{{status="{run.status}"}}') == 1
    assert value(text, f'research_run_duration_seconds_count{{status="{run.status}"}}') == 1
    assert _sum(text, "research_model_calls_total") == run.usage["model_calls"] > 0
    assert _sum(text, "research_tokens_total", direction="input") == run.usage.get(
        "input_tokens", 0
    )
    steps = ResearchStep.objects.filter(run=run)
    succeeded = Counter(steps.filter(status="succeeded").values_list("kind", flat=True))
    for kind, count in succeeded.items():
        key = f'research_actions_total{{kind="{kind}",outcome="succeeded"}}'
        assert value(text, key) == count, kind
    ran = Q(status__in=["succeeded", "failed"])
    searches = steps.filter(ran, kind="search").count()
    assert searches > 0
    assert _sum(text, "research_search_seconds_count", provider="searxng") == searches
    reads = steps.filter(ran, kind="read").count()
    assert _sum(text, "research_fetch_seconds_count", provider="web") == reads
    assert value(text, "research_runs_queued") == 0
    assert _sum(text, "research_runs_active") == 0
    # Both processes wrote their own files; the scrape summed them.
    assert len(list(prometheus_dir.glob("counter_*.db"))) >= 1
