"""Web searches for one sub-question of the extractive backend's plan, without a model.

``search_queries`` words up to three differently worded searches from the sub-question's
keywords: as they stand, with a word for the kind of answer wanted (or shortened to the
subject), and anchored with terms of
the overall objective (see its docstring). The plan itself is :mod:`research.llm.decompose`.
"""

import re

from research.engine.question_terms import ASKER_WORDS, asking_clause, story_terms
from research.engine.text import QUESTION_FILLER, fold, keywords, stem, word_set
from research.llm.wording import CONVERSE

_QUERY_WORDS = 10
# Words of the shorter second search a question without a telling answer kind gets: a
# question's subject comes first in its wording ("identity map", "foreign key constraints"),
# and a search engine ranks pages titled with it lower when the asker's other words
# ("never touches the disk", "without starting a server") are in the query too.
_SHORT_QUERY_WORDS = 4
# Besides the templates' filler: contractions and vague words a question carries ("won't",
# "something", "a lot of", "going to") that no page about the answer needs to contain, and
# the asker's own verbs ("how can I see…", "do I need…", question_terms.ASKER_WORDS): they say
# what the asker does, not what the page is about, and a page holding the answer rarely
# repeats them.
_QUERY_DROP = (
    QUESTION_FILLER
    | ASKER_WORDS
    | word_set(
        """known case context number amount since won't can't doesn't didn't couldn't shouldn't
        wouldn't haven't hasn't something anything someone anyone lot lots"""
    )
)
# A word for the kind of answer the question asks, first match wins (answer-type query
# expansion: Li & Roth, "Learning question classifiers", COLING 2002, for the kinds). A
# question asking how many or how much something "can" take asks for a capacity, which
# documentation states as a maximum ("the maximum number of attached databases"); other
# counts and amounts are figures.
_EXPANSIONS = (
    (re.compile(r"^why\b|\bcause|\breason|\bdriver", re.I), "causes"),
    (re.compile(r"^how (?:many|much)\b.*\b(?:can|could|may)\b", re.I), "maximum"),
    (re.compile(r"^how (?:much|many|large|big|often|long|fast)\b|\bnumber of\b", re.I), "figures"),
    (re.compile(r"^how (?:do|does|did|is|are)\b.*\bwork", re.I), "explained"),
    (re.compile(r"\bcompare\b|\bversus\b|\bvs\b|^which is\b", re.I), "comparison"),
    (re.compile(r"^when\b", re.I), "date"),
)

# "What is X?" asks for a definition (Li & Roth's DESC:definition). When such a question is
# too short for a subject-only second search, "definition" rather than "report" is the word
# its second search adds: a glossary or reference page speaks of its terms' definitions,
# while "report" is a word of the news and study pages that fallback serves.
_DEFINITION = re.compile(r"^what (?:is|are)\b", re.I)


def _query_words(text: str) -> list[str]:
    """The question's keywords as spelled, once per stem. A lone lower-case letter ("v" of
    "when v is a list") says nothing to a search; an option is quoted ("--force"), since a
    search engine reads a leading minus as "without"; a connective such as "vice versa" names
    no topic and is left out."""
    words: list[str] = []
    stems: set[str] = set()
    # "…, and the other way round": a connective, not a topic (wording.CONVERSE).
    for word in keywords(CONVERSE.sub("", text), drop=_QUERY_DROP):
        key = stem(fold(word))
        if key in stems or (len(word) == 1 and word.islower()):
            continue
        stems.add(key)
        words.append(f'"{word}"' if word.startswith("-") else word)
    return words


# The anchored search keeps the question's names past its cut: a word spelled with a capital or as code
# ("Quill", "HEAD", "Pool.take") names the product or the thing asked about, the most specific
# term a search has (key-concept selection in verbose queries: Bendersky & Croft, "Discovering
# key concepts in verbose queries", SIGIR 2008, weigh proper nouns and capitalisation). Cut at
# the first few words, a question that ends "… in Quill" loses the one word that keeps the
# search inside Quill's documentation, and its results are pages of other products that share
# the common words ("big text file"). The subject-only second search stays as it is: adding a
# name there ("… lives RAM") moved a tune task's answer page out of its results.
_CODE_MARK = re.compile(r'[\d._:()<>\[\]#+/]|^"?-')


def _shortened(words: list[str], count: int) -> list[str]:
    """The first ``count`` of ``words``, then the names among the rest."""
    names = [word for word in words[count:] if word != word.lower() or _CODE_MARK.search(word)]
    return [*words[:count], *names]


def _asked_first(question: str) -> list[str]:
    """The question's keywords, those of its asking clause first when it tells the asker's
    situation before asking on its own (:func:`research.engine.question_terms.story_terms`):
    a search keeps only its first :data:`_QUERY_WORDS` words, and a long story would fill them
    all ("nightly export stalls hour every morning kiln restarts", never reaching "validate
    pooled sockets"). Key concepts of verbose queries (Bendersky & Croft, SIGIR 2008) and
    query reduction (Kumaran & Carvalho, SIGIR 2009)."""
    words = _query_words(question)
    if not story_terms(question):
        return words
    asked = _query_words(asking_clause(question))
    seen = {stem(fold(word.strip('"'))) for word in asked}
    return [*asked, *(word for word in words if stem(fold(word.strip('"'))) not in seen)]


def search_queries(
    question: str, *, objective: str = "", requires_primary: bool = False
) -> list[str]:
    """Up to three differently worded web searches for one sub-question, best first.

    The first is the question's keywords; the second adds a word for the kind of answer wanted
    (causes, figures, an official report…) or, when the wording names no such kind, is the
    first ``_SHORT_QUERY_WORDS`` keywords alone (the subject, without the asker's other
    words), and "report" ("definition" for "What is X?") is added only to a question too
    short for that; the third anchors the keywords with terms of the
    overall objective the sub-question lacks. They differ in content words, so the engine never
    treats them as equivalent searches.
    """
    words = _asked_first(question)[:_QUERY_WORDS] or _query_words(objective)[:_QUERY_WORDS]
    base = " ".join(words)
    queries = [base]
    clause = asking_clause(question)
    expansion = (
        "official report"
        if requires_primary
        else next(
            (
                word
                for text in dict.fromkeys((question, clause))
                for pattern, word in _EXPANSIONS
                if pattern.search(text)
            ),
            None,
        )
    )
    present = {stem(fold(word)) for word in words}
    if expansion is None and len(words) > _SHORT_QUERY_WORDS:
        queries.append(" ".join(words[:_SHORT_QUERY_WORDS]))
    else:
        expansion = expansion or ("definition" if _DEFINITION.search(question) else "report")
        if not {stem(word) for word in expansion.split()} <= present:
            queries.append(f"{base} {expansion}")
    anchor = [word for word in _query_words(objective) if stem(fold(word)) not in present][:3]
    if anchor:
        queries.append(" ".join([*_shortened(words, 6), *anchor]))
    return [query[:300] for query in dict.fromkeys(q.strip() for q in queries) if query]
