"""The Prometheus metric families and the functions that move them.

Labels are low-cardinality names only — a status, a step kind, an outcome, a phase, a token
direction, an operation, a stop reason, a provider — listed in :data:`ALLOWED_LABELS`; never
a run, a user, a source, a query, an address or a domain (``tests/telemetry`` fails
otherwise). Every value a label takes comes from a closed set in the code (run statuses,
step kinds, stop reasons, configured provider names).

Multi-process: with ``PROMETHEUS_MULTIPROC_DIR`` set (before this module is imported, which
the settings check), prometheus_client writes each process's values to files in that
directory and the ``/metrics`` view sums them (``prometheus_client.multiprocess``). Counters
and histograms add up across processes; the one process-local gauge (open WebSocket
connections) uses ``livesum``, the sum over live processes. Active and queued runs are not
tracked in memory at all: :mod:`research.telemetry.gauges` counts them in the database at
scrape time, so they are right however many processes there are and whichever crashed.
"""

from __future__ import annotations

from decimal import Decimal

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# The research families only (not the default registry's process and platform collectors).
REGISTRY = CollectorRegistry()

ALLOWED_LABELS = frozenset(
    {"status", "kind", "outcome", "phase", "direction", "operation", "reason", "provider"}
)

# Run durations: from a quick run (minutes) to the longest 45-minute budget plus synthesis.
_RUN_BUCKETS = (30, 60, 120, 300, 600, 900, 1800, 2700, 3600, 5400)
# Fetches and searches: a local page in milliseconds up to the fetch time limits (tens of s).
_CALL_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20, 30, 60)

RUNS_FINISHED = Counter(
    "research_runs_finished", "Runs that reached a terminal status.", ["status"], registry=REGISTRY
)
RUN_DURATION = Histogram(
    "research_run_duration_seconds",
    "Wall time from a run's creation to its terminal status.",
    ["status"],
    buckets=_RUN_BUCKETS,
    registry=REGISTRY,
)
ACTIONS = Counter(
    "research_actions",
    "Research steps finished, by kind and outcome.",
    ["kind", "outcome"],
    registry=REGISTRY,
)
SOURCES = Counter(
    "research_sources", "Source status changes, by new status.", ["status"], registry=REGISTRY
)
RETRIES = Counter(
    "research_retries",
    "Attempts beyond the first: search, fetch, model calls, and steps after a crash.",
    ["operation"],
    registry=REGISTRY,
)
MODEL_CALLS = Counter(
    "research_model_calls",
    "Model calls settled by the budget meter.",
    ["phase", "outcome"],
    registry=REGISTRY,
)
TOKENS = Counter(
    "research_tokens",
    "Model tokens used, by phase and direction.",
    ["phase", "direction"],
    registry=REGISTRY,
)
REPORTED_COST = Counter(
    "research_reported_cost",
    "Cost the model provider reported (its currency, usually US dollars), by phase. "
    "Calls whose provider reports no cost add nothing.",
    ["phase"],
    registry=REGISTRY,
)
BUDGET_STOPS = Counter(
    "research_budget_stops",
    "Runs stopped by a budget limit, by stop reason.",
    ["reason"],
    registry=REGISTRY,
)
SEARCH_SECONDS = Histogram(
    "research_search_seconds",
    "One provider's share of a search, retries included.",
    ["provider", "outcome"],
    buckets=_CALL_BUCKETS,
    registry=REGISTRY,
)
FETCH_SECONDS = Histogram(
    "research_fetch_seconds",
    "One source acquisition (fetch and extraction), retries included.",
    ["provider", "outcome"],
    buckets=_CALL_BUCKETS,
    registry=REGISTRY,
)
LEASE_LOSSES = Counter(
    "research_lease_losses", "Worker attempts that lost their run's lease.", registry=REGISTRY
)
REAPED = Counter("research_runs_reaped", "Runs the reaper re-sent to a worker.", registry=REGISTRY)
WEBSOCKETS = Gauge(
    "research_websocket_connections",
    "Open live-progress WebSocket connections.",
    multiprocess_mode="livesum",
    registry=REGISTRY,
)
WEBSOCKETS_OPENED = Counter(
    "research_websocket_connections_opened", "WebSockets accepted.", registry=REGISTRY
)


def record_model_call(phase: str, usage: object, *, failed: bool) -> None:
    MODEL_CALLS.labels(phase, "error" if failed else "ok").inc(getattr(usage, "model_calls", 1))
    for direction in ("input", "output", "cached"):
        tokens = getattr(usage, f"{direction}_tokens", 0)
        if tokens:
            TOKENS.labels(phase, direction).inc(tokens)
    cost = getattr(usage, "cost", Decimal(0))
    if cost:
        REPORTED_COST.labels(phase).inc(float(cost))


def record_finished(status: str, seconds: float | None) -> None:
    RUNS_FINISHED.labels(status).inc()
    if seconds is not None:
        RUN_DURATION.labels(status).observe(max(0.0, seconds))


def record_timed(operation: str, provider: str, seconds: float, outcome: str) -> None:
    histogram = SEARCH_SECONDS if operation == "search" else FETCH_SECONDS
    histogram.labels(provider, outcome).observe(seconds)
