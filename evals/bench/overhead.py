"""Orchestration overhead: a standard run's wall time against its critical-path lower bound.

Every model call takes a fixed ``model_delay`` and every search and page read a fixed
``web_latency`` (added around the real frozen-web adapter), so the time the work itself needs
is known. From the operations the run actually performed, grouped into the decision rounds
that produced them, the lower bound is what the design's concurrency limits allow at best:

* planning, each decision and each synthesis call: one model delay, one after another;
* within a round, searches in pairs (≤ 2 at once) and reads in waves (≤ 3 at once, ≤ 1 per
  site) run side by side; extraction of a page (≤ ``max_parallel_extractions`` at once)
  cannot start before that page arrived. So a round needs at least
  ``max(search pairs × latency, read waves × latency + one extraction, latency + extraction
  batches × delay)``.

The ratio wall time / lower bound is the scheduling and bookkeeping cost of the orchestrator;
1.0 would be free. ``idle_s`` splits it: the time nothing was in flight (database writes,
verification, events); the rest comes from the order in which work is started.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evals.backends import DelayedModelClient
from research.engine.contracts import (
    ScholarlyMetadata,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
)
from research.engine.guards import MAX_CONCURRENT_FETCHES, MAX_CONCURRENT_SEARCHES
from research.engine.ports import CandidateDrop, ModelClient, SourceAdapter, SystemClock
from research.engine.run.orchestrator import Orchestrator
from research.engine.urls import hostname
from research.llm.extractive import ExtractiveModelClient
from research.llm.scripted import ScriptedModelClient

QUESTION = (
    "How many weekday boardings did the Harwick Metro Line 3 extension record in the fourth "
    "quarter of 2023, and what was its final capital cost?"
)
EXTRACTIONS_AT_ONCE = 3


@dataclass
class Operation:
    kind: str  # plan | decide | extract | synthesize | search | read
    started: float
    ended: float
    site: str = ""


@dataclass
class Recorder:
    operations: list[Operation] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def timed(self, kind: str, call: Callable[[], Any], site: str = "") -> Any:
        started = time.perf_counter()
        try:
            return call()
        finally:
            with self.lock:
                self.operations.append(Operation(kind, started, time.perf_counter(), site))


class RecordedModel:
    """A model client that records when each of its calls ran."""

    def __init__(self, inner: ModelClient, recorder: Recorder) -> None:
        self.inner, self.recorder = inner, recorder

    def plan(self, request):  # noqa: ANN001, ANN201 - the ModelClient port's signature
        return self.recorder.timed("plan", lambda: self.inner.plan(request))

    def decide(self, brief):  # noqa: ANN001, ANN201
        return self.recorder.timed("decide", lambda: self.inner.decide(brief))

    def extract(self, request):  # noqa: ANN001, ANN201
        return self.recorder.timed("extract", lambda: self.inner.extract(request))

    def synthesize(self, request):  # noqa: ANN001, ANN201
        return self.recorder.timed("synthesize", lambda: self.inner.synthesize(request))


class SlowWeb:
    """The real web adapter, with a fixed latency added to every search and every read."""

    def __init__(self, inner: SourceAdapter, latency: float, recorder: Recorder) -> None:
        self.inner, self.latency, self.recorder = inner, latency, recorder

    def _slow(self, call: Callable[[], Any]) -> Any:
        started = time.perf_counter()
        try:
            return call()
        finally:  # a refused or failed page costs the round trip too
            remaining = self.latency - (time.perf_counter() - started)
            if remaining > 0:
                time.sleep(remaining)

    def discover(
        self, query: str, *, policy: SourcePolicy, limit: int = 10
    ) -> list[SearchCandidate]:
        """Search, then wait out the latency."""
        return self.recorder.timed(
            "search",
            lambda: self._slow(lambda: self.inner.discover(query, policy=policy, limit=limit)),
        )

    def screen(self, url: str, *, policy: SourcePolicy) -> CandidateDrop | None:
        """The inner adapter's verdict (no network, so no latency)."""
        return self.inner.screen(url, policy=policy)

    def acquire(
        self,
        url: str,
        *,
        policy: SourcePolicy,
        max_bytes: int,
        work: ScholarlyMetadata | None = None,
    ) -> SourceDocument:
        """Fetch, then wait out the latency."""
        return self.recorder.timed(
            "read",
            lambda: self._slow(
                lambda: self.inner.acquire(url, policy=policy, max_bytes=max_bytes, work=work)
            ),
            site=hostname(url),
        )


