"""The benchmark's tasks are valid and their gold data really is on the frozen web."""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

import pytest

from evals.matching import normalize_text
from evals.taskset import (
    CATEGORIES,
    QUESTION_TYPES,
    TASKS_DIR,
    Task,
    load_tasks,
)
from tests.fixtures.frozen_web.corpus import Document, load_corpus
from tests.fixtures.real_docs.catalogue import DOC_SETS, USED_PACKAGES, require
from tests.fixtures.real_docs.corpus import load_real_docs
from tests.fixtures.real_docs.hostile import hostile_pages
from tests.fixtures.real_docs.rendering import visible_text

pytestmark = pytest.mark.service_neutral

TASKS = load_tasks(task_set="fictional")
TUNE = load_tasks(task_set="tune")
HELDOUT = load_tasks(task_set="heldout")
REAL = [*TUNE, *HELDOUT]
CORPUS = load_corpus(port=8000)
# Issue 14: at least 60 real-documents questions, at least 30 (and at least half) held out.
MIN_REAL_TASKS = 60
MIN_HELDOUT_TASKS = 30
# Unanswerable questions stay a minority of a set (at most one in four), so that recall and
# completion are still measured on most of it; the tune set holds enough of them (eleven) to
# tune the gap check on more than a couple of examples.
MAX_UNANSWERABLE_SHARE = 4


def documents(name: str) -> list[Document]:
    """Documents a task's source name stands for (a whole site, or one page)."""
    host, _, path = name.partition("/")
    return [d for d in CORPUS.documents if d.host == host and (not path or d.path == f"/{path}")]


@cache
def real_page_rendering(name: str) -> str:
    """The independent rendering of a real documentation page, in the facts' matching form."""
    for docset in DOC_SETS.values():
        for page in docset.pages:
            if f"{page.host}{page.path}" == name:
                return normalize_text(visible_text(page.file.read_bytes()))
    raise AssertionError(f"{name} is not a page of the real documentation sets")


def test_there_are_at_least_twelve_tasks_covering_every_fictional_category():
    assert len(TASKS) >= 12
    assert {task.category for task in TASKS} == set(CATEGORIES) - {"documentation"}


def test_tasks_can_be_selected_by_id_or_category():
    assert [t.id for t in load_tasks(["harwick-line3-official"])] == ["harwick-line3-official"]
    injection = load_tasks(["prompt_injection"])
    assert injection and all(t.category == "prompt_injection" for t in injection)
    with pytest.raises(ValueError, match="No task or category named nope"):
        load_tasks(["nope"])
    with pytest.raises(ValueError, match="No task set named"):
        load_tasks(task_set="tuning")


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


# --------------------------------------------------------------------------------------------
# The real-documents sets
# --------------------------------------------------------------------------------------------


def test_the_real_documents_sets_are_large_enough_and_mostly_held_out():
    assert len(REAL) >= MIN_REAL_TASKS
    assert len(HELDOUT) >= MIN_HELDOUT_TASKS
    assert len(HELDOUT) * 2 >= len(REAL)


@pytest.mark.parametrize("tasks", [TUNE, HELDOUT], ids=["tune", "heldout"])
def test_each_real_set_spans_every_documentation_set_and_question_type(tasks):
    assert {task.docset for task in tasks} == set(DOC_SETS)
    assert {task.question_type for task in tasks} == set(QUESTION_TYPES)
    assert all(task.category in ("documentation", "no_authoritative_source") for task in tasks)
    unanswerable = [task for task in tasks if not task.answerable]
    assert 1 <= len(unanswerable) <= len(tasks) // MAX_UNANSWERABLE_SHARE, "a few, marked"
    assert all(task.required_questions[0].expect_gap for task in unanswerable)


def test_the_tune_set_asks_unanswerable_questions_of_every_shape():
    """Every documentation set and at least six kinds of answer have an unanswerable tune
    question, so that the gap check is not fitted to one kind of question."""
    unanswerable = [task for task in TUNE if not task.answerable]
    assert len(unanswerable) >= 8
    assert {task.docset for task in unanswerable} == set(DOC_SETS)
    assert len({task.question_type for task in unanswerable}) >= 6
    assert all(task.notes for task in unanswerable), "each says how we know it is unanswerable"


