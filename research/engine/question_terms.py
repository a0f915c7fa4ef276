"""What a question asks about, and how much of it a passage mentions, without a model.

``question_terms`` gives a question's weighted terms and its focus: names and verbs that only
say something happened weigh half, and the focus is what the question asks about beyond them.
``answer_type_terms`` finds the words naming the kind of answer wanted ("which dates", "how
long"), each with what such an answer looks like; ``answer_shape_bonus`` rewards a passage of
that shape. ``TermWeights`` is the clipped inverse document frequency the coverage of those
terms is weighed by; ``related_matches`` credits a related word, ``jaccard`` measures overlap.
Passage selection (:mod:`research.llm.selection`) and the extractive backend use them.
"""

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable

from research.engine.text import (
    QUESTION_FILLER,
    STOP_WORDS,
    content_terms,
    fold,
    related_terms,
    stem,
    tokens,
)

# A passage this relevant (0 to 1) answers its question: selection scores passages on that
# scale, and the quoted report shows a question's looser matches only when too few answer it.
SUPPORTS_RELEVANCE = 0.5
# Passages sharing this share of their terms (Jaccard) say nearly the same thing.
NEAR_DUPLICATE = 0.6
_ANSWER_BONUS = 0.15
_ABSENT_WEIGHT = 1.0
_NAME_SCALE = 0.5
_MIN_WEIGHT = 0.3
_MAX_WEIGHT = 3.0

# A quantity: a number that is not part of a code such as "SRC-2019-0412".
_QUANTITY = re.compile(r"(?<![\w-])(?:\d[\d,.]*\d|\d)(?![\w-]*\d)(?!-\w)")
# Words naming the kind of answer ("what caused...") rather than its subject; the answer-shape
# bonus looks for them, a passage need not repeat them.
_ANSWER_WORDS = frozenset({"caus", "cause", "reason", "driver", "drive", "factor", "trigger"})
_RELATED_CREDIT = 0.5
_DATE = re.compile(
    r"\b(?:1[89]\d\d|20\d\d|january|february|march|april|may|june|july|august|september|"
    r"october|november|december)\b",
    re.I,
)
# Question words naming the kind of answer wanted rather than its subject: "which dates" is
# answered by a date, not by repeating the word. A passage (or the heading it stands under)
# with such an answer counts as mentioning the word; one that only repeats it half does.
_ANSWER_TYPES = {
    "date": _DATE,
    "deadline": _DATE,
    "timeline": _DATE,
    "figure": _QUANTITY,
    "percentage": _QUANTITY,
    "proportion": _QUANTITY,
}
_DURATION = re.compile(
    r"\b(?:decades?|years?|months?|weeks?|days?|hours?|minutes?|centur(?:y|ies)|until|since)\b",
    re.IGNORECASE,
)
_FREQUENCY = re.compile(
    r"\b(?:every|each|per|times|once|twice|annual\w*|daily|weekly|monthly|yearly)\b", re.I
)
# "How long…" is answered by a duration, "how often…" by a frequency, "how high…" by a figure.
_HOW_ANSWERS = {
    "long": _DURATION,
    "often": _FREQUENCY,
    "large": _QUANTITY,
    "big": _QUANTITY,
    "high": _QUANTITY,
    "far": _QUANTITY,
    "old": _QUANTITY,
}
_HOW = re.compile(r"^how\s+(\w+)\b", re.IGNORECASE)
_TAKES_EFFECT = re.compile(
    r"\b(?:take|takes|took|come|comes|came|enter|enters|entered)\s+(?:into\s+)?(?:effect|force)\b",
    re.IGNORECASE,
)
# Verbs a question uses to say that something happened, not what it asks about (stemmed).
_GENERIC_VERBS = frozenset(
    stem(word)
    for word in [
        "apply",
        "happen",
        "occur",
        "begin",
        "start",
        "take",
        "find",
        "show",
        "achieve",
        "reach",
        "record",
        "get",
        "come",
        "last",
    ]
)
# What kind of answer a question wants, and what such an answer tends to contain.
_ANSWER_SHAPES = (
    (
        re.compile(r"^why\b|\b(?:cause[sd]?|reasons?|drivers?|driven|explain)\b", re.I),
        re.compile(
            r"\b(?:because|due to|caus\w*|result(?:ed|s)? (?:of|in|from)|as a result|led to|"
            r"lead(?:s|ing)? to|driv\w*|owing to|attribut\w*|responsible|contribut\w*|"
            r"trigger\w*|fuel\w*|feed\w*|favou?r\w*|linked to)\b",
            re.I,
        ),
    ),
    (
        re.compile(r"^how long\b", re.I),
        re.compile(f"{_DURATION.pattern}|{_QUANTITY.pattern}", re.I),
    ),
    (
        re.compile(
            r"^how (?:many|much|large|big|often|fast|high|low)\b|\b(?:number|amount|"
            r"size|share|cost|price|rate|percentage|figures?|statistics)\b",
            re.I,
        ),
        _QUANTITY,
    ),
    (
        re.compile(
            r"^when\b|\b(?:dates?|years?|timelines?|deadlines?|take effect|come into force)\b",
            re.I,
        ),
        _DATE,
    ),
    (
        re.compile(r"^how (?:do|does|did|is|are)\b.*\bwork", re.I),
        re.compile(
            r"\b(?:by|uses?|using|works?|through|convert\w*|transfer\w*|process\w*)\b", re.I
        ),
    ),
)


