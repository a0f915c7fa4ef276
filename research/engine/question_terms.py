"""What a question asks about and what kind of answer it wants, without a model.

``question_kind`` classifies a question by its grammar into the coarse answer types of question
classification (Li & Roth, "Learning Question Classifiers", COLING 2002): a definition, a
comparison, a quantity (with the kind of unit "how long/often/old" asks for), a date or
version, a cause, a procedure, a yes/no question, or other. ``answer_shape`` is what an answer
of that kind looks like (a number, a date, a copula, an instruction, a contrast, a stated
default, a "because"), and ``answer_shape_bonus`` rewards a passage of that shape.
``question_terms`` gives a question's weighted terms and its focus: names weigh half, and the
focus is what the question asks about beyond them. ``answer_type_terms`` are the words naming
the kind of answer ("which dates", "how long"): an answer of that shape stands for them.
``quoted_phrases`` are the strings a question quotes (an error message, an option's wording),
to be matched as phrases. ``TermWeights`` is the clipped inverse document frequency the coverage of those terms is
weighed by; ``jaccard`` measures overlap. Passage selection (:mod:`research.llm.selection`),
the extractive backend and the quoted report use them.
"""

import math
import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from research.engine.specificity import specificity
from research.engine.text import (
    STOP_WORDS,
    content_terms,
    fold,
    name_part_terms,
    question_filler,
    stem,
    tokens,
    word_set,
)

# A passage this relevant (0 to 1) answers its question: selection scores passages on that
# scale, and the quoted report shows a question's looser matches only when too few answer it.
SUPPORTS_RELEVANCE = 0.5
# Passages sharing this share of their terms (Jaccard) say nearly the same thing.
NEAR_DUPLICATE = 0.6
# The bonus a passage of the wanted shape earns in the callers that add it to a coverage.
_ANSWER_BONUS = 0.15
# A term no document of the collection contains counts as an average one (idf ≈ 1).
_ABSENT_WEIGHT = 1.0
# Names say whom a question is about, and the page was found for them: they weigh half.
_NAME_SCALE = 0.5
# A word the question has only inside a compound code name ("listen" of "setMaxListeners")
# weighs half a word of its own, times any name scale: the whole name is what was asked, and
# a part is shared with other names ("max" of "max_buffer"), yet prose about the name speaks
# of it by its parts ("more than 10 listeners").
_NAME_PART_SCALE = 0.5
# A question that tells the asker's situation before it asks ("I deleted a lot of rows from
# my database but the file is as big as before: how do I shrink it?") holds its key concepts
# in the asking clause (Bendersky & Croft, "Discovering key concepts in verbose queries",
# SIGIR 2008): a word only the story has weighs half an asked one, as a name does, since it
# says where the asker stands rather than what the answer is about. Only when the asking
# clause asks on its own, with at least _ASKED_ALONE terms besides the words naming the kind
# of answer: a bare "…: why?" leans wholly on the story, and then every word counts fully.
_STORY_SCALE = 0.5
_ASKED_ALONE = 3
# A quoted string of fewer content terms than this is a word in quotes ("the word 'lazy'"), no
# phrase: a phrase match needs at least two terms in order to say more than the terms do.
_MIN_PHRASE_TERMS = 2
# Clipping of the idf: no single rare word decides everything, no common one counts for nothing.
_MIN_WEIGHT = 0.3
_MAX_WEIGHT = 3.0

