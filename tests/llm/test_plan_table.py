"""The no-model plan of many kinds of question, as a table: the scope it reads (places and time
frame, empty rather than wrong) and the grammar of every sub-question it writes
(research/llm/decompose.py, research/llm/comparison.py, research/llm/scope.py).

The tune set's questions are checked too, read from their task files: none names a place or a
year, so their scope must be empty, and their sub-questions must read as questions."""

import json
import re
from pathlib import Path

import pytest

from research.engine.text import word_set
from research.llm.decompose import decompose
from research.llm.search_queries import search_queries
from research.llm.wording import VERBS

TUNE_DIR = Path(__file__).resolve().parents[2] / "evals" / "tasks" / "tune"

_AUXILIARIES = word_set(
    """is are was were do does did can could should would will has have had may might must
    won't can't don't doesn't didn't isn't aren't wasn't"""
)
# Shapes that only a broken template produces: a wh-word where a noun belongs ("about the
# which one…"), a "between" with one end ("between 1850?", "between Quill?"; "between
# sessions?" is a plural, no range), a doubled article, a copula on both sides of an adverb
# ("Is exactly is …": a subject cut after the wrong word), a modal with a do-support
# auxiliary a few words after it ("How many clients can TCP port does … serve": a clause put
# where a noun phrase belongs).
_BROKEN = re.compile(
    r"\b(?:the|of|about)\s+(?:which|what|how)\b|\bbetween\s+(?-i:\d|[A-Z])\S*\?$|"
    r"\b(the|a)\s+\1\b|"
    r"\b(?:is|are|was|were)\s+[a-z]{4,}ly\s+(?:is|are|was|were)\b|"
    r"\b(?:can|could|will|would|should|is|are)\s+(?:[\w.'-]+\s+){1,3}(?:does|did)\b|"
    r"\bknown about (?:In|On|For)\b",
    re.IGNORECASE,
)


def well_formed(text: str) -> bool:
    """A capital first letter (or code, which keeps its case: "pool.drain() or …"), a
    question mark at the end, a verb in every sentence ("Since which version?" has none), and
    none of the broken shapes."""
    if not text or not text.endswith("?") or _BROKEN.search(text):
        return False
    if not text[0].isupper() and not re.match(r"\S*[(._]|[a-z]+[A-Z]", text):
        return False
    for sentence in re.split(r"(?<=\?)\s+", text):
        words = [w.casefold() for w in re.findall(r"[A-Za-z][\w'-]*", sentence)]
        # A third-person verb ("lets", "uses") is an -s word with words after it.
        if not any(
            w in _AUXILIARIES
            or w in VERBS
            or (w.endswith("ed") and len(w) > 3)
            or (w.endswith("s") and index < len(words) - 1)
            for index, w in enumerate(words)
        ):
            return False
    return True


