"""The naive retrieve-and-quote baseline: its sentences, its BM25, and one real run."""

from __future__ import annotations

import math

import pytest
from django.test import override_settings

from evals.harness import run_naive_task, web_reference
from evals.matching import source_name
from evals.naive_baseline import (
    QUOTED_SENTENCES,
    TOP_PAGES,
    bm25_scores,
    split_sentences,
    tokens,
    top_sentences,
)
from evals.taskset import load_tasks

pytestmark = pytest.mark.service_neutral

SNAPSHOT = (
    "Limits In SQLite\n"
    "The number of attached databases is limited to 10 by default. It can be raised.\n"
    "  The maximum number of attached databases cannot be increased above 125.\n"
    "Next"
)


def test_sentences_keep_their_offsets_and_short_pieces_are_dropped():
    sentences = split_sentences(SNAPSHOT, page=2)

    assert [s.text for s in sentences] == [
        "The number of attached databases is limited to 10 by default.",
        "The maximum number of attached databases cannot be increased above 125.",
    ]
    assert all(SNAPSHOT[s.start : s.end] == s.text and s.page == 2 for s in sentences)


def test_bm25_is_the_okapi_formula():
    documents = [["attached", "databases", "limit"], ["page", "size"], ["attached", "page"]]

    scores = bm25_scores(["attached"], documents)

    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))
    average = 7 / 3
    first = idf * 1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 3 / average))
    third = idf * 1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 2 / average))
    assert scores == pytest.approx([first, 0.0, third])


def test_the_best_sentences_win_and_unrelated_ones_are_never_quoted():
    pages = [SNAPSHOT, "Completely unrelated text about page sizes and other things here."]

    best = top_sentences("Above what number can attached databases not be increased?", pages)

    assert best[0].text.endswith("increased above 125.")
    assert all("unrelated" not in s.text for s in best)
    assert tokens("What is the limit of the attached databases?") == [
        "what",
        "limit",
        "attached",
        "databases",
    ]
    many = [f"The attached database sentence number {n} is here." for n in range(30)]
    assert len(top_sentences("attached database", ["\n".join(many)])) == QUOTED_SENTENCES


def test_the_baseline_reads_the_top_five_results_and_quotes_verified_sentences(
    real_docs_hostile_web,
):
    web = real_docs_hostile_web
    task = load_tasks(["sqlite-attach-limit"], task_set="tune")[0]

    with override_settings(**web.django_settings()):
        run = run_naive_task(task, web=web, reference=web_reference(web, hostile=True))

    document, score = run.document, run.score
    expected = [f"{d.host}{d.path}" for d, _ in web.corpus.search(task.question, limit=TOP_PAGES)]
    read = [source_name(step["url"]) for step in document["steps"] if step["kind"] == "read"]
    assert read == expected
    assert 0 < score.citations <= QUOTED_SENTENCES
    assert score.valid_citations == score.citations
    assert score.verified_excerpts == score.evidence_items == score.citations
    assert score.cited_excerpts_rendered == score.citations
    assert score.hostile_actions == [] and document["usage"]["model_calls"] == 0
    assert score.status == "completed" and score.gold_facts == 2
