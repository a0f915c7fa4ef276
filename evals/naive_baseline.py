"""The naive baseline the benchmark scores beside our method: retrieve and quote.

It searches the question once (the same search provider the runs use), reads the top five
results (the same SSRF-safe fetcher and snapshot builder, through ``WebSourceAdapter``), splits
their snapshots into sentences and quotes the ten sentences with the highest Okapi BM25 score
against the question, as a report of ten findings each citing its sentence. Nothing plans,
decides, verifies or says "not found". The result is a run document in the shape
``research.cli.run_document`` produces, so the same scorer scores it; it never touches
the database. Its job is to show what a method must beat: a report that quotes the right
pages without understanding them.
"""

from __future__ import annotations

import math
import re
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from bm25s.stopwords import STOPWORDS_EN

from evals.taskset import Task
from research.engine.contracts import Report, ReportSection, SourcePolicy, Statement
from research.engine.guards import BUDGET_PRESETS
from research.engine.ledger import snapshot_content_hash
from research.engine.urls import hostname
from research.sources.adapter import WebSourceAdapter
from research.sources.errors import SourceError

# The baseline's definition (issue 14): the top five search results, the ten best sentences.
TOP_PAGES = 5
QUOTED_SENTENCES = 10
# A navigation label or a heading ("Maximum Number Of Columns") is not a sentence a reader
# would quote as an answer; five words is the shortest ordinary declarative sentence we keep.
MIN_SENTENCE_WORDS = 5
# Excerpts are at most 1,000 characters everywhere in the project (DESIGN.md §6).
MAX_EXCERPT_CHARS = 1000
# Okapi BM25's customary parameters (Robertson & Zaragoza, 2009).
BM25_K1 = 1.5
BM25_B = 0.75

_TOKEN = re.compile(r"\w+")
_STOP = frozenset(STOPWORDS_EN)
# A sentence ends at ., ! or ? followed by white space and a capital, digit or opening mark.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(\[\u201c])")