# A quantity: a number that is not part of a code such as "SRC-2019-0412".
_QUANTITY = re.compile(r"(?<![\w-])(?:\d[\d,.]*\d|\d)(?![\w-]*\d)(?!-\w)")
# A year or a month name. "May" is a month only capitalised beside a day or a year ("3 May",
# "May 2024"): otherwise it is far more often the modal verb ("it may be", "version 4 may").
_DATE = re.compile(
    r"\b(?:1[89]\d\d|20\d\d|january|february|march|april|june|july|august|september|"
    r"october|november|december)\b|\b\d{1,2}\s+(?-i:May)\b|"
    r"\b(?-i:May)\s+(?:\d{1,2}(?:st|nd|rd|th)?|1[89]\d\d|20\d\d)\b",
    re.I,
)
# A release number: "3.24.0", "v18", "version 2".
_VERSION = re.compile(r"\bv?\d+\.\d+(?:\.\d+)?\b|\b(?:version|release|v)\s*\d+\b", re.I)
# Units of time and frequency words: "around a decade", "every week" answer "how long/often"
# without a digit. These are the units of the measure, not the vocabulary of any subject.
_TIME_UNITS = re.compile(
    r"\b(?:decades?|years?|months?|weeks?|days?|hours?|minutes?|seconds?|milliseconds?|"
    r"centur(?:y|ies)|until|since|every|each|per|times|once|twice|annual\w*|daily|weekly|"
    r"monthly|yearly|hourly)\b",
    re.I,
)


@dataclass(frozen=True)
class QuestionKind:
    """The kind of answer a question wants: ``kind`` is one of definition, comparison,
    quantity, date, cause, procedure, manner, yesno, other; ``unit`` is "time" when a quantity
    is a duration, an age or a frequency ("how long does…", "how often…")."""

    kind: str
    unit: str = ""


# The measure adjectives of English ("how long", "how far", "how many"): a closed class of the
# grammar (Bierwisch's dimensional adjectives), so "how ADJ" with one of them asks for an amount
# while "how safe" or "how mature" asks for a judgement in words.
_MEASURE_ADJECTIVES = word_set(
    "many much long short tall high low wide deep far big large small heavy fast slow often "
    "old soon early late frequently"
)
# Of those, the ones measured in time: an age, a frequency, a moment; "long" when it measures
# an event ("how long does it last") rather than a thing ("how long is the cable").
_TIME_ADJECTIVES = word_set("often old soon early late frequently")
_AUXILIARIES = word_set(
    "do does did can could should would will is are was were has have had may might must"
)
# Head nouns of "what/which N" naming the answer type (Li & Roth's NUM and DESC classes).
_ANSWER_NOUN_KINDS = {
    "date": "date",
    "day": "date",
    "year": "date",
    "month": "date",
    "deadline": "date",
    "timeline": "date",
    "version": "date",
    "release": "date",
    "number": "quantity",
    "amount": "quantity",
    "figure": "quantity",
    "percentage": "quantity",
    "proportion": "quantity",
    "share": "quantity",
    "size": "quantity",
    "cause": "cause",
    "reason": "cause",
}
_ANSWER_NOUNS = {stem(noun): kind for noun, kind in _ANSWER_NOUN_KINDS.items()}
# "which SQLite release", "what date": the head noun is one of the two words after the wh-word,
# or after the copula and its article ("what is the size of …", "what was the release date of
# …"): Li & Roth's head word of "what is the X of Y" is X, not "is".
_WH_HEAD = re.compile(
    r"\b(?:what|which)\s+(?:(?:is|are|was|were)\s+(?:the\s+|an?\s+)?)?(\w+)(?:\s+(\w+))?",
    re.I,
)
# An extreme of a measure ("the maximum delay", "the largest value") asks for an amount, as
# "how ADJ" with a measure adjective does: the Latin superlatives and the superlatives of the
# measure adjectives, less those of time ("the latest release" asks a date, "the oldest" an age).
_EXTREMES = word_set(
    "maximum minimum longest shortest tallest highest lowest widest deepest biggest largest "
    "smallest heaviest fastest slowest farthest furthest"
)
_HOW = re.compile(r"^how\s+(\w+)(?:\s+(\w+))?", re.I)
_ASKS_COMPARISON = re.compile(
    r"\b(?:differ\w*|difference|compare\w*|versus|vs\.?|\w+er than|(?:more|less) \w+ than)\b|"
    r"^which\b[^?]*,[^?]*\bor\b",
    re.I,
)
_ASKS_DATE = re.compile(r"^when\b|\b(?:since|from|until|in|on) (?:what|which)\b", re.I)
_ASKS_CAUSE = re.compile(r"^why\b|^what (?:causes|caused|makes|made|leads|led)\b", re.I)
# A question may also state what the asker wants done first and close on a bare "how"
# ("I want to read a file line by line. Which module does that, and how?").
_ASKS_PROCEDURE = re.compile(
    r"^how\s+(?:do|can|should|would|could|might|must)\s+(?:i|we|you|one)\b|^how to\b|"
    r"\bhow\W*$",
    re.I,
)
_ASKS_MANNER = re.compile(r"^how (?:do|does|did|is|are)\b.*\bwork", re.I)
# "What is…", also with an adverb of degree between ("What exactly is…", "What precisely are…").
_ASKS_DEFINITION = re.compile(
    r"^what\s+(?:\w+ly\s+)?(?:is|are)\s+(?!the\s+difference)|^what does .+ mean\b|"
    r"\bwhat is meant by\b",
    re.I,
)
_ASKS_YES_NO = re.compile(r"^(?:is|are|does|do|can|could|should|will|has|have|was|were|did)\b",
                          re.I)