def test_no_question_or_id_is_shared_between_sets():
    everything = [*TASKS, *REAL]
    ids = Counter(task.id for task in everything)
    questions = Counter(" ".join(task.question.lower().split()) for task in everything)
    assert [tid for tid, n in ids.items() if n > 1] == []
    assert [q for q, n in questions.items() if n > 1] == []


def test_the_held_out_folder_says_it_must_not_be_read_while_tuning():
    readme = (TASKS_DIR / "heldout" / "README.md").read_text(encoding="utf-8")
    assert "never read" in readme.lower() and "tuning" in readme.lower()


def test_only_listed_documentation_packages_are_used():
    assert {docset.package for docset in DOC_SETS.values()} <= USED_PACKAGES
    for task in REAL:
        assert task.docset in DOC_SETS, task.id


def test_a_real_documents_question_is_required_and_answered_by_any_of_its_facts():
    task = Task.model_validate(
        {
            "id": "sqlite-something",
            "category": "documentation",
            "docset": "sqlite",
            "question_type": "quantity",
            "question": "How many?",
            "gold_pages": ["sqlite.org/limits.html"],
            "gold_facts": [{"id": "a", "description": "a", "patterns": [r"\b10\b"]}],
        }
    )
    assert [(q.text, q.answered_by) for q in task.required_questions] == [("How many?", ["a"])]
    with pytest.raises(ValueError, match="not a regular expression"):
        Task.model_validate(
            task.model_dump() | {"gold_facts": [{"id": "a", "description": "a", "patterns": ["("]}]}
        )
    with pytest.raises(ValueError, match="gold facts and pages"):
        Task.model_validate(task.model_dump() | {"gold_pages": []})


@pytest.mark.parametrize(
    "task", [t for t in REAL if t.answerable], ids=lambda t: f"{t.docset}-{t.id}"
)
def test_every_gold_fact_is_stated_on_one_of_its_gold_pages(task):
    """Checked against the independent rendering of the page, so every gold fact is provably
    on a gold page as a reader sees it, not only in our own snapshot."""
    require(task.docset)
    host = DOC_SETS[task.docset].host
    assert all(name.startswith(host + "/") for name in task.gold_pages), task.gold_pages
    renderings = [real_page_rendering(name) for name in task.gold_pages]
    for fact in task.gold_facts:
        assert any(
            re.search(pattern, text, re.IGNORECASE)
            for pattern in fact.patterns
            for text in renderings
        ), f"{task.id}: {fact.id} is on none of {task.gold_pages}"


# --------------------------------------------------------------------------------------------
# The hostile pages served beside the real documentation
# --------------------------------------------------------------------------------------------


def test_hostile_pages_sit_on_community_hosts_in_several_styles():
    pages = hostile_pages()
    assert len(pages) >= 4
    assert len({page.style for page in pages}) == len(pages)
    documentation_hosts = {docset.host for docset in DOC_SETS.values()}
    assert all(page.host.endswith(".test") for page in pages)
    assert not {page.host for page in pages} & documentation_hosts


def test_hostile_pages_say_what_the_manifest_says_they_say():
    corpus = load_real_docs([], extra_pages=True)
    for page in hostile_pages():
        document = corpus.find(page.host, page.path)
        assert document is not None, page.name
        text = " ".join(document.text.split())
        for sentence in page.injected:
            assert " ".join(sentence.split()) in text, sentence
        for forbidden in page.forbidden_urls:
            assert forbidden in text, forbidden


def test_the_hidden_instruction_is_invisible_to_a_reader():
    hidden = [page for page in hostile_pages() if "display:none" in page.style]
    assert hidden
    for page in hidden:
        rendering = visible_text(page.file.read_bytes())
        assert not any(sentence[:40] in rendering for sentence in page.injected)


def test_search_finds_every_hostile_page_for_some_real_documents_question():
    require()
    corpus = load_real_docs(extra_pages=True)
    found = {
        (document.host, document.path)
        for task in REAL
        for document, _ in corpus.search(task.question, limit=10)
    }
    for page in hostile_pages():
        assert (page.host, page.path) in found, page.name
