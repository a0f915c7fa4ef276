"""In-memory implementations of the engine ports, for tests that exercise the rules together.

``MemoryStore`` keeps the Django store's promises (idempotent steps, sources and evidence,
compare-and-set transitions, lease checks on every write) and records what the tests need
to check them: the thread of every call, every write in order, heartbeats and transitions.
``MemoryWeb`` serves a dictionary of pages and measures how many calls overlap.
"""

import ipaddress
import re
import threading
import time
from collections.abc import Callable, Collection
from typing import Any
from urllib.parse import urlsplit

from pydantic import BaseModel

from research.engine.contracts import (
    EvidenceCandidate,
    ExtractionRequest,
    ExtractionResult,
    FinishAction,
    PlanRequest,
    ProgressEvent,
    ReadAction,
    Report,
    ReportContradiction,
    ReportSection,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    ScholarlyMetadata,
    SearchAction,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
    Statement,
    SynthesisRequest,
    Usage,
)
from research.engine.guards import estimate_tokens, fingerprint_query
from research.engine.ports import (
    AcquisitionError,
    CandidateDrop,
    ModelError,
    ModelResult,
)
from research.engine.urls import (
    evaluate_domain_policy,
    hostname,
    registrable_domain,
)
from tests.engine.clock import FakeClock

# The fake web knows the best-known metadata endpoints, enough to act out the real rule.
METADATA_ADDRESSES = frozenset({"169.254.169.254", "fd00:ec2::254"})


class MemoryWeb:
    """A SourceAdapter over a dictionary of pages, honouring the domain policy.

    ``results`` maps a query to result URLs; a query not listed falls back to a listed one
    with the same fingerprint. Like the web adapter, ``discover`` returns the results the
    policy allows first and the refused ones after them, and ``screen`` refuses literal
    non-public addresses unless ``allowed_hosts`` (``host:port`` as written in the URL) lists
    them. ``errors`` makes a URL fail with a given error; ``delay`` makes every call take that
    long (so overlapping calls can be measured); ``on_acquire`` and ``on_discover`` run at
    the start of each call (tests use them to pause, cancel or crash mid-run).
    """

    def __init__(
        self,
        pages: dict[str, SourceDocument],
        results: dict[str, list[str]],
        *,
        errors: dict[str, AcquisitionError] | None = None,
        search_errors: dict[str, AcquisitionError] | None = None,
        delay: float = 0.0,
        on_acquire: Callable[[str], None] | None = None,
        on_discover: Callable[[str], None] | None = None,
        clock: FakeClock | None = None,
        seconds_per_call: float = 0.0,
        allowed_hosts: Collection[str] = (),
    ) -> None:
        self.pages = pages
        self.allowed_hosts = frozenset(allowed_hosts)
        self.results = results
        self.errors = errors or {}
        self.search_errors = search_errors or {}
        self.delay = delay
        self.on_acquire = on_acquire
        self.on_discover = on_discover
        self.clock = clock
        self.seconds_per_call = seconds_per_call
        self.fetches: list[str] = []
        # Fetches refused without reading anything (they cost the run no fetch).
        self.refused: list[str] = []
        self.queries: list[str] = []
        self._lock = threading.Lock()
        self._active = {"search": 0, "fetch": 0}
        self._active_domains: dict[str, int] = {}
        self.peak = {"search": 0, "fetch": 0, "per_domain": 0}

    def _enter(self, kind: str, domain: str | None = None) -> None:
        with self._lock:
            self._active[kind] += 1
            self.peak[kind] = max(self.peak[kind], self._active[kind])
            if domain is not None:
                self._active_domains[domain] = self._active_domains.get(domain, 0) + 1
                self.peak["per_domain"] = max(self.peak["per_domain"], self._active_domains[domain])

    def _leave(self, kind: str, domain: str | None = None) -> None:
        with self._lock:
            self._active[kind] -= 1
            if domain is not None:
                self._active_domains[domain] -= 1

    def _urls_for(self, query: str) -> list[str]:
        if query in self.results:
            return self.results[query]
        key = fingerprint_query(query).key
        for listed, urls in self.results.items():
            if fingerprint_query(listed).key == key:
                return urls
        return []

    def discover(
        self, query: str, *, policy: SourcePolicy, limit: int = 10
    ) -> list[SearchCandidate]:
        self.queries.append(query)
        if self.on_discover is not None:
            self.on_discover(query)
        self._enter("search")
        try:
            if self.clock is not None:
                self.clock.advance(self.seconds_per_call)
            if self.delay:
                time.sleep(self.delay)
            if query in self.search_errors:
                raise self.search_errors[query]
            found = self._urls_for(query)
            allowed = [u for u in found if evaluate_domain_policy(u, policy).allowed]
            urls = allowed + [u for u in found if u not in allowed]
            return [
                SearchCandidate(
                    url=url,
                    title=self.pages[url].title if url in self.pages else "",
                    provider="memory",
                    rank=rank,
                )
                for rank, url in enumerate(urls[:limit], start=1)
            ]
        finally:
            self._leave("search")

    def screen(self, url: str, *, policy: SourcePolicy) -> CandidateDrop | None:
        parts = urlsplit(url)
        host = parts.hostname or ""
        try:
            address = ipaddress.ip_address(host)
        except ValueError:
            address = None
        if address is not None:
            if str(address) in METADATA_ADDRESSES:
                return "cloud metadata address"
            written = f"[{host}]" if address.version == 6 else host
            port = parts.port or (443 if parts.scheme == "https" else 80)
            listed = f"{written}:{port}" in self.allowed_hosts
            if not address.is_global and not listed:
                return "private address not allowed"
        return evaluate_domain_policy(url, policy).refusal

    def acquire(
        self,
        url: str,
        *,
        policy: SourcePolicy,
        max_bytes: int,
        work: ScholarlyMetadata | None = None,
    ) -> SourceDocument:
        self.fetches.append(url)
        if self.on_acquire is not None:
            self.on_acquire(url)
        domain = registrable_domain(hostname(url))
        self._enter("fetch", domain)
        try:
            if self.clock is not None:
                self.clock.advance(self.seconds_per_call)
            if self.delay:
                time.sleep(self.delay)
            decision = evaluate_domain_policy(url, policy)
            if not decision.allowed:
                raise AcquisitionError("blocked", decision.reason)
            if url in self.errors:
                raise self.errors[url]
            document = self.pages.get(url)
            if document is None:
                raise AcquisitionError("failed", "The page could not be found.", retryable=False)
            if document.content_bytes > max_bytes:
                raise AcquisitionError(
                    "unsupported", "The page is larger than the per-source limit."
                )
            return document
        except AcquisitionError as error:
            if not error.counts_as_fetch:
                self.refused.append(url)
            raise
        finally:
            self._leave("fetch", domain)