# A clause ends after a sentence's end, a colon or a semicolon, not after an ellipsis
# ("INSERT ... ON CONFLICT") and not inside a quoted string (an error message quoted whole).
_CLAUSE_END = re.compile(r"(?<=[.!?:;])(?<!\.\.)\s+")
_QUOTES = re.compile(r'"[^"]*"|“[^”]*”|`[^`]*`')


def asking_clause(question: str) -> str:
    """The last clause of ``question`` that asks (ends with "?"): a question that tells the
    asker's situation first ("I added the file to .gitignore but it still shows up. Why?",
    "I am in 'detached HEAD' state: why?") asks in its last clause, and its grammar is read
    there (verbose queries: the question proper is a small part of a long request, Bendersky
    and Croft, SIGIR 2008). The whole text when no clause ends with a question mark."""
    text = question.strip()
    quoted = [match.span() for match in _QUOTES.finditer(text)]
    cuts = [
        match.start()
        for match in _CLAUSE_END.finditer(text)
        if not any(start < match.start() < end for start, end in quoted)
    ]
    parts = [text[start:end] for start, end in zip([0, *cuts], [*cuts, len(text)], strict=True)]
    clauses = [part.strip() for part in parts if part.rstrip().endswith("?")]
    return clauses[-1] if clauses else text


# Question texts whose story terms are kept: a run asks a handful (its objective and at most six
# sub-questions) for every page it reads, so this holds a few hundred runs' questions while a
# long-running worker's memory stays bounded.
_STORY_CACHE_SIZE = 1024


@lru_cache(maxsize=_STORY_CACHE_SIZE)
def story_terms(question: str) -> frozenset[str]:
    """The terms only the story of ``question`` has, when its asking clause asks on its own
    (:data:`_ASKED_ALONE` terms or more besides the words naming the kind of answer); empty
    otherwise. "I deleted rows but the file is as big as before: how do I shrink the
    file?" → {delet, row, big} (stemmed)."""
    clause = asking_clause(question)
    if clause == question.strip():
        return frozenset()
    filler = question_filler(question) | ASKER_WORDS
    asked = set(content_terms(clause, drop=filler))
    if len(asked - answer_type_terms(clause).keys()) < _ASKED_ALONE:
        return frozenset()
    return frozenset(content_terms(question, drop=filler)) - asked


def question_kind(question: str) -> QuestionKind:
    """The kind of answer ``question`` wants, read from its grammar: the question word, the
    word after "how", the head noun after "what/which", a comparative. A question whose
    opening says none is read again in its asking clause (:func:`asking_clause`)."""
    kind = _kind_of(question.strip())
    clause = asking_clause(question)
    if kind.kind == "other" and clause != question.strip():
        return _kind_of(clause)
    return kind


