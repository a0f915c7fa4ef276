"""Run gauges read from the database at scrape time, and the registry ``/metrics`` serves.

Active and queued runs are facts about the database, not about a process: a worker that
crashed mid-run would leave an in-memory gauge wrong until it restarted, and each of several
processes sees only its own runs. One aggregate query per scrape answers for the deployment.
"""

from __future__ import annotations

from collections.abc import Iterator

from django.conf import settings
from django.db.models import Count
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import Collector

from research.models import ResearchRun

# Statuses in which a run holds (or waits for) a worker.
ACTIVE = ("planning", "researching", "synthesizing")
QUEUED = ("created", "queued")


class RunGauges(Collector):
    def collect(self) -> Iterator[GaugeMetricFamily]:
        counts = dict(
            ResearchRun.objects.filter(status__in=ACTIVE + QUEUED)
            .values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
        active = GaugeMetricFamily(
            "research_runs_active", "Runs planning, researching or synthesizing.", labels=["phase"]
        )
        for status in ACTIVE:
            active.add_metric([status], counts.get(status, 0))
        queued = GaugeMetricFamily(
            "research_runs_queued", "Runs waiting for a worker or a free execution slot."
        )
        queued.add_metric([], sum(counts.get(status, 0) for status in QUEUED))
        yield active
        yield queued


def exposition() -> bytes:
    """The text exposition of every metric: summed over processes when
    ``PROMETHEUS_MULTIPROC_DIR`` is set, this process's research families otherwise, then
    the run gauges."""
    from research.telemetry.metrics import REGISTRY

    if settings.PROMETHEUS_MULTIPROC_DIR:
        from prometheus_client import multiprocess

        families = CollectorRegistry()
        multiprocess.MultiProcessCollector(families, path=settings.PROMETHEUS_MULTIPROC_DIR)
    else:
        families = REGISTRY
    gauges = CollectorRegistry()
    gauges.register(RunGauges())
    return generate_latest(families) + generate_latest(gauges)