class TermWeights:
    """Inverse document frequency of terms over a small collection (one page's passages, or one
    run's search results), clipped so no single rare word decides everything."""

    def __init__(self, documents: Iterable[Collection[str]]) -> None:
        self.frequency: Counter[str] = Counter()
        self.size = 0
        for document in documents:
            self.size += 1
            self.frequency.update(set(document))

    def weight(self, term: str) -> float:
        """The weight of ``term``; a term no document contains counts as an average one."""
        count = self.frequency.get(term, 0)
        if not count:
            return _ABSENT_WEIGHT
        idf = math.log(1 + (self.size - count + 0.5) / (count + 0.5))
        return min(_MAX_WEIGHT, max(_MIN_WEIGHT, idf))

    def coverage(
        self,
        query: dict[str, float],
        present: Collection[str],
        partly_present: dict[str, float] | None = None,
    ) -> float:
        """The weighted share of ``query`` terms (term → importance) found: fully in
        ``present``, or with the given credit in ``partly_present``."""
        total = sum(self.weight(term) * scale for term, scale in query.items())
        if not total:
            return 0.0
        found = 0.0
        for term, scale in query.items():
            if term in present:
                found += self.weight(term) * scale
            elif partly_present and term in partly_present:
                found += self.weight(term) * scale * partly_present[term]
        return found / total


def jaccard(first: Collection[str], second: Collection[str]) -> float:
    """Overlap of two term sets, 0–1."""
    if not first or not second:
        return 0.0
    union = len(set(first) | set(second))
    return len(set(first) & set(second)) / union


def answer_shape_bonus(question: str, passage: str, heading: str = "") -> float:
    """A small bonus when a passage has the shape of the answer the question wants (a number
    for "how many", a cause for "why", a date for "when"). A date may come from the heading
    the passage stands under ("From 1 March 2025")."""
    for asks, answers in _ANSWER_SHAPES:
        if not asks.search(question):
            continue
        if answers.search(passage) or (answers is _DATE and answers.search(heading)):
            return _ANSWER_BONUS
    return 0.0


def entity_terms(question: str) -> frozenset[str]:
    """Terms of the capitalised names in a question ("Paris Metro", "CRISPR"), except its
    first word, whose capital says nothing."""
    names = re.findall(r"(?<=[\w,;:()'\"] )[A-Z][\w'-]*", question)
    return frozenset(term for name in names for term in content_terms(name))


# "What does recent research find about X" asks about X; the lead names the kind of source.
_SOURCE_LEAD = re.compile(
    r"^(?i:(?:what|how)\s+(?:does|do|did|has|have)\s+(?:the\s+)?(?:(?:recent|latest|current|"
    r"new|published|scientific|academic|peer-reviewed)\s+)*(?:research|studies|study|literature|"
    r"science|evidence|experts?|researchers|scientists)\s+(?:\w+\s+)?(?:find|found|show|shown|"
    r"say|said|suggest|tell|conclude|report)s?\s+(?:about|on|regarding|of)?\s*)"
    # "What did the Daily Post report about…": a named source's account of something.
    r"|^(?i:what\s+(?:does|do|did|has|have)\s+(?:the\s+)?)(?:[A-Z][\w'-]*\s+){1,4}"
    r"(?i:(?:report|say|said|write|written|claim|find|found)s?\s+(?:about|on|regarding)\s+)",
)


def answer_type_terms(question: str) -> dict[str, re.Pattern[str]]:
    """Terms of ``question`` that name the kind of answer it wants, each with what such an
    answer looks like: "dates" → a date, "how long" → a duration."""
    found = {
        term: _ANSWER_TYPES[term]
        for term in content_terms(question, drop=QUESTION_FILLER)
        if term in _ANSWER_TYPES
    }
    how = _HOW.match(question.strip())
    if how and fold(how.group(1)) in _HOW_ANSWERS:
        found[stem(fold(how.group(1)))] = _HOW_ANSWERS[fold(how.group(1))]
    return found


def question_terms(question: str, topic: Collection[str] = ()) -> tuple[dict[str, float], set[str]]:
    """The weighted terms of a question and its focus.

    Names weigh half (they say what the question is about, and the page was found for them),
    and so do verbs that only say something happened ("from which dates do the rules apply",
    "what did the study find"); the focus is what the question asks about that is none of
    these, nor a number nor the topic of the page: a passage must mention some of it to answer
    the question. A word inside the page's own phrase ("energy" in "battery energy losses" on
    a page about battery losses) only narrows the topic and is no focus either.
    """
    names = entity_terms(question)
    answer_types = answer_type_terms(question)
    question = _SOURCE_LEAD.sub("", question.strip())
    question = _TAKES_EFFECT.sub(" ", question)
    sequence = content_terms(question, drop=QUESTION_FILLER)
    query = {
        term: (_NAME_SCALE if term in names or term in _GENERIC_VERBS else 1.0) for term in sequence
    }
    # Words in a row, with no stop word between them: "battery energy losses".
    adjacent = [
        stem(token) if token not in STOP_WORDS and token not in QUESTION_FILLER else None
        for token in tokens(question)
    ]
    modifiers = {
        term
        for before, term, after in zip(adjacent, adjacent[1:], adjacent[2:], strict=False)
        if term and before in topic and after in topic and term not in topic
    }
    focus = {
        term
        for term in query
        if term not in names
        and term not in _GENERIC_VERBS
        and term not in topic
        and term not in modifiers
        and term not in _ANSWER_WORDS
        and term not in answer_types
        and not term[0].isdigit()
    }
    return query, focus


def related_matches(query: Collection[str], words: Collection[str]) -> dict[str, float]:
    """Query terms absent from ``words`` but stood for by a related word in them, with the
    credit such a match earns."""
    return {
        term: _RELATED_CREDIT
        for term in query
        if term not in words and related_terms(term) & set(words)
    }