class MemoryEvents:
    """An EventSink that remembers what it was sent."""

    def __init__(self) -> None:
        self.events: list[ProgressEvent] = []
        self._lock = threading.Lock()

    def emit(self, event: ProgressEvent) -> None:
        with self._lock:
            self.events.append(event)

    def of_type(self, kind: str) -> list[ProgressEvent]:
        return [event for event in self.events if event.type == kind]


# --------------------------------------------------------------------------------------------
# A rule-based model
# --------------------------------------------------------------------------------------------

Rule = Callable[[Any], Any]
UsageRule = Callable[[str, BaseModel], Usage]


def default_usage(phase: str, request: BaseModel) -> Usage:
    """One call, tokens estimated from the request, a short answer."""
    return Usage(
        model_calls=1, input_tokens=estimate_tokens(request.model_dump_json()), output_tokens=60
    )


class RuleModel:
    """A ModelClient whose four calls follow plain functions, one per phase.

    Every request is recorded in ``requests[phase]``. ``fail_next(phase, error)`` makes the
    next call(s) of a phase raise; a rule may also return an exception to raise it. With a
    ``clock``, every call advances it by ``seconds_per_call``.
    """

    def __init__(
        self,
        *,
        plan: ResearchPlan | Rule | None = None,
        decide: Rule | None = None,
        extract: Rule | None = None,
        synthesize: Rule | None = None,
        usage: UsageRule = default_usage,
        clock: FakeClock | None = None,
        seconds_per_call: float = 0.0,
    ) -> None:
        self._plan = plan
        self._decide = decide or (lambda brief: finish_decision("Nothing to do."))
        self._extract = extract or first_sentence_extractor
        self._synthesize = synthesize or cite_everything
        self._usage = usage
        self.clock = clock
        self.seconds_per_call = seconds_per_call
        self.requests: dict[str, list[Any]] = {
            "plan": [],
            "decide": [],
            "extract": [],
            "synthesize": [],
        }
        self.call_started_at: dict[str, list[float]] = {phase: [] for phase in self.requests}
        self.failures: dict[str, list[ModelError]] = {}
        self._lock = threading.Lock()

    def fail_next(self, phase: str, error: ModelError, times: int = 1) -> None:
        self.failures.setdefault(phase, []).extend([error] * times)

    def _call(self, phase: str, request: BaseModel, rule: Rule) -> ModelResult[Any]:
        with self._lock:
            self.requests[phase].append(request)
            if self.clock is not None:
                self.call_started_at[phase].append(self.clock.monotonic())
            pending = self.failures.get(phase)
            failure = pending.pop(0) if pending else None
        if self.clock is not None:
            self.clock.advance(self.seconds_per_call)
        if failure is not None:
            raise failure
        value = rule(request)
        if isinstance(value, Exception):
            raise value
        return ModelResult(value, self._usage(phase, request))

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        rule = self._plan
        if isinstance(rule, ResearchPlan):
            fixed = rule
            return self._call("plan", request, lambda _: fixed)
        if rule is None:
            return self._call("plan", request, lambda r: r.previous_plan)
        return self._call("plan", request, rule)

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        return self._call("decide", brief, self._decide)

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        return self._call("extract", request, self._extract)

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        return self._call("synthesize", request, self._synthesize)


