"""What ``python -m evals trace`` says about a run's unstated gold facts (evals/trace.py).

The task, page and run document are written here for the test; the page's passages are
scored by the real selector (research/llm/selection.py), whose order the trace reports."""

import io

import pytest

from evals.cli import main
from evals.taskset import Task
from evals.trace import (
    IN_EVIDENCE,
    NOT_IN_SNAPSHOT,
    NOT_READ,
    ON_PAGE,
    trace_facts,
    write_traces,
)
from research.engine.contracts import ExtractionRequest, PlanQuestion
from research.llm.selection import (
    MIN_RELEVANCE,
    RELATIVE_FLOOR,
    QuestionText,
    explain_question,
    select_passages,
)

pytestmark = pytest.mark.service_neutral

PAGE = (
    "Quill keeps every draft in its archive. "
    "Drafts older than ninety days are moved to cold storage. "
    "The archive is compacted every Sunday night. "
    "Compaction frees the space of deleted drafts."
)
QUESTION = "How long does Quill keep drafts in the archive?"


def task() -> Task:
    return Task.model_validate(
        {
            "id": "quill-draft-retention",
            "category": "documentation",
            "question": QUESTION,
            "docset": "quill",
            "question_type": "quantity",
            "gold_pages": ["quill.test/archive"],
            "gold_facts": [
                {"id": "ninety-days", "description": "after 90 days", "patterns": ["ninety days"]},
                {"id": "sunday", "description": "compacted on Sundays", "patterns": ["sunday"]},
                {"id": "cold", "description": "cold storage", "patterns": ["cold storage"]},
                {"id": "offsite", "description": "an offsite copy", "patterns": ["offsite"]},
                {"id": "frees", "description": "frees space", "patterns": ["frees the space"]},
            ],
        }
    )


def request() -> ExtractionRequest:
    return ExtractionRequest(
        source_id="s1",
        title="Quill archive",
        kind="text",
        text=PAGE,
        questions=[PlanQuestion(id="q1", text=QUESTION)],
    )


def excerpt(text: str, relevance_bp: int) -> dict:
    return {"excerpt": text, "question_ids": ["q1"], "relevance_bp": relevance_bp}


def test_explain_question_orders_every_passage_as_the_selector_picks_them():
    scored = explain_question(PAGE, QuestionText("q1", QUESTION), title="Quill archive")
    assert [p.rank for p in scored] == list(range(1, len(scored) + 1))
    picked = select_passages(PAGE, [QuestionText("q1", QUESTION)], title="Quill archive")
    first = scored[0]
    assert (first.start, first.end) in {(p.start, p.end) for p in picked}
    # The floors: an absolute relevance and a share of the page's best passage.
    best = max(p.relevance for p in scored)
    for passage in scored:
        passes = passage.relevance >= MIN_RELEVANCE and passage.relevance >= RELATIVE_FLOOR * best
        assert passage.kept == passes
    assert any(not p.kept for p in scored)


def test_each_unstated_fact_gets_its_stage():
    document = {
        "plan": {"questions": [{"id": "q1", "text": QUESTION}]},
        "evidence": [
            excerpt("Drafts older than ninety days are moved to cold storage.", 7000),
            excerpt("The archive is compacted every Sunday night.", 4000),
        ],
    }
    traces = trace_facts(
        task(),
        document,
        [request()],
        facts_stated=["ninety-days"],
        facts_in_evidence=["ninety-days", "sunday", "cold"],
        facts_on_pages_read=["ninety-days", "sunday", "cold", "offsite", "frees"],
    )
    stages = {trace.fact.id: trace.stage for trace in traces}
    assert stages == {
        "sunday": IN_EVIDENCE,
        "cold": IN_EVIDENCE,
        "offsite": NOT_IN_SNAPSHOT,
        "frees": ON_PAGE,
    }
    sunday = next(trace for trace in traces if trace.fact.id == "sunday")
    assert sunday.excerpts == [("q1", 2, 2, 0.4)]
    frees = next(trace for trace in traces if trace.fact.id == "frees")
    ((title, (passage,)),) = frees.pages
    assert title == "Quill archive" and passage.question_id == "q1"
    scored = explain_question(PAGE, QuestionText("q1", QUESTION), title="Quill archive")
    stating = [p for p in scored if "frees the space" in PAGE[p.start : p.end]]
    assert passage.rank == min(p.rank for p in stating)
    assert passage.kept == next(p.kept for p in scored if p.rank == passage.rank)

    out = io.StringIO()
    write_traces(task(), document, traces, out)
    text = out.getvalue()
    assert "=== quill-draft-retention" in text and "ninety-days" not in text
    assert "frees (frees space): on a page read, in no excerpt" in text
    assert "q1: excerpt 2 of 2 by relevance (0.40)" in text


def test_a_fact_on_no_page_read_is_said_so():
    (trace,) = trace_facts(
        task().model_copy(update={"gold_facts": task().gold_facts[3:4]}),
        {"evidence": []},
        [request()],
        facts_stated=[],
        facts_in_evidence=[],
        facts_on_pages_read=[],
    )
    assert trace.stage == NOT_READ and trace.pages == []


def test_the_held_out_set_is_never_traced(capsys):
    assert main(["trace", "--set", "heldout"]) == 2
    assert "never traced" in capsys.readouterr().err