@dataclass(frozen=True)
class Sentence:
    """A sentence of one page's snapshot: ``text == snapshot[start:end]``."""

    page: int
    start: int
    end: int
    text: str


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens without English stop words."""
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def split_sentences(snapshot: str, page: int = 0) -> list[Sentence]:
    """The snapshot's sentences with their offsets: every line is split at sentence ends; a
    piece with fewer than ``MIN_SENTENCE_WORDS`` words is dropped, a longer one cut to the
    excerpt limit."""
    found: list[Sentence] = []
    offset = 0
    for line in snapshot.split("\n"):
        cursor = 0
        for match in [*_SENTENCE_END.finditer(line), None]:
            stop = match.start() if match is not None else len(line)
            piece = line[cursor:stop]
            lead = len(piece) - len(piece.lstrip())
            text = piece.strip()[:MAX_EXCERPT_CHARS].rstrip()
            if len(text.split()) >= MIN_SENTENCE_WORDS:
                start = offset + cursor + lead
                found.append(Sentence(page, start, start + len(text), text))
            if match is not None:
                cursor = match.end()
        offset += len(line) + 1
    return found


def bm25_scores(query: Sequence[str], documents: Sequence[Sequence[str]]) -> list[float]:
    """Okapi BM25 of ``query`` against each tokenised document of the collection."""
    if not documents:
        return []
    total = len(documents)
    average = sum(len(d) for d in documents) / total or 1.0
    frequency = Counter(term for document in documents for term in set(document))
    idf = {
        term: math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
        for term in set(query)
    }
    scores = []
    for document in documents:
        counts = Counter(document)
        norm = BM25_K1 * (1 - BM25_B + BM25_B * len(document) / average)
        scores.append(
            sum(
                idf[term] * counts[term] * (BM25_K1 + 1) / (counts[term] + norm)
                for term in set(query)
                if counts[term]
            )
        )
    return scores


def top_sentences(question: str, snapshots: Sequence[str]) -> list[Sentence]:
    """The ``QUOTED_SENTENCES`` sentences of ``snapshots`` that score highest against the
    question (ties: earlier page, then earlier sentence); sentences scoring 0 are never quoted."""
    sentences = [s for page, text in enumerate(snapshots) for s in split_sentences(text, page)]
    scores = bm25_scores(tokens(question), [tokens(s.text) for s in sentences])
    ranked = sorted(
        (item for item in zip(scores, sentences, strict=True) if item[0] > 0),
        key=lambda item: (-item[0], item[1].page, item[1].start),
    )
    return [sentence for _, sentence in ranked[:QUOTED_SENTENCES]]


def naive_run_document(task: Task, *, adapter: WebSourceAdapter) -> dict[str, Any]:
    """Run the baseline on ``task``'s question and return its run document."""
    run_id = str(uuid.uuid4())
    policy = SourcePolicy.model_validate(task.source_policy or {})
    max_bytes = BUDGET_PRESETS[task.depth].bytes_per_source
    search_step = {
        "id": f"{run_id}-search",
        "kind": "search",
        "status": "completed",
        "iteration": 1,
        "attempt": 1,
        "query": task.question,
        "url": None,
        "source_id": None,
        "refused": False,
        "rationale": "Search the question as asked.",
        "summary": "",
        "error": "",
    }
    steps = [search_step]
    try:
        candidates = adapter.discover(task.question, policy=policy, limit=TOP_PAGES)
    except SourceError as error:
        candidates = []
        search_step.update(status="failed", error=str(error))

    sources: list[dict[str, Any]] = []
    snapshots: list[str] = []
    for candidate in candidates[:TOP_PAGES]:
        source_id = f"{run_id}-source-{len(steps)}"
        read = {**search_step, "id": f"{run_id}-read-{len(steps)}", "kind": "read"}
        read.update(query=None, url=candidate.url, source_id=source_id, rationale="A top result.")
        steps.append(read)
        try:
            snapshot = adapter.acquire(candidate.url, policy=policy, max_bytes=max_bytes)
        except SourceError as error:
            read.update(status="failed", error=str(error))
            continue
        sources.append(
            {
                "id": source_id,
                "run_id": run_id,
                "url": snapshot.final_url,
                "canonical_url": snapshot.canonical_url,
                "domain": hostname(snapshot.final_url),
                "title": snapshot.title,
                "publisher": snapshot.publisher,
                "published_at": snapshot.published_at,
                "class": "unknown",
                "status": "fetched",
                "kind": snapshot.kind,
                "content_hash": snapshot_content_hash(snapshot.text),
                "duplicate_of": None,
                "declared_canonical_url": snapshot.declared_canonical_url,
                "independence_cluster": f"source:{source_id}",
                "snapshot_intact": True,
                "discovered_by_step": search_step["id"],
                "status_reason": "",
            }
        )
        snapshots.append(snapshot.text)

    evidence: list[dict[str, Any]] = []
    findings: list[Statement] = []
    for number, sentence in enumerate(top_sentences(task.question, snapshots), start=1):
        source = sources[sentence.page]
        evidence_id = f"{run_id}-ev-{number}"
        evidence.append(
            {
                "id": evidence_id,
                "run_id": run_id,
                "source_id": source["id"],
                "excerpt": sentence.text,
                "locator": {
                    "start": sentence.start,
                    "end": sentence.end,
                    "snapshot_hash": source["content_hash"],
                },
                "locator_text": snapshots[sentence.page][sentence.start : sentence.end],
                "question_ids": ["q1"],
                "stance": "supports",
                "out_of_scope": False,
            }
        )
        findings.append(
            Statement(
                claim_id=f"quote-{number}",
                kind="finding",
                text=sentence.text,
                evidence_ids=[evidence_id],
            )
        )
    report = Report(
        title=f"Top sentences for: {task.question}"[:300],
        sections=[ReportSection(id="quotes", title="Best-matching sentences", statements=findings)]
        if findings
        else [],
        mode="extractive",
    ).model_dump(mode="json")
    by_id = {item["id"]: item for item in evidence}
    sources_by_id = {source["id"]: source for source in sources}
    return {
        "schema": "deep-research/run-document",
        "version": 1,
        "run_id": run_id,
        "question": task.question,
        "depth": task.depth,
        "owner": "naive-baseline",
        # The baseline cannot tell an answer from a near miss: it "completes" whenever it has
        # something to quote, and fails only when it has nothing.
        "status": "completed" if findings else "failed",
        "terminal_reason": "" if findings else "Nothing to quote.",
        "last_error": "",
        "plan_version": 1,
        "plan": None,
        "source_policy": policy.model_dump(mode="json"),
        "usage": {
            "searches": 1,
            "fetched_sources": len(sources),
            "model_calls": 0,
            "input_tokens": 0,
            "output_tokens": 0,
        },
        "research_counters": {"rejected_excerpts": 0},
        "report": report if findings else None,
        "citations": [
            {
                "evidence_id": item["id"],
                "number": number,
                "resolved": True,
                "evidence": item,
                "source": sources_by_id[item["source_id"]],
            }
            for number, item in enumerate(by_id.values(), start=1)
        ],
        "evidence": evidence,
        "sources": sources,
        "steps": steps,
    }
