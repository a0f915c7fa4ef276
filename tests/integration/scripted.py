"""Helpers for research scenarios run through Django with a scripted model.

The run goes through the real actor (lease, heartbeat, orchestrator, Django store), the
real web adapter and the frozen local web; only the model is scripted, by swapping the
backend the actor builds for a :class:`ScriptedModelClient`.

``LabWeb`` is a second small loopback server for the cases the frozen corpus cannot reach
through its own search: a SearXNG-compatible ``/search`` that puts scripted results (slow,
huge, redirecting or hostile pages) ahead of the corpus results, and a few pages of its own.
It records every request, so tests can show what was and was not fetched. With
``serve_lab_web(web, host="::1")`` it listens on the IPv6 loopback instead, for pages at a
literal ``[::1]:PORT`` address.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from django.conf import settings

from research import services
from research.engine.contracts import (
    EvidenceCandidate,
    ExtractionRequest,
    ExtractionResult,
    FindingVerdict,
    FinishAction,
    PlanQuestion,
    ReadAction,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SearchAction,
    SourceSummary,
    Verification,
    VerificationRequest,
)
from research.engine.guards import fingerprint_query
from research.engine.ledger import normalize_for_matching
from research.llm.scripted import ScriptedModelClient
from research.models import ResearchRun, ResearchSource, ResearchStep
from research.worker.actors import advance_run
from tests.fixtures.frozen_web.server import FrozenWeb

# --------------------------------------------------------------------------------------------
# The lab web: scripted search results and pages of our own
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LabResult:
    """One scripted search result."""

    url: str
    title: str
    snippet: str = ""


@dataclass
class LabWeb:
    """A SearXNG-compatible search over the frozen corpus with scripted results first."""

    web: FrozenWeb
    port: int = 0
    host: str = "127.0.0.1"
    # lower-case words -> results shown first for any query containing them
    results: dict[str, list[LabResult]] = field(default_factory=dict)
    # path -> HTML, served on any host name that reaches this server
    pages: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return self.literal_url("")

    @property
    def literal_host(self) -> str:
        """The address this server listens on, as a URL writes it (IPv6 in brackets)."""
        return f"[{self.host}]" if ":" in self.host else self.host

    def literal_url(self, path: str) -> str:
        """A page of this server at its literal address, e.g. ``http://[::1]:PORT/path``."""
        return f"http://{self.literal_host}:{self.port}{path}"

    def url(self, path: str, host: str) -> str:
        """A page of this server under a ``.test`` name (resolved to 127.0.0.1)."""
        return f"http://{host}:{self.port}{path}"

    def frozen_url(self, path: str, host: str) -> str:
        """A page of the frozen web (``/_lab/...`` paths answer on any host)."""
        return self.web.url(path, host=host)

    def add_results(self, words: str, *results: LabResult) -> None:
        with self._lock:
            self.results[words.lower()] = list(results)

    def django_settings(self, **overrides: Any) -> dict[str, Any]:
        """The frozen web's settings, searching here, with this server's pages allowed."""
        values = self.web.django_settings()
        values["SEARXNG_URL"] = self.base_url
        values["RESEARCH_FETCH_ALLOWED_HOSTS"] = [
            *values["RESEARCH_FETCH_ALLOWED_HOSTS"],
            f"*.test:{self.port}",
        ]
        values.update(overrides)
        return values

    def reset(self) -> None:
        with self._lock:
            self.results.clear()
            self.pages.clear()
            self.requests.clear()
            self.queries.clear()

    def fetched_paths(self) -> list[str]:
        with self._lock:
            return [path for _, path in self.requests if not path.startswith("/search")]

    def _search(self, query: str) -> list[dict[str, Any]]:
        with self._lock:
            self.queries.append(query)
            scripted = [
                result
                for words, results in self.results.items()
                if words in query.lower()
                for result in results
            ]
        found = [{"url": r.url, "title": r.title, "content": r.snippet} for r in scripted]
        for document, _score in self.web.corpus.search(query, limit=10):
            found.append(
                {
                    "url": document.url(self.web.port, for_search=True),
                    "title": document.title,
                    "content": self.web.corpus.snippet_for(document, query),
                }
            )
        return found


class _LabServer(ThreadingHTTPServer):
    daemon_threads = True
    lab: LabWeb