# (question, geographies, timeframe, sub-questions or None when only their grammar is pinned)
TABLE = [
    # Software: names after "in", versions, code tokens.
    ("What changed in Rust 1.63?", [], None, ["What changed in Rust 1.63?"]),
    ("What is new in Node.js 18?", [], None, None),
    ("How do I enable foreign keys in MegaORM?", [], None, None),
    ("How do I undo a commit in Git?", [], None, None),
    # Asking what a term means: the name after "in" is its domain unless marked as a place.
    ("What exactly is an extent in Ferrite, and is it a separate unit?", [], None, None),
    ("What is the jobless rate in Estria?", ["Estria"], None, None),
    ("What is a shallow clone in Zircon?", [], None, None),
    ("How long does a session cookie last in Quill unless I change it?", [], None, None),
    ("Can I share a Box<V> between threads in Tarn?", [], None, None),
    ("What does core::mem::take do in Tarn?", [], None, None),
    ("How can I open a database that lives only in RAM?", [], None, None),
    ("How does PRAGMA foreign_keys work in Zircon 3.45?", [], None, None),
    ("Which crate should I use for HTTP requests in Tarn?", [], None, None),
    ("What is the default branch name in Git since version 2.28?", [], None, None),
    ("What does the --depth option of git clone do?", [], None, None),
    ("Which Brisk version lets me use fetch() without a flag in Brisk?", [], None, None),
    ("Why does my Quill app fail with error 2003 in production?", [], None, None),
    ("What is the identity map in MegaORM 2021?", [], None, None),
    # Comparisons: one well-formed question per side and the comparison's own.
    (
        "How does Pool.take() differ from Pool.takeFast() when the pool is empty?",
        [],
        None,
        [
            "How does Pool.take() behave when the pool is empty?",
            "How does Pool.takeFast() behave when the pool is empty?",
            "How does Pool.take() differ from Pool.takeFast() when the pool is empty?",
        ],
    ),
    (
        "How does git merge differ from git rebase when the branch is already pushed?",
        [],
        None,
        [
            "How does git merge behave when the branch is already pushed?",
            "How does git rebase behave when the branch is already pushed?",
            "How does git merge differ from git rebase when the branch is already pushed?",
        ],
    ),
    (
        "Rc vs Arc for sharing data between threads in Tarn?",
        [],
        None,
        [
            "What are the strengths and weaknesses of Rc for sharing data between threads in Tarn?",
            "What are the strengths and weaknesses of Arc for sharing data between threads in "
            "Tarn?",
            "How do Rc and Arc compare for sharing data between threads in Tarn?",
        ],
    ),
    (
        "What is the difference between Rc and Arc?",
        [],
        None,
        ["What is Rc?", "What is Arc?", "How does Rc differ from Arc?"],
    ),
    (
        "Should I use git merge or git rebase to update a feature branch?",
        [],
        None,
        [
            "What are the strengths and weaknesses of using git merge to update a feature branch?",
            "What are the strengths and weaknesses of using git rebase to update a feature branch?",
            "Should I use git merge or git rebase to update a feature branch?",
        ],
    ),
    (
        "Is MegaORM faster than Zircon for small websites?",
        [],
        None,
        [
            "How fast is MegaORM for small websites?",
            "How fast is Zircon for small websites?",
            "Which is faster for small websites, MegaORM or Zircon?",
        ],
    ),
    (
        "Is Pool.takeFast() faster than Pool.take()?",
        [],
        None,
        [
            "How fast is Pool.takeFast()?",
            "How fast is Pool.take()?",
            "Which is faster, Pool.takeFast() or Pool.take()?",
        ],
    ),
    (
        "How do lazy loading and eager loading differ in an ORM?",
        [],
        None,
        [
            "What is lazy loading in an ORM?",
            "What is eager loading in an ORM?",
            "How does lazy loading differ from eager loading in an ORM?",
        ],
    ),
    (
        "Lazy loading versus eager loading: which one uses fewer queries?",
        [],
        None,
        [
            "What are the strengths and weaknesses of lazy loading?",
            "What are the strengths and weaknesses of eager loading?",
            "Which one uses fewer queries, lazy loading or eager loading?",
        ],
    ),
    ("git merge vs git rebase", [], None, None),
    ("Compare Rc with Arc on performance and thread safety", [], None, None),
    ("Is nuclear power safer than coal?", [], None, None),
    ("Which is cheaper, heat pumps or gas boilers?", [], None, None),
    (
        "What is the difference between a Roth IRA and a traditional IRA?",
        [],
        None,
        [
            "What is a Roth IRA?",
            "What is a traditional IRA?",
            "How does a Roth IRA differ from a traditional IRA?",
        ],
    ),
    (
        "How do heat pumps compare with gas boilers on cost, noise and emissions in the UK since "
        "2019?",
        ["UK"],
        ("2019", None),
        None,
    ),
    # Places, history, finance, science.
    ("How many people lived in the city of Lyon in 1900?", ["Lyon"], ("1900", "1900"), None),
    (
        "What caused the 2008 financial crisis in the United States?",
        ["United States"],
        ("2008", "2008"),
        None,
    ),
    (
        "How did the population of Paris change between 1850 and 1900?",
        ["Paris"],
        ("1850", "1900"),
        ["How did the population of Paris change between 1850 and 1900?"],
    ),
    ("What were the causes of the French Revolution?", [], None, None),
    ("How did inflation in Argentina develop since 2020?", ["Argentina"], ("2020", None), None),
    ("What is the boiling point of water at high altitude?", [], None, None),
    (
        "How many heat pumps were sold in France and Germany in 2023?",
        ["France", "Germany"],
        ("2023", "2023"),
        [
            "How many heat pumps were sold in France in 2023?",
            "How many heat pumps were sold in Germany in 2023?",
        ],
    ),
    ("How did ridership change in Paris last year?", ["Paris"], None, None),
    ("What is the interest rate of the European Central Bank in 2024?", [], ("2024", "2024"), None),
    ("Why did the Roman Empire fall?", [], None, None),
    (
        "How much did the S&P 500 return between 2019 and 2022?",
        [],
        ("2019", "2022"),
        ["How much did the S&P 500 return between 2019 and 2022?"],
    ),
    (
        "What are the side effects of metformin on weight, blood sugar and cholesterol?",
        [],
        None,
        None,
    ),
    (
        "How does CRISPR work and what are its risks?",
        [],
        None,
        ["How does CRISPR work?", "What are CRISPR's risks?"],
    ),
    ("How did GDP grow in Japan in the 1990s?", ["Japan"], ("1990", "1999"), None),
    ("What happened in Berlin in November 1989?", ["Berlin"], ("1989", "1989"), None),
    (
        "How many stations does the metro have in Varno, and when did it open?",
        ["Varno"],
        None,
        None,
    ),
    ("What do CEOs earn in the UK?", ["UK"], None, None),
    ("What is the population of Lake Orla's largest town?", ["Lake Orla"], None, None),
    (
        "What does git push do by default, and since which Git version?",
        [],
        None,
        [
            "What does git push do by default?",
            "Since which Git version has this been the case: what does git push do by default?",
        ],
    ),
]


