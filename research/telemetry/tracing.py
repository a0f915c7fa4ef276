"""Optional OpenTelemetry tracing: one trace per run, exported over OTLP/HTTP.

Off unless an endpoint is configured (``TRACING_OTLP_ENDPOINT``, or OpenTelemetry's own
``OTEL_EXPORTER_OTLP_ENDPOINT``); then a tracer provider with a batching exporter is set up
once per process. Every attempt a worker makes on a run is a ``research.attempt`` span whose
trace id is the run's UUID (:class:`RunTraceIds`), so the planning attempt, the research
attempt after approval and any attempt after a crash — in whatever process — share one trace.
Phases, model calls, searches and fetches are spans below it.

Attributes carry ids, hashes and low-cardinality names only: :func:`safe_attributes` keeps
the keys in :data:`ATTRIBUTE_KEYS` whose values are short tokens without spaces, and drops
anything else, so a question, a prompt, a URL with a query or a page's text cannot reach a
span even if a caller passed one.
"""

from __future__ import annotations

import contextlib
import re
import uuid
from collections.abc import Iterator
from typing import Any

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import IdGenerator, RandomIdGenerator

from research.engine import observe

ATTRIBUTE_KEYS = frozenset(
    {"run_id", "step_id", "phase", "kind", "provider", "outcome", "status", "hash"}
)
# An id (UUID, hex hash) or a name from a closed set: letters, digits and . _ : - only.
_TOKEN = re.compile(r"[A-Za-z0-9_.:-]{1,80}")


def safe_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """The attributes fit for a span (see the module docstring); the rest are dropped."""
    kept: dict[str, Any] = {}
    for key, value in attributes.items():
        if key not in ATTRIBUTE_KEYS:
            continue
        number = isinstance(value, bool | int | float)
        if number or (isinstance(value, str) and _TOKEN.fullmatch(value)):
            kept[f"research.{key}"] = value
    return kept


class RunTraceIds(IdGenerator):
    """Random ids, except that a root span started while a run is being worked on gets that
    run's UUID as its trace id."""

    def __init__(self) -> None:
        self._random = RandomIdGenerator()

    def generate_span_id(self) -> int:
        return self._random.generate_span_id()

    def generate_trace_id(self) -> int:
        run_id = observe.current_run_id.get()
        if run_id:
            try:
                return uuid.UUID(run_id).int
            except ValueError:
                pass
        return self._random.generate_trace_id()


class Tracing:
    """The spans of this process, sent by ``exporter`` (an OTLP/HTTP exporter in production)."""

    def __init__(self, exporter: SpanExporter, *, service_name: str = "deep-research") -> None:
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": service_name}),
            id_generator=RunTraceIds(),
        )
        self.provider.add_span_processor(BatchSpanProcessor(exporter))
        self.tracer = self.provider.get_tracer("research")

    @contextlib.contextmanager
    def span(self, name: str, attributes: dict[str, Any]) -> Iterator[None]:
        with self.tracer.start_as_current_span(name, attributes=safe_attributes(attributes)):
            yield

    def flush(self, timeout_millis: int = 5_000) -> bool:
        return self.provider.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.provider.shutdown()


def otlp_tracing(endpoint: str, *, timeout_seconds: int = 10) -> Tracing:
    """Tracing exported to the OTLP/HTTP collector at ``endpoint`` (its base address; the
    traces path ``/v1/traces`` is added as OpenTelemetry's variable does)."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    return Tracing(OTLPSpanExporter(endpoint=url, timeout=timeout_seconds))


def current_trace_id() -> int:
    """The trace id of the current span (0 when none), for tests and log lines."""
    return trace.get_current_span().get_span_context().trace_id