def _kind_of(text: str) -> QuestionKind:
    how = _HOW.match(text)
    degree = fold(how.group(1)) if how else ""
    after = fold(how.group(2) or "") if how else ""
    head_kind = next(iter(_head_kinds(text).values()), None)
    if _ASKS_COMPARISON.search(text):
        return QuestionKind("comparison")
    if _ASKS_DATE.search(text) or head_kind == "date":
        return QuestionKind("date")
    if degree in _MEASURE_ADJECTIVES:
        timed = degree in _TIME_ADJECTIVES or (degree == "long" and after in _AUXILIARIES)
        return QuestionKind("quantity", "time" if timed else "")
    if head_kind == "quantity":
        return QuestionKind("quantity")
    if _ASKS_CAUSE.search(text) or head_kind == "cause":
        return QuestionKind("cause")
    if _ASKS_MANNER.search(text):
        return QuestionKind("manner")
    if _ASKS_PROCEDURE.search(text):
        return QuestionKind("procedure")
    if _ASKS_DEFINITION.search(text):
        return QuestionKind("definition")
    if _ASKS_YES_NO.search(text):
        return QuestionKind("yesno")
    return QuestionKind("other")


_NUMBER_WORDS = (
    r"\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozens?|hundreds?|"
    r"thousands?|millions?|billions?|half|double|twice)\b"
)
# What an answer of each kind looks like: grammar (a number, a copula, an instruction, a
# contrast, a stated default, a causal connective), never the vocabulary of a subject.
_SHAPES = {
    "quantity": re.compile(f"{_QUANTITY.pattern}|{_NUMBER_WORDS}", re.I),
    "date": re.compile(f"{_DATE.pattern}|{_VERSION.pattern}|\\bsince\\b", re.I),
    "definition": re.compile(
        r"\b(?:is|are)\s+(?:an?|the|one|when|used|called|known)\b|\brefers? to\b|\bmeans?\b|"
        r"\bstands? for\b",
        re.I,
    ),
    "procedure": re.compile(
        r"^(?:to\s+\w+|use|run|call|set|pass|add|open|create|specify|install|enable|disable|"
        r"type|enter|import|write|download|configure)\b|\b(?:use|run|call|pass|set|specify|"
        r"enter)\s+(?:the|a|an|it)\b|\byou (?:can|need to|must|should|may)\b|\busing\b|"
        r"\bthe following command\b",
        re.I,
    ),
    "comparison": re.compile(
        r"\b(?:unlike|whereas|instead of|rather than|than|while|differs?|compared|in contrast|"
        r"but|however)\b",
        re.I,
    ),
    "yesno": re.compile(
        r"\b(?:not|no|never|only|must|cannot|can't|by default|defaults? to|yes|(?:is|are) "
        r"(?:enabled|disabled|required|optional|supported|safe|unsafe))\b",
        re.I,
    ),
    "cause": re.compile(
        r"\b(?:because|due to|caus\w*|result(?:ed|s)? (?:of|in|from)|as a result|led to|"
        r"lead(?:s|ing)? to|owing to|attribut\w*|so that|therefore|thus|hence|reasons?)\b",
        re.I,
    ),
    "manner": re.compile(r"\b(?:by|uses?|using|works?|through)\b", re.I),
}

# What answers "how long / how often": a number (in digits or words) or a unit of time or
# frequency.
_LENGTH_OF_TIME = re.compile(f"{_SHAPES['quantity'].pattern}|{_TIME_UNITS.pattern}", re.I)


def answer_shape(kind: QuestionKind) -> re.Pattern[str] | None:
    """What a passage answering a question of ``kind`` contains, or None for "other"."""
    if kind.kind == "quantity" and kind.unit == "time":
        return _LENGTH_OF_TIME
    return _SHAPES.get(kind.kind)


