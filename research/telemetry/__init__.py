"""Telemetry: Prometheus metrics and OpenTelemetry traces of what the deployment is doing.

The engine, the sources and the model clients report through the observer port
(``research.engine.observe``); :func:`configure` installs a :class:`TelemetryObserver` for the
process when metrics or tracing are on (``research.apps`` calls it at start-up). The
layers above call the functions here directly: lifecycle transitions (:func:`run_transitioned`),
the worker (:func:`step_finished` from its store, :func:`lease_lost`, :func:`reaped`,
:class:`ObservedEvents` around the event sink)
and the live consumer (:func:`websocket_opened`, :func:`websocket_closed`). With metrics off
they return at once and nothing is imported from prometheus_client. docs/operations.md.
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from research.engine import observe

if TYPE_CHECKING:
    from research.engine.contracts import ProgressEvent, Usage
    from research.engine.ports import EventSink
    from research.telemetry.tracing import Tracing

logger = logging.getLogger(__name__)

_TERMINAL = frozenset({"completed", "budget_exhausted", "failed", "cancelled"})


@dataclass
class _State:
    metrics: bool = False
    tracing: Tracing | None = None


_state = _State()


def metrics_on() -> bool:
    return _state.metrics


class TelemetryObserver:
    """The engine's :class:`~research.engine.observe.Observer`: metrics and/or spans."""

    def __init__(self, *, metrics: bool, tracing: Tracing | None) -> None:
        self._metrics = metrics
        self._tracing = tracing

    def model_call(self, phase: str, usage: Usage, *, failed: bool) -> None:
        if self._metrics:
            from research.telemetry.metrics import record_model_call

            record_model_call(phase, usage, failed=failed)

    def retried(self, operation: str) -> None:
        if self._metrics:
            from research.telemetry.metrics import RETRIES

            RETRIES.labels(operation).inc()

    def timed(self, operation: str, provider: str, seconds: float, outcome: str) -> None:
        if self._metrics:
            from research.telemetry.metrics import record_timed

            record_timed(operation, provider, seconds, outcome)

    def span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager:
        if self._tracing is None:
            return contextlib.nullcontext()
        return self._tracing.span(name, attributes)


def configure(*, metrics: bool, tracing: Tracing | None) -> None:
    """Turn metrics and tracing on or off for this process (tests call it directly)."""
    previous = _state.tracing
    if previous is not None and previous is not tracing:
        previous.shutdown()
    _state.metrics = metrics
    _state.tracing = tracing
    observe.install(
        TelemetryObserver(metrics=metrics, tracing=tracing) if metrics or tracing else None
    )


def configure_from_settings() -> None:
    from django.conf import settings

    tracing = None
    if settings.TRACING_OTLP_ENDPOINT:
        from research.telemetry.tracing import otlp_tracing

        tracing = otlp_tracing(settings.TRACING_OTLP_ENDPOINT)
    configure(metrics=settings.METRICS_ENABLED, tracing=tracing)


def flush_traces() -> None:
    """Send the spans still buffered now (tests and benchmarks; workers let the batch
    processor send them in the background)."""
    if _state.tracing is not None:
        _state.tracing.flush()


def run_transitioned(
    *, expected: str, to: str, stop_reason: str, created_at: datetime | None, now: datetime
) -> None:
    """A run's status changed (``research.lifecycle.transition``, after the write)."""
    if not _state.metrics:
        return
    from research.telemetry.metrics import BUDGET_STOPS, record_finished

    if to in _TERMINAL:
        seconds = (now - created_at).total_seconds() if created_at is not None else None
        record_finished(to, seconds)
    if to == "budget_exhausted" and stop_reason:
        BUDGET_STOPS.labels(stop_reason).inc()


def lease_lost() -> None:
    if _state.metrics:
        from research.telemetry.metrics import LEASE_LOSSES

        LEASE_LOSSES.inc()


def reaped(count: int) -> None:
    if _state.metrics and count:
        from research.telemetry.metrics import REAPED

        REAPED.inc(count)


def websocket_opened() -> None:
    if _state.metrics:
        from research.telemetry.metrics import WEBSOCKETS, WEBSOCKETS_OPENED

        WEBSOCKETS.inc()
        WEBSOCKETS_OPENED.inc()


def websocket_closed() -> None:
    if _state.metrics:
        from research.telemetry.metrics import WEBSOCKETS

        WEBSOCKETS.dec()


def step_finished(kind: str, outcome: str) -> None:
    """A step was finished in the store (``DjangoStore.finish_step``, after its write)."""
    if _state.metrics:
        from research.telemetry.metrics import ACTIONS

        ACTIONS.labels(kind, outcome).inc()


class ObservedEvents:
    """An :class:`~research.engine.ports.EventSink` that counts source status changes before
    passing each event on."""

    def __init__(self, inner: EventSink) -> None:
        self._inner = inner

    def emit(self, event: ProgressEvent) -> None:
        if _state.metrics and event.type == "source_updated":
            from research.telemetry.metrics import SOURCES

            SOURCES.labels(event.status).inc()
        self._inner.emit(event)