def lower_bound(operations: list[Operation], *, model_delay: float, latency: float) -> float:
    """The critical path the concurrency limits allow for these operations (see module doc)."""
    ordered = sorted(operations, key=lambda op: op.started)
    bound = 0.0
    rounds: list[list[Operation]] = []
    for op in ordered:
        if op.kind in ("plan", "synthesize"):
            bound += model_delay
        elif op.kind == "decide":
            bound += model_delay
            rounds.append([])
        elif rounds:
            rounds[-1].append(op)
    for ops in rounds:
        searches = sum(op.kind == "search" for op in ops)
        reads = [op for op in ops if op.kind == "read"]
        extractions = sum(op.kind == "extract" for op in ops)
        per_site = max(Counter(op.site for op in reads).values(), default=0)
        waves = max(math.ceil(len(reads) / MAX_CONCURRENT_FETCHES), per_site)
        candidates = [math.ceil(searches / MAX_CONCURRENT_SEARCHES) * latency]
        if reads:
            candidates.append(waves * latency + (model_delay if extractions else 0.0))
        if extractions:
            candidates.append(latency + math.ceil(extractions / EXTRACTIONS_AT_ONCE) * model_delay)
        bound += max(candidates)
    return bound


def busy_time(operations: list[Operation]) -> float:
    """How long at least one model call or web request was in flight."""
    total, end = 0.0, float("-inf")
    for op in sorted(operations, key=lambda o: o.started):
        if op.started >= end:
            total += op.ended - op.started
            end = op.ended
        elif op.ended > end:
            total += op.ended - end
            end = op.ended
    return total


def measure(
    *,
    model_delay: float = 0.2,
    latency: float = 0.2,
    depth: str = "standard",
    observed_events: bool = False,
) -> dict[str, Any]:
    """One run of ``depth`` with the delays; returns wall time, bound and ratio.
    ``observed_events`` wraps the event sink as the worker does when telemetry is on."""
    from evals.harness import eval_owner
    from research import services
    from research.cli.run_driver import RunDriver
    from research.models import ResearchRun
    from research.sources import WebSourceAdapter
    from research.sources.config import sources_config_from_settings
    from research.telemetry import ObservedEvents
    from research.worker.events import ChannelLayerEvents
    from research.worker.store import DjangoStore

    recorder = Recorder()
    model = RecordedModel(
        DelayedModelClient(ScriptedModelClient(fallback=ExtractiveModelClient()), model_delay),
        recorder,
    )

    def build(lease_owner: str) -> Orchestrator:
        return Orchestrator(
            store=DjangoStore(lease_owner=lease_owner),
            model=model,
            sources=SlowWeb(WebSourceAdapter(sources_config_from_settings()), latency, recorder),
            events=ObservedEvents(ChannelLayerEvents())
            if observed_events
            else ChannelLayerEvents(),
            clock=SystemClock(),
            max_parallel_extractions=EXTRACTIONS_AT_ONCE,
            calls_per_request=1,
        )

    owner = eval_owner()
    driver = RunDriver(factory=build, poll_seconds=0.01)
    started = time.perf_counter()
    run = driver.take(lambda: services.run_create(owner=owner, question=QUESTION, depth=depth))
    driver.run()
    planned = time.perf_counter()
    run.refresh_from_db()
    driver.take(lambda: services.plan_approve(run=run, expected_version=run.plan_version))
    status = driver.run()
    wall = time.perf_counter() - started
    run = ResearchRun.objects.get(pk=run.pk)
    bound = lower_bound(recorder.operations, model_delay=model_delay, latency=latency)
    kinds = Counter(op.kind for op in recorder.operations)
    # Time with nothing in flight is the orchestrator's own work: database writes,
    # verification, events. The rest of the gap to the bound is how it orders the work.
    idle = wall - busy_time(recorder.operations)
    return {
        "depth": depth,
        "status": status,
        "model_delay_s": model_delay,
        "web_latency_s": latency,
        "operations": dict(sorted(kinds.items())),
        "planning_s": round(planned - started, 3),
        "wall_s": round(wall, 3),
        "lower_bound_s": round(bound, 3),
        "ratio": round(wall / bound, 3) if bound else None,
        "idle_s": round(idle, 3),
        "idle_share": round(idle / wall, 3),
        "target_ratio": 1.15,
        "usage": {
            k: run.usage.get(k)
            for k in ("iterations", "searches", "fetched_sources", "model_calls")
        },
    }