# A definiendum is a noun phrase: at most this many content words stand before the copula
# ("Joined eager loading", "The test client"), so a long clause ending in "is" is none.
DEFINIENDUM_TERMS = 4


def opens_with_definition(
    text: str, copulas: Sequence[re.Pattern[str]], focus: Collection[str]
) -> bool:
    """Whether ``text`` opens with a definition of one of the ``focus`` terms: a short subject
    (at most :data:`DEFINIENDUM_TERMS` content terms) holding one of them, before the first of
    the ``copulas`` found. The "<term> is a" surface pattern of definitional question
    answering (Hildebrandt, Katz & Lin, HLT-NAACL 2004), shared by the selector and the
    quoted report."""
    starts = [match.start() for copula in copulas if (match := copula.search(text))]
    if not starts:
        return False
    subject = content_terms(text[: min(starts)])
    return 0 < len(subject) <= DEFINIENDUM_TERMS and bool(set(focus) & set(subject))


def answer_shape_bonus(question: str, passage: str, heading: str = "") -> float:
    """A small bonus when a passage has the shape of the answer the question wants (a number
    for "how many", a cause for "why", a date for "when"). A date may come from the heading
    the passage stands under ("From 1 March 2025")."""
    kind = question_kind(question)
    shape = answer_shape(kind)
    if shape is None:
        return 0.0
    dated_heading = kind.kind == "date" and bool(shape.search(heading))
    return _ANSWER_BONUS if shape.search(passage) or dated_heading else 0.0


def answer_type_terms(question: str) -> dict[str, re.Pattern[str]]:
    """Terms of ``question`` that name the kind of answer it wants, each with what such an
    answer looks like: "which dates" → a date, "how long" → a duration. A passage of that shape
    stands for the word; it need not repeat it."""
    kind = question_kind(question)
    shape = answer_shape(kind)
    if shape is None:
        return {}
    found: dict[str, re.Pattern[str]] = {}
    how = _HOW.match(question.strip())
    if how and kind.kind == "quantity" and fold(how.group(1)) in _MEASURE_ADJECTIVES:
        found[stem(fold(how.group(1)))] = shape
    for term, head_kind in _head_kinds(question).items():
        if head_kind == kind.kind:
            found[term] = shape
    return found


def _head_kinds(question: str) -> dict[str, str]:
    """The answer-type head nouns after "what/which" in ``question`` (stemmed) and their kind."""
    found = {}
    for match in _WH_HEAD.finditer(question):
        for word in match.groups():
            term = stem(fold(word)) if word else ""
            if term in _ANSWER_NOUNS:
                found[term] = _ANSWER_NOUNS[term]
                break
            if word and fold(word) in _EXTREMES:
                found[term] = "quantity"
                break
    return found


# Questions whose answer is a value, the value's name and what it looks like: a report whose
# quotations for such a question carry no such value has not answered it (a stated gap).
_VALUE_QUESTIONS = (
    (re.compile(r"^(?:on\s+)?(?:what|which)\s+(?:date|day|year)\b|^when\b", re.I), "a date", _DATE),
    (re.compile(r"\b(?:which|what)\s+(?:\w+\s+)?(?:versions?|releases?)\b", re.I), "a version",
     _VERSION),
    (re.compile(r"^how\s+(?:many|much|large|big)\b", re.I), "a figure", _QUANTITY),
    # "How long does X keep …", "how often": a length of time (a number, or a unit of time or
    # frequency word, "every week"); "how long can a name be" is answered by a number too.
    (re.compile(r"^how\s+(?:long|often)\b", re.I), "a length of time", _LENGTH_OF_TIME),
)


