"""A small OpenAI-compatible HTTP server on 127.0.0.1 for end-to-end tests of the model layer.

It speaks the real ``/v1/chat/completions`` wire format over a real socket, so the official
SDK, our retries, timeouts and fallbacks run exactly as they would against vLLM or OpenAI.
Tests script it with queued replies and/or a responder function, then inspect the recorded
requests.
"""

import json
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted HTTP answer; ``delay`` seconds pass before it is sent."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass(frozen=True)
class RecordedRequest:
    """A request the server received."""

    path: str
    headers: dict[str, str]
    payload: dict[str, Any]

    @property
    def response_format(self) -> str | None:
        """The ``response_format.type`` the client asked for, or ``None`` (prompt-only)."""
        value = self.payload.get("response_format")
        return value.get("type") if isinstance(value, dict) else None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat messages sent."""
        return list(self.payload.get("messages", []))


def completion(
    content: str | None,
    *,
    prompt_tokens: int | None = 100,
    completion_tokens: int | None = 20,
    cached_tokens: int | None = None,
    cost: float | None = None,
    finish_reason: str = "stop",
    model: str = "fake-model",
    delay: float = 0.0,
) -> Reply:
    """A successful chat completion whose message content is ``content``."""
    body: dict[str, Any] = {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish_reason,
            }
        ],
    }
    if prompt_tokens is not None and completion_tokens is not None:
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        if cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
        if cost is not None:
            usage["cost"] = cost
        body["usage"] = usage
    return Reply(body=body, delay=delay)


def json_completion(value: Any, **options: Any) -> Reply:
    """A successful completion whose content is ``value`` encoded as JSON."""
    return completion(json.dumps(value), **options)


def error(
    status: int,
    message: str,
    *,
    code: str | None = None,
    kind: str = "invalid_request_error",
    headers: dict[str, str] | None = None,
) -> Reply:
    """An error answer in OpenAI's ``{"error": {...}}`` shape."""
    body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
    return Reply(status=status, body=body, headers=dict(headers or {}))


class FakeOpenAIServer:
    """A scriptable OpenAI-compatible server running in a background thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._replies: deque[Reply] = deque()
        self._stopping = threading.Event()
        self.responder: Callable[[RecordedRequest], Reply] | None = None
        self.requests: list[RecordedRequest] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        """The API root to configure as ``LLM_BASE_URL``."""
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def queue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order."""
        with self._lock:
            self._replies.extend(replies)

    def close(self) -> None:
        """Stop serving; delayed replies are abandoned at once."""
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def _next_reply(self, request: RecordedRequest) -> Reply:
        with self._lock:
            self.requests.append(request)
            if self._replies:
                return self._replies.popleft()
        if self.responder is not None:
            return self.responder(request)
        return error(500, "The fake server has no reply scripted for this request.", kind="fake")

    def _enter(self) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.in_flight -= 1

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    payload = {"_raw": raw.decode("utf-8", "replace")}
                request = RecordedRequest(
                    path=self.path,
                    headers={key.lower(): value for key, value in self.headers.items()},
                    payload=payload,
                )
                server._enter()
                try:
                    reply = server._next_reply(request)
                    if reply.delay and server._stopping.wait(reply.delay):
                        return
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    # The client gave up (a timeout test); nothing left to answer.
                    pass
                finally:
                    server._leave()

            def _send(self, reply: Reply) -> None:
                if isinstance(reply.body, str | bytes):
                    data = reply.body.encode() if isinstance(reply.body, str) else reply.body
                    content_type = "text/plain"
                else:
                    data = json.dumps(reply.body).encode()
                    content_type = "application/json"
                self.send_response(reply.status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(data)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

        return Handler