def finish_decision(rationale: str = "Done.") -> ResearchDecision:
    return ResearchDecision(actions=[FinishAction(rationale=rationale)])


class TopicDecider:
    """Decides like a careful researcher working on one question at a time.

    For the first question the finish gate still names: read the first unread candidate
    whose title or snippet mentions the question's topic, else search the question's query
    once, else move to the next question. Finish when nothing is left to do. Every decision
    is recorded in ``briefs`` with the brief it came from.
    """

    def __init__(
        self,
        queries: dict[str, str],
        topics: dict[str, str],
        *,
        one_question_at_a_time: bool = True,
    ) -> None:
        self.queries = queries
        self.topics = topics
        self.one_at_a_time = one_question_at_a_time
        self.briefs: list[ResearchBrief] = []

    def __call__(self, brief: ResearchBrief) -> ResearchDecision:
        self.briefs.append(brief)
        tried = {fingerprint_query(query).key for query in brief.recent_queries}
        actions: list[SearchAction | ReadAction | FinishAction] = []
        chosen: set[str] = set()
        for question in brief.plan.questions:
            if not any(
                re.search(rf"\b{question.id}\b", line) for line in brief.unmet_finish_criteria
            ):
                continue
            topic = self.topics.get(question.id, "").casefold()
            unread = [
                c
                for c in brief.candidates
                if c.status == "candidate"
                and c.source_id not in chosen
                and topic
                and topic in f"{c.title} {c.snippet}".casefold()
            ]
            query = self.queries.get(question.id)
            if unread:
                chosen.add(unread[0].source_id)
                actions.append(
                    ReadAction(
                        source_id=unread[0].source_id,
                        question_ids=[question.id],
                        rationale=f"Reading the best source for {question.id}.",
                    )
                )
            elif query and fingerprint_query(query).key not in tried:
                actions.append(
                    SearchAction(
                        query=query,
                        question_ids=[question.id],
                        rationale=f"Searching because {question.id} has no evidence yet.",
                    )
                )
            else:
                continue
            if self.one_at_a_time or len(actions) == 3:
                break
        if not actions:
            return finish_decision("Nothing more to do.")
        return ResearchDecision(actions=actions)


def first_sentence_extractor(request: ExtractionRequest) -> ExtractionResult:
    """Quote the first sentence of the page for every question, fairly relevant."""
    sentence = request.text.split(". ")[0].strip()
    if not sentence:
        return ExtractionResult()
    return ExtractionResult(
        evidence=[
            EvidenceCandidate(
                excerpt=sentence[:1000],
                question_ids=[q.id for q in request.questions],
                stance="supports",
                relevance=0.8,
                confidence=0.7,
            )
        ]
    )


class TableExtractor:
    """Evidence candidates by page title; unknown titles fall back to the first sentence."""

    def __init__(self, table: dict[str, list[EvidenceCandidate]]) -> None:
        self.table = table

    def __call__(self, request: ExtractionRequest) -> ExtractionResult:
        if request.title in self.table:
            return ExtractionResult(evidence=self.table[request.title])
        return first_sentence_extractor(request)


def cite_everything(request: SynthesisRequest) -> Report:
    """One finding per question citing its evidence and saying what the first excerpt says,
    conflicts side by side, gaps as given."""
    sections = []
    for question in request.plan.questions:
        evidence = [e for e in request.evidence if question.id in e.question_ids][:3]
        cited = [e.id for e in evidence]
        statements = (
            [
                Statement(
                    claim_id=f"{question.id}-finding",
                    kind="finding",
                    text=evidence[0].excerpt[:4000],
                    evidence_ids=cited,
                )
            ]
            if cited
            else []
        )
        sections.append(
            ReportSection(id=question.id, title=question.text[:300], statements=statements)
        )
    return Report(
        title=request.plan.objective[:300],
        sections=sections,
        contradictions=[
            ReportContradiction(
                summary=f"Sources disagree about {item.claim_key}.",
                evidence_ids=item.evidence_ids,
            )
            for item in request.contradictions
        ],
        gaps=list(request.gaps),
        partial=request.partial,
    )