class _LabHandler(BaseHTTPRequestHandler):
    server: _LabServer

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - base class signature
        return

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        lab = self.server.lab
        parts = urlsplit(self.path)
        with lab._lock:
            lab.requests.append((self.headers.get("Host", ""), self.path))
        if parts.path == "/search":
            query = parse_qs(parts.query).get("q", [""])[0]
            body = json.dumps({"query": query, "results": lab._search(query)}).encode()
            self._send(200, body, "application/json")
        elif parts.path in lab.pages:
            self._send(200, lab.pages[parts.path].encode(), "text/html; charset=utf-8")
        else:
            self._send(404, b"<html><body>Not found</body></html>", "text/html")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)


class _LabServerV6(_LabServer):
    address_family = socket.AF_INET6


def ipv6_loopback_unavailable() -> str | None:
    """Why a server cannot listen on ``::1`` here, or None when it can."""
    try:
        with socket.socket(socket.AF_INET6, socket.SOCK_STREAM) as probe:
            probe.bind(("::1", 0))
    except OSError as error:
        return f"this machine cannot listen on the IPv6 loopback address ::1 ({error})"
    return None


@contextlib.contextmanager
def serve_lab_web(web: FrozenWeb, *, host: str = "127.0.0.1") -> Iterator[LabWeb]:
    """Start a lab web beside ``web`` on an ephemeral loopback port (``host="::1"`` for IPv6)."""
    server_class = _LabServerV6 if ":" in host else _LabServer
    server = server_class((host, 0), _LabHandler)
    server.lab = LabWeb(web=web, port=server.server_address[1], host=host)
    thread = threading.Thread(target=server.serve_forever, name="lab-web", daemon=True)
    thread.start()
    try:
        yield server.lab
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


# --------------------------------------------------------------------------------------------
# Scripted model phases
# --------------------------------------------------------------------------------------------


def make_plan(objective: str, *questions: tuple[str, str]) -> ResearchPlan:
    """A plan of required questions given as (id, text)."""
    return ResearchPlan(
        objective=objective,
        questions=[PlanQuestion(id=qid, text=text) for qid, text in questions],
    )


def quote(
    excerpt: str,
    *question_ids: str,
    claim: str | None = None,
    value: str | None = None,
    **scope: str,
) -> EvidenceCandidate:
    """An evidence candidate quoting ``excerpt`` (relevant enough to count as coverage)."""
    return EvidenceCandidate(
        excerpt=excerpt,
        question_ids=list(question_ids),
        stance="supports",
        claim_key=claim,
        normalized_value=value,
        scope=scope,  # type: ignore[arg-type]
        relevance=0.9,
        confidence=0.8,
    )


@dataclass
class QuoteTable:
    """An extractor that proposes every known quotation occurring in the page it is shown."""

    quotes: Sequence[EvidenceCandidate]
    seen_titles: list[str] = field(default_factory=list)

    def __call__(self, request: ExtractionRequest) -> ExtractionResult:
        self.seen_titles.append(request.title)
        text = normalize_for_matching(request.text)
        asked = {question.id for question in request.questions}
        return ExtractionResult(
            evidence=[
                candidate.model_copy(
                    update={"question_ids": [q for q in candidate.question_ids if q in asked]}
                )
                for candidate in self.quotes
                if normalize_for_matching(candidate.excerpt) in text
                and asked.intersection(candidate.question_ids)
            ]
        )


@dataclass
class Researcher:
    """A decider that works through the plan one question at a time.

    For the first question the finish gate still names (no evidence yet, or only one
    independent source): search its query once, then read the unread candidates whose title
    contains one of its ``wanted`` words (any candidate when none are given), ``reads`` at a
    time. When nothing is left to try, ask to finish. ``hooks`` run once, when the brief of
    that iteration arrives: they stand for a person pressing a control while the worker is
    busy.
    """

    queries: dict[str, str]
    wanted: dict[str, tuple[str, ...]] = field(default_factory=dict)
    reads: int = 2
    hooks: dict[int, Callable[[], None]] = field(default_factory=dict)
    briefs: list[ResearchBrief] = field(default_factory=list)

    def __call__(self, brief: ResearchBrief) -> ResearchDecision:
        self.briefs.append(brief)
        hook = self.hooks.pop(brief.iteration, None)
        if hook is not None:
            hook()
        tried = {fingerprint_query(query).key for query in brief.recent_queries}
        for coverage in brief.coverage:
            qid = coverage.question_id
            if coverage.covered and not any(
                f"Question {qid} " in line for line in brief.unmet_finish_criteria
            ):
                continue
            query = self.queries.get(qid)
            if query and fingerprint_query(query).key not in tried:
                return ResearchDecision(
                    actions=[
                        SearchAction(
                            query=query, question_ids=[qid], rationale=f"{qid} has no evidence."
                        )
                    ]
                )
            words = self.wanted.get(qid, ())
            unread = [
                c
                for c in brief.candidates
                if c.status == "candidate" and (not words or any(w in c.title for w in words))
            ]
            if unread:
                return ResearchDecision(
                    actions=[
                        ReadAction(
                            source_id=c.source_id,
                            question_ids=[qid],
                            rationale=f"Reading a source for {qid}.",
                        )
                        for c in unread[: self.reads]
                    ]
                )
        return ResearchDecision(actions=[FinishAction(rationale="Every question has evidence.")])


