"""The JSON API: latency (p50/p95) and SQL queries of run detail and report, at 10 and 1,000
evidence rows.

The runs are built as for the report-page benchmark (``report_page.build_run``): sources with
snapshots, verified evidence and a validated report citing every item. Each endpoint is then
requested through Django's test client as the run's owner (session authentication, so
middleware, access checks, serialisation and citation resolution all count). The query count
should not grow with the evidence; time should grow no worse than linearly.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from evals.bench.report_page import build_run

SIZES = (10, 1000)
REPEATS = 20
ENDPOINTS = {
    "run detail": "/api/v1/runs/{run_id}",
    "report": "/api/v1/runs/{run_id}/report",
}


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _measure_endpoint(client: Client, url: str, repeats: int) -> dict[str, Any]:
    first = client.get(url)  # warm-up: URL resolver, schema, caches
    if first.status_code != 200:
        raise RuntimeError(f"{url} answered HTTP {first.status_code}: {first.content[:200]!r}")
    durations: list[float] = []
    queries = 0
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            client.get(url)
            durations.append(time.perf_counter() - started)
        queries = len(captured.captured_queries)
    return {
        "p50_ms": round(statistics.median(durations) * 1000, 2),
        "p95_ms": round(_percentile(durations, 0.95) * 1000, 2),
        "sql_queries": queries,
        "response_bytes": len(first.content),
    }


def measure(*, repeats: int = REPEATS) -> dict[str, Any]:
    """p50/p95 latency and query counts of each endpoint at each size."""
    from accounts.models import User

    owner, _ = User.objects.get_or_create(username="bench-api-reader")
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    rows = []
    for size in SIZES:
        run = build_run(owner, size)
        for name, pattern in ENDPOINTS.items():
            figures = _measure_endpoint(client, pattern.format(run_id=run.pk), repeats)
            rows.append({"endpoint": name, "evidence_rows": size, **figures})
    return {"repeats": repeats, "rows": rows}