def wanted_value(question: str) -> tuple[str, re.Pattern[str]] | None:
    """The kind of value ``question`` asks for ("a date", "a version", "a figure") and its
    shape, or None for a question answered in words."""
    text = question.strip()
    for asks, name, shape in _VALUE_QUESTIONS:
        if asks.search(text):
            return name, shape
    # "What is the size of …", "the maximum delay …": a head noun of the asking clause asking an
    # amount (read by _head_kinds, as question_kind reads head nouns) wants a figure too.
    if "quantity" in _head_kinds(asking_clause(text)).values():
        return "a figure", _QUANTITY
    return None


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


# Text the question quotes: straight or curly double quotes, or backticks. Single quotes are
# left out: they are apostrophes far more often ("don't", "Rust's").
_QUOTED = re.compile(r'"([^"]+)"|\u201c([^\u201d]+)\u201d|`([^`]+)`')


def quoted_phrases(question: str) -> list[tuple[str, ...]]:
    """The content-term sequences of the strings ``question`` quotes, those of two terms or
    more: a passage holding one in order holds what the asker saw or typed, word for word."""
    phrases = []
    for match in _QUOTED.finditer(question):
        terms = tuple(content_terms(next(group for group in match.groups() if group)))
        if len(terms) >= _MIN_PHRASE_TERMS and terms not in phrases:
            phrases.append(terms)
    return phrases


def holds_phrase(terms: Sequence[str], phrase: Sequence[str]) -> bool:
    """Whether the term sequence ``terms`` holds ``phrase`` as consecutive terms."""
    width = len(phrase)
    return any(
        tuple(terms[start : start + width]) == tuple(phrase)
        for start in range(len(terms) - width + 1)
    )


def entity_terms(question: str) -> frozenset[str]:
    """Terms of the capitalised names in a question ("Lisbon Tram", "CRISPR", "Node.js"),
    except its first word, whose capital says nothing."""
    names = re.findall(r"(?<=[\w,;:()'\"] )[A-Z][\w'-]*(?:\.[a-z]\w*)*", question)
    return frozenset(term for name in names for term in content_terms(name))


# The asker's own verbs of seeing and needing and the "going" of "going to" ("How can I see
# the SQL … is going to produce?", "Which version do I need?"): they say what the asker does,
# not what the page is about, and a page holding the answer rarely repeats them (the searches
# drop them too, research/llm/search_queries.py). Closed: perception, necessity and
# the periphrastic future, no subject's vocabulary.
ASKER_WORDS = word_set("""going see need""")


def question_terms(
    question: str, topic: Collection[str] = (), *, background: bool = True
) -> tuple[dict[str, float], set[str]]:
    """The weighted terms of a question and its focus.

    Names weigh half (they say what the question is about, and the page was found for them),
    and so do the parts of a compound code name ("listen" of "setMaxListeners"); with
    ``background``, a word common in general English weighs less
    (:func:`research.engine.specificity.specificity`: "put", "never"); how much any word
    counts beyond that is left to its inverse document frequency where the terms are
    matched. The focus is what the question asks about that is no name, no word naming
    the kind of answer, no number nor the topic of the page: a passage mentioning some of it
    speaks to the question, not only of its subject. A word inside the page's own phrase
    ("energy" in "battery energy losses" on a page about battery losses) only narrows the
    topic and is no focus either.
    """
    names = entity_terms(question)
    answer_types = answer_type_terms(question)
    filler = question_filler(question) | ASKER_WORDS
    sequence = content_terms(question, drop=filler)
    parts = name_part_terms(question, drop=filler)
    story = story_terms(question)
    query = {
        term: (_NAME_SCALE if term in names else 1.0)
        * (_NAME_PART_SCALE if term in parts else 1.0)
        * (_STORY_SCALE if term in story else 1.0)
        * (specificity(term) if background else 1.0)
        for term in sequence
    }
    # Words in a row, with no stop word between them: "battery energy losses".
    adjacent = [
        stem(token) if token not in STOP_WORDS and token not in filler else None
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
        and term not in topic
        and term not in modifiers
        and term not in answer_types
        and not term[0].isdigit()
    }
    return query, focus
