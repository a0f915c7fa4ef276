"""No hard limit is ever exceeded, whatever the model proposes and whatever the web does.

Randomised scripted runs: random budgets, pages of random sizes on a handful of sites, search
results and failures, a decider that proposes anything (including nonsense and errors), a
model that reports random usage up to what a call may consume, and a fake clock that moves
with every step and every model call.
"""

import hashlib
import random
import threading
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from research.engine.contracts import (
    Budget,
    EvidenceCandidate,
    ExtractionRequest,
    ExtractionResult,
    FinishAction,
    PlanQuestion,
    PlanRequest,
    ReadAction,
    Report,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SearchAction,
    StepRecord,
    SynthesisRequest,
    Usage,
)
from research.engine.ports import AcquisitionError, ModelError, ModelResult
from research.engine.run.metering import CALLS_PER_REQUEST, call_allowance
from research.engine.run.orchestrator import Orchestrator
from research.engine.states import RunStatus
from tests.engine.clock import FakeClock
from tests.engine.factories import make_document
from tests.engine.fakes import MemoryEvents, MemoryWeb, cite_everything
from tests.engine.memory_store import MemoryStore

RUN = "run-1"
PLAN = ResearchPlan(
    objective="What do we know about the topics?",
    questions=[
        PlanQuestion(id="q1", text="What about topic one?"),
        PlanQuestion(id="q2", text="What about topic two?"),
        PlanQuestion(id="q3", text="What about topic three?", priority="supporting"),
    ],
)
SITES = ["alpha.example.org", "beta.example.com", "www.gamma.gov", "delta.example.net"]