# --------------------------------------------------------------------------------------------
# Driving runs and reading the step log
# --------------------------------------------------------------------------------------------


_active_model: ScriptedModelClient | None = None


def confirm_every_finding(request: VerificationRequest) -> Verification:
    """A verifier that finds every finding supported: for scenarios about something else, so
    that every model call they make is answered (and counted) as a real endpoint would."""
    return Verification(
        verdicts=[
            FindingVerdict(claim_id=item.claim_id, verdict="supported") for item in request.findings
        ]
    )


def active_scripted_model() -> ScriptedModelClient:
    """The scripted model of the current test (what ``RESEARCH_MODEL_CLIENT`` names)."""
    assert _active_model is not None, "use_scripted_model() was not called"
    return _active_model


def use_scripted_model(monkeypatch: Any) -> ScriptedModelClient:
    """Make the worker's orchestrator talk to a fresh scripted model through the
    ``RESEARCH_MODEL_CLIENT`` setting (``monkeypatch`` undoes it)."""
    client = ScriptedModelClient()
    monkeypatch.setattr(sys.modules[__name__], "_active_model", client)
    monkeypatch.setattr(
        settings, "RESEARCH_MODEL_CLIENT", f"{__name__}.active_scripted_model", raising=False
    )
    return client


def advance(run: ResearchRun) -> ResearchRun:
    """Run the background actor for ``run`` synchronously and reload it."""
    advance_run(str(run.pk))
    run.refresh_from_db()
    return run


def approved_run(
    owner: Any,
    model: ScriptedModelClient,
    plan: ResearchPlan,
    *,
    depth: str = "standard",
    budget: dict[str, int] | None = None,
) -> ResearchRun:
    """Create a run, let the scripted planner plan it and approve version 1 (now queued)."""
    model.queue("planner", plan)
    run = services.run_create(owner=owner, question=plan.objective, depth=depth)
    if budget:
        run.budget = {**run.budget, **budget}
        run.save(update_fields=["budget"])
    advance(run)
    assert run.status == "awaiting_approval", run.last_error
    return services.plan_approve(run=run, expected_version=1)


def steps(run: ResearchRun, kind: str | None = None) -> list[ResearchStep]:
    rows = ResearchStep.objects.filter(run=run).order_by("created_at", "pk")
    return list(rows.filter(kind=kind) if kind else rows)


def executed(run: ResearchRun, kind: str) -> list[ResearchStep]:
    """Steps of ``kind`` that actually ran (not refused, skipped or cancelled)."""
    return [s for s in steps(run, kind) if s.status in ("succeeded", "failed")]


def searched(run: ResearchRun) -> list[str]:
    return [s.input["payload"]["query"] for s in executed(run, "search")]


def read_urls(run: ResearchRun) -> list[str]:
    return [s.input["payload"]["url"] for s in executed(run, "read")]


def source_at(run: ResearchRun, host: str, path: str = "") -> ResearchSource:
    """The run's source on ``host`` whose URL contains ``path``."""
    (source,) = [s for s in ResearchSource.objects.filter(run=run, domain=host) if path in s.url]
    return source


def source_summaries(run: ResearchRun) -> dict[str, SourceSummary]:
    return {
        str(s.pk): SourceSummary(
            id=str(s.pk), title=s.title or s.domain, url=s.url, publisher=s.publisher or None
        )
        for s in ResearchSource.objects.filter(run=run)
    }
