"""A loopback OpenTelemetry collector: a real HTTP server that decodes OTLP/HTTP protobuf.

It accepts ``POST /v1/traces`` bodies (``ExportTraceServiceRequest``, gzip or not), keeps
every span it receives and answers with an empty ``ExportTraceServiceResponse``, as a
collector does.
"""

from __future__ import annotations

import contextlib
import gzip
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


@dataclass
class ReceivedSpan:
    trace_id: bytes
    span_id: bytes
    parent_span_id: bytes
    name: str
    attributes: dict[str, object]


@dataclass
class Collector:
    url: str = ""
    spans: list[ReceivedSpan] = field(default_factory=list)
    requests: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def _value(any_value) -> object:
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


@contextlib.contextmanager
def serve_collector() -> Iterator[Collector]:
    collector = Collector()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the http.server API
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_error(404)
                return
            request = ExportTraceServiceRequest.FromString(body)
            with collector.lock:
                collector.requests += 1
                for resource_spans in request.resource_spans:
                    for scope_spans in resource_spans.scope_spans:
                        for span in scope_spans.spans:
                            collector.spans.append(
                                ReceivedSpan(
                                    trace_id=span.trace_id,
                                    span_id=span.span_id,
                                    parent_span_id=span.parent_span_id,
                                    name=span.name,
                                    attributes={a.key: _value(a.value) for a in span.attributes},
                                )
                            )
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    collector.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield collector
    finally:
        server.shutdown()
        server.server_close()