def _fraction(*parts: object) -> float:
    """A number in [0, 1) that depends only on ``parts`` (never on thread timing)."""
    digest = hashlib.sha256(repr(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


class TimedStore(MemoryStore):
    """Every started step takes ``step_seconds`` of the fake clock (on the caller's thread,
    so the run is deterministic whatever the worker threads do)."""

    def __init__(self, *args: Any, step_seconds: float, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.step_seconds = step_seconds

    def start_step(self, step_id: str) -> StepRecord:
        step = super().start_step(step_id)
        assert self.clock is not None
        self.clock.advance(self.step_seconds)
        return step


class RandomModel:
    """Proposes anything, fails now and then, and reports usage up to the call's allowance."""

    def __init__(self, rng: random.Random, clock: FakeClock, call_seconds: float) -> None:
        self.rng = rng
        self.clock = clock
        self.call_seconds = call_seconds
        self.decide_started: list[float] = []
        self.reported = Usage()
        self._lock = threading.Lock()

    def _usage(self, phase: str, request: Any) -> Usage:
        text = request.model_dump_json()
        allowance = call_allowance(
            text, output_tokens=request.max_output_tokens or 1, calls=CALLS_PER_REQUEST
        )
        share = _fraction(phase, text)
        usage = Usage(
            model_calls=1 + int(_fraction("calls", phase, text) < 0.2),
            input_tokens=int(allowance.input_tokens * share),
            output_tokens=int(allowance.output_tokens * share),
        )
        with self._lock:
            self.reported = self.reported + usage
        return usage

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        self.clock.advance(self.call_seconds)
        return ModelResult(PLAN, self._usage("plan", request))

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        self.decide_started.append(self.clock.monotonic())
        self.clock.advance(self.call_seconds)
        usage = self._usage("decide", brief)
        roll = self.rng.random()
        if roll < 0.05:
            raise ModelError("Invalid decision JSON.", usage=usage)
        if roll < 0.08:
            raise ModelError("The endpoint is overloaded.", retryable=True, usage=usage)
        unread = [c.source_id for c in brief.candidates if c.status == "candidate"]
        actions: list[SearchAction | ReadAction | FinishAction] = []
        for _ in range(self.rng.randint(1, 3)):
            choice = self.rng.random()
            if unread and choice < 0.6:
                actions.append(
                    ReadAction(
                        source_id=self.rng.choice(unread + ["s404"]),
                        question_ids=[self.rng.choice(["q1", "q2", "q3"])],
                        rationale="Read.",
                    )
                )
            elif choice < 0.92:
                actions.append(
                    SearchAction(
                        query=f"topic {self.rng.randint(1, 6)} facts",
                        question_ids=[self.rng.choice(["q1", "q2", "q3"])],
                        rationale="Search.",
                    )
                )
            else:
                actions.append(FinishAction(rationale="Finish."))
        actions = actions or [FinishAction(rationale="Finish.")]
        return ModelResult(ResearchDecision(actions=actions), usage)

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        usage = self._usage("extract", request)
        if _fraction("extract-fails", request.source_id) < 0.1:
            raise ModelError("Extraction failed.", usage=usage)
        sentences = [s for s in request.text.split(". ") if s.strip()]
        evidence = [
            EvidenceCandidate(
                excerpt=sentence[:900],
                question_ids=[["q1", "q2", "q3"][n % 3]],
                stance="supports",
                claim_key=f"claim {n % 2}",
                normalized_value=str(int(_fraction(request.source_id, n) * 3)),
                relevance=0.9,
                confidence=0.8,
            )
            for n, sentence in enumerate(sentences[:4])
        ]
        return ModelResult(ExtractionResult(evidence=evidence), usage)

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        self.clock.advance(self.call_seconds)
        return ModelResult(cite_everything(request), self._usage("synthesize", request))


@st.composite
def budgets(draw: st.DrawFn) -> Budget:
    # Mostly budgets a run can work with, one in five too small to get far (or to plan).
    tight = draw(st.integers(0, 4)) == 0
    model_calls = draw(st.integers(2, 8) if tight else st.integers(8, 40))
    bytes_per_source = draw(st.integers(300, 3000))
    input_tokens = draw(st.integers(1, 20_000) if tight else st.integers(20_000, 250_000))
    output_tokens = draw(st.integers(1, 12_000) if tight else st.integers(12_000, 80_000))
    return Budget(
        iterations=draw(st.integers(1, 8)),
        searches=draw(st.integers(0, 2) if tight else st.integers(1, 6)),
        fetched_sources=draw(st.integers(0, 2) if tight else st.integers(1, 8)),
        model_calls=model_calls,
        elapsed_seconds=draw(st.integers(15, 1200)),
        bytes_per_source=bytes_per_source,
        bytes_per_run=draw(st.integers(bytes_per_source, 12_000)),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        synthesis_model_calls=min(2, model_calls),
        synthesis_input_tokens=draw(st.integers(0, input_tokens // 2)),
        synthesis_output_tokens=draw(st.integers(0, output_tokens // 2)),
    )


def _web(rng: random.Random, clock: FakeClock) -> MemoryWeb:
    pages = {}
    for number in range(rng.randint(2, 10)):
        url = f"https://{rng.choice(SITES)}/page-{number}"
        sentences = [
            f"Fact {number}.{n} about topic {rng.randint(1, 6)} is {rng.randint(1, 99)}"
            for n in range(rng.randint(1, 40))
        ]
        pages[url] = make_document(". ".join(sentences) + ".", url=url, title=f"Page {number}")
    urls = list(pages)
    results = {
        f"topic {topic} facts": rng.sample(urls, rng.randint(0, len(urls))) for topic in range(1, 7)
    }
    errors = {
        url: AcquisitionError(
            rng.choice(["blocked", "failed", "unsupported"]),
            "The page could not be read.",
            retryable=rng.random() < 0.5,
        )
        for url in urls
        if rng.random() < 0.2
    }
    search_errors = {
        query: AcquisitionError("failed", "The provider is down.", retryable=True)
        for query in results
        if rng.random() < 0.15
    }
    return MemoryWeb(pages, results, errors=errors, search_errors=search_errors, clock=clock)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(budget=budgets(), seed=st.integers(0, 2**32 - 1), timing=st.integers(0, 30))
def test_no_hard_limit_is_ever_exceeded(budget: Budget, seed: int, timing: int) -> None:
    rng = random.Random(seed)
    clock = FakeClock()
    store = TimedStore(
        RUN,
        budget=budget,
        status=RunStatus.CREATED,
        plan_version=0,
        objective=PLAN.objective,
        clock=clock,
        step_seconds=timing / 3,
    )
    web = _web(rng, clock)
    web.seconds_per_call = 0.0  # worker threads never move the clock (determinism)
    model = RandomModel(rng, clock, call_seconds=timing)
    orchestrator = Orchestrator(
        store=store,
        model=model,
        sources=web,
        events=MemoryEvents(),
        clock=clock,
        max_parallel_extractions=1,
    )
    status = orchestrator.advance(RUN)
    if status == RunStatus.AWAITING_APPROVAL:
        store.approve()
        status = orchestrator.advance(RUN)

    usage = store.run.usage
    assert usage.iterations <= budget.iterations
    assert usage.searches <= budget.searches
    assert usage.fetched_sources <= budget.fetched_sources
    assert usage.model_calls <= budget.model_calls
    assert usage.input_tokens <= budget.input_tokens
    assert usage.output_tokens <= budget.output_tokens
    assert usage.bytes_fetched <= budget.bytes_per_run
    assert all(doc.content_bytes <= budget.bytes_per_source for doc in store.snapshots.values())
    # Usage is counted from what really happened: every call and every request on the wire.
    assert usage.model_calls == model.reported.model_calls
    assert usage.input_tokens == model.reported.input_tokens
    assert usage.searches == len(web.queries)
    # Refusals (blocked, unsupported) read nothing and cost no fetch; every other fetch does.
    assert usage.fetched_sources == len(web.fetches) - len(web.refused)
    # Time: no research step and no decision starts once research time is used up.
    research_starts = [
        moment
        for step_id, moments in store.started_at.items()
        if store.steps[step_id].kind in ("search", "read")
        for moment in moments
    ]
    assert all(moment < budget.elapsed_seconds for moment in research_starts)
    assert all(moment < budget.elapsed_seconds for moment in model.decide_started)

    assert status in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED, RunStatus.FAILED)
    if status != RunStatus.FAILED:
        assert store.report is not None
        assert store.report.partial == (status == RunStatus.BUDGET_EXHAUSTED)