@pytest.mark.parametrize(("question", "places", "timeframe", "expected"), TABLE)
def test_the_plan_reads_the_scope_and_writes_well_formed_questions(
    question, places, timeframe, expected
):
    decomposition = decompose(question)
    texts = [sub.text for sub in decomposition.questions]

    assert decomposition.geographies == places
    assert decomposition.timeframe == timeframe
    assert all(well_formed(text) for text in texts), texts
    if expected is not None:
        assert texts == expected


def test_the_table_covers_many_forms():
    assert len(TABLE) >= 40


def _tune_questions() -> list[str]:
    return [
        json.loads(path.read_text(encoding="utf-8"))["question"]
        for path in sorted(TUNE_DIR.glob("*.json"))
    ]


def test_every_tune_question_is_read():
    from evals.taskset import load_tasks

    assert len(_tune_questions()) == len(load_tasks(task_set="tune")) >= 70


@pytest.mark.parametrize("question", _tune_questions())
def test_a_tune_question_gets_an_empty_scope_and_well_formed_questions(question):
    decomposition = decompose(question)

    # No tune question names a place or a year: whatever is there is a technical name.
    assert decomposition.geographies == []
    assert decomposition.timeframe is None
    assert all(well_formed(sub.text) for sub in decomposition.questions), [
        sub.text for sub in decomposition.questions
    ]


@pytest.mark.parametrize(
    ("question", "kept"),
    [
        ("Is git push --dry-run safer than plain --force?", ['"--dry-run"', '"--force"']),
        ("How does PRAGMA foreign_keys work?", ["PRAGMA", "foreign_keys"]),
        ("Why does Pool.takeFast() return old data?", ["Pool.takeFast"]),
        ("Can I share a Box<V> across threads?", ["Box<V>"]),
        ("What does core::mem::take do?", ["core::mem::take"]),
        ("Why won't Tarn compile v[0] when v is a list?", ["v[0]"]),
        ("Since which release can I write CREATE TABLE IF NOT EXISTS?", ["IF", "NOT", "EXISTS"]),
        ("What changed in Node.js 18?", ["Node.js", "18"]),
    ],
)
def test_a_search_keeps_names_versions_and_code_tokens_as_spelled(question, kept):
    words = search_queries(question)[0].split()

    assert all(token in words for token in kept), words


def test_a_search_drops_filler_words():
    query = search_queries("I deleted a lot of rows but won't the file shrink by something?")[0]

    assert not {"lot", "won't", "something"} & set(query.split())
