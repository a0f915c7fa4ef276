"""Telemetry overhead: orchestration wall time with metrics and tracing on against off.

The same standard run as the overhead benchmark (fixed model and web delays, the frozen web,
the Django store) is run alternately with telemetry off and on — on means Prometheus
metrics and OpenTelemetry spans for phases, model calls, searches and fetches, batched and
sent over OTLP/HTTP to a loopback collector that decodes every request — in ``pairs`` pairs
after one unmeasured warm-up run of each, in one process. Alternating spreads drift of the
machine over both sides. The figure is the
ratio of the medians, on / off; the target is at most 1.02. The "on" side includes flushing
the spans still buffered at the end of the run (a worker leaves them to the background
exporter; counting the flush makes the figure an upper bound).
"""

from __future__ import annotations

import statistics
import time
from typing import Any

# The largest share of wall time telemetry may add (docs/performance.md).
TARGET_RATIO = 1.02


def measure(*, pairs: int = 7, model_delay: float = 0.2, latency: float = 0.2) -> dict[str, Any]:
    from evals.bench.overhead import measure as one_run
    from research import telemetry
    from research.telemetry.tracing import otlp_tracing
    from tests.telemetry.otlp_collector import serve_collector

    off: list[float] = []
    on: list[float] = []
    spans = 0
    with serve_collector() as collector:
        # One unmeasured run of each kind first: imports, caches and connections warm up.
        one_run(model_delay=model_delay, latency=latency)
        telemetry.configure(metrics=True, tracing=otlp_tracing(collector.url))
        one_run(model_delay=model_delay, latency=latency, observed_events=True)
        telemetry.flush_traces()
        collector.spans.clear()
        for _ in range(pairs):
            telemetry.configure(metrics=False, tracing=None)
            off.append(one_run(model_delay=model_delay, latency=latency)["wall_s"])
            telemetry.configure(metrics=True, tracing=otlp_tracing(collector.url))
            result = one_run(model_delay=model_delay, latency=latency, observed_events=True)
            flushed = time.perf_counter()
            telemetry.flush_traces()
            on.append(result["wall_s"] + time.perf_counter() - flushed)
        telemetry.configure(metrics=False, tracing=None)
        spans = len(collector.spans)
    ratio = statistics.median(on) / statistics.median(off)
    return {
        "pairs": pairs,
        "model_delay_s": model_delay,
        "web_latency_s": latency,
        "off_wall_s": off,
        "on_wall_s": [round(value, 3) for value in on],
        "ratio": round(ratio, 4),
        "target_ratio": TARGET_RATIO,
        "spans_exported": spans,
    }
