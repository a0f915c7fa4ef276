"""Where a task's gold facts were lost: the recall funnel of one run, fact by fact.

``python -m evals trace`` runs tune or fictional tasks once with our method and, for every
gold fact the report does not state, says at which stage it was lost (the funnel of
docs/evaluation.md, Metrics) and what stood in its way:

* **not on a page read** — no page the run read states it;
* **not in the snapshot** — an independent rendering of a page read states it, the snapshot
  (what extraction kept of the page) does not;
* **on a page read, in no excerpt** — for each page that states it and each question the
  page was read for, the best passage stating it: its relevance, its place in the selector's
  order, whether the floors keep it, the page's best relevance and how many passages the
  floors keep, beside the passages picked first (:func:`research.llm.selection.
  explain_question`);
* **in an excerpt, not in the report** — for each question the excerpt was kept for, its
  place by relevance among that question's excerpts.

It never runs on the held-out set: its tasks' failures are not for reading while the method
changes (docs/evaluation.md). The extraction requests are recorded by wrapping the model
client at its port, so the run is the run the benchmark makes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

from evals.matching import states_fact
from evals.taskset import GoldFact, Task
from research.engine.contracts import (
    ExtractionRequest,
    ExtractionResult,
    PlanRequest,
    Report,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SynthesisRequest,
)
from research.engine.ports import ModelClient, ModelResult
from research.llm.selection import QuestionText, explain_question

# Passages shown for one page and question: the best one stating the fact, and the first
# few the selector picks ahead of it.
PICKED_SHOWN = 2
# Characters of a passage shown in the trace.
SHOWN_CHARS = 160

IN_EVIDENCE = "in an excerpt, not in the report"
ON_PAGE = "on a page read, in no excerpt"
NOT_IN_SNAPSHOT = "in the rendering of a page read, not in its snapshot (extraction left it out)"
NOT_READ = "not on a page read"


class RecordingModelClient:
    """A model client that keeps every extraction request it passes on to ``inner``."""

    def __init__(self, inner: ModelClient) -> None:
        self.inner = inner
        self.extractions: list[ExtractionRequest] = []

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        return self.inner.plan(request)

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        return self.inner.decide(brief)

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        self.extractions.append(request)
        return self.inner.extract(request)

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        return self.inner.synthesize(request)


@dataclass(frozen=True)
class PagePassage:
    """Where the first passage stating a fact in the selector's order stood for one question
    on one page."""

    question_id: str
    relevance: float
    rank: int
    kept: bool
    page_best: float
    kept_count: int
    text: str
    picked_first: tuple[tuple[float, str], ...]


@dataclass
class FactTrace:
    fact: GoldFact
    stage: str
    # (page title or address, passages) for each page that states the fact.
    pages: list[tuple[str, list[PagePassage]]] = field(default_factory=list)
    # (question id, place by relevance, excerpts of that question, relevance) of the excerpt.
    excerpts: list[tuple[str, int, int, float]] = field(default_factory=list)


def _shown(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SHOWN_CHARS else flat[: SHOWN_CHARS - 1] + "…"


def _page_passages(request: ExtractionRequest, fact: GoldFact) -> list[PagePassage]:
    found = []
    for question in request.questions:
        scored = explain_question(
            request.text,
            QuestionText(question.id, question.text),
            title=request.title,
            blocks=request.blocks,
        )
        stating = [p for p in scored if states_fact(request.text[p.start : p.end], fact)]
        if not stating:
            continue
        best = min(stating, key=lambda p: p.rank)  # the one the selector would reach first
        kept = [p for p in scored if p.kept]
        found.append(
            PagePassage(
                question.id,
                best.relevance,
                best.rank,
                best.kept,
                max((p.relevance for p in kept), default=0.0),
                len(kept),
                _shown(request.text[best.start : best.end]),
                tuple(
                    (p.relevance, _shown(request.text[p.start : p.end]))
                    for p in kept[:PICKED_SHOWN]
                ),
            )
        )
    return found


def trace_facts(
    task: Task,
    document: dict[str, Any],
    extractions: Sequence[ExtractionRequest],
    *,
    facts_stated: Sequence[str],
    facts_in_evidence: Sequence[str],
    facts_on_pages_read: Sequence[str],
) -> list[FactTrace]:
    """The trace of every gold fact of ``task`` the run (``document``, with the extraction
    requests it made) did not state, in the task's order; the fact lists are the scorer's
    (:class:`evals.scoring.TaskScore`)."""
    traces = []
    stated, in_evidence, on_pages = (
        set(facts_stated),
        set(facts_in_evidence),
        set(facts_on_pages_read),
    )
    evidence = [e for e in document.get("evidence", []) if not e.get("out_of_scope")]
    for fact in task.gold_facts:
        if fact.id in stated:
            continue
        if fact.id in in_evidence:
            trace = FactTrace(fact, IN_EVIDENCE)
            for item in evidence:
                if not states_fact(item["excerpt"], fact):
                    continue
                for question_id in item["question_ids"]:
                    pool = sorted(
                        (e for e in evidence if question_id in e["question_ids"]),
                        key=lambda e: -e["relevance_bp"],
                    )
                    place = next(n for n, e in enumerate(pool, start=1) if e is item)
                    trace.excerpts.append(
                        (question_id, place, len(pool), item["relevance_bp"] / 10_000)
                    )
            traces.append(trace)
            continue
        pages = [
            (request.title or request.source_id, _page_passages(request, fact))
            for request in extractions
            if states_fact(request.text, fact)
        ]
        if pages:
            stage = ON_PAGE
        elif fact.id in on_pages:
            stage = NOT_IN_SNAPSHOT
        else:
            stage = NOT_READ
        traces.append(FactTrace(fact, stage, pages))
    return traces


def write_traces(
    task: Task, document: dict[str, Any], traces: Sequence[FactTrace], out: TextIO
) -> None:
    """The trace of one task as text: its plan's questions, then each unstated fact."""
    out.write(f"\n=== {task.id}: {task.question}\n")
    for question in document.get("plan", {}).get("questions", []):
        out.write(f"  {question['id']}: {question['text']}\n")
    if not traces:
        out.write("  every gold fact is stated\n")
    for trace in traces:
        out.write(f"  - {trace.fact.id} ({trace.fact.description}): {trace.stage}\n")
        for question_id, place, pool, relevance in trace.excerpts:
            out.write(
                f"      {question_id}: excerpt {place} of {pool} by relevance ({relevance:.2f})\n"
            )
        for page, passages in trace.pages:
            out.write(f"      page {page!r}\n")
            if not passages:
                out.write(
                    "        no passage scored for a question states it (it spans passages, "
                    "or it is code the question does not ask for)\n"
                )
            for passage in passages:
                verdict = "kept by the floors" if passage.kept else "below the floors"
                out.write(
                    f"        {passage.question_id}: relevance {passage.relevance:.2f}, "
                    f"place {passage.rank}, {verdict} (page best {passage.page_best:.2f}, "
                    f"{passage.kept_count} kept): {passage.text}\n"
                )
                for relevance, text in passage.picked_first:
                    out.write(f"          picked first ({relevance:.2f}): {text}\n")


def traced_client(
    factory: Callable[[], ModelClient],
) -> tuple[RecordingModelClient, Callable[[], ModelClient]]:
    """One recording client and a factory handing it out (the harness builds a client per
    orchestrator; a task's run records into the one client)."""
    client = RecordingModelClient(factory())
    return client, lambda: client
