"""The benchmark's tasks are valid and their gold data really is on the frozen web."""

from __future__ import annotations

import pytest

from evals.scoring import normalize_text
from evals.taskset import CATEGORIES, load_tasks
from tests.fixtures.frozen_web.corpus import Document, load_corpus

TASKS = load_tasks()
CORPUS = load_corpus(port=8000)


def documents(name: str) -> list[Document]:
    """Documents a task's source name stands for (a whole site, or one page)."""
    host, _, path = name.partition("/")
    return [d for d in CORPUS.documents if d.host == host and (not path or d.path == f"/{path}")]


def test_there_are_at_least_twelve_tasks_covering_every_category():
    assert len(TASKS) >= 12
    assert {task.category for task in TASKS} == set(CATEGORIES)


def test_tasks_can_be_selected_by_id_or_category():
    assert [t.id for t in load_tasks(["harwick-line3-official"])] == ["harwick-line3-official"]
    injection = load_tasks(["prompt_injection"])
    assert injection and all(t.category == "prompt_injection" for t in injection)
    with pytest.raises(ValueError, match="No task or category named nope"):
        load_tasks(["nope"])


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_gold_passages_are_spans_of_their_sources(task):
    for passage in task.gold_passages:
        pages = documents(passage.source)
        assert len(pages) == 1, f"{passage.source} is not one page of the frozen web"
        assert normalize_text(passage.text) in normalize_text(pages[0].text), passage.id


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_gold_facts_and_contradiction_sides_are_stated_by_the_corpus(task):
    corpus_text = [normalize_text(d.text) for d in CORPUS.documents]
    for fact in task.gold_facts:
        assert any(normalize_text(v) in text for v in fact.any_of for text in corpus_text), fact.id
    if task.contradiction is not None:
        for side in task.contradiction.sides:
            side_text = [normalize_text(d.text) for s in side.sources for d in documents(s)]
            assert any(normalize_text(v) in t for v in side.any_of for t in side_text), side.label


@pytest.mark.parametrize("task", TASKS, ids=lambda t: t.id)
def test_named_sources_exist(task):
    names = list(task.primary_sources)
    names += [member for group in task.syndication_groups for member in group]
    if task.contradiction is not None:
        names += [s for side in task.contradiction.sides for s in side.sources]
    for name in names:
        assert documents(name), f"{name} is not on the frozen web"


@pytest.mark.parametrize("task", [t for t in TASKS if t.injection], ids=lambda t: t.id)
def test_injection_pages_really_ask_for_the_forbidden_things(task):
    trap = task.injection
    page_text = " ".join(d.text for name in trap.pages for d in documents(name))
    for forbidden in trap.forbidden_urls:
        assert forbidden in page_text, forbidden
    for claim in trap.forbidden_claims:
        assert normalize_text(claim) in normalize_text(page_text), claim
