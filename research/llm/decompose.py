"""Deterministic decomposition of a research question into sub-questions.

Used by the extractive backend when no language model is configured. It reads the wording of
the question: separate what/why/how parts, comparisons ("X vs Y", "compare X with Y",
"difference between X and Y", "which is cheaper, X or Y"), listed facets or entities ("on cost,
noise and emissions", "in France and Germany"), a time frame and places. It never invents
topics the question does not name. The web searches for each sub-question are worded by
:mod:`research.llm.search_queries`.
"""

import re
from dataclasses import dataclass, field

from research.engine.text import QUESTION_FILLER, content_terms, fold
from research.llm.comparison import Comparison, comparison_questions, find_comparison
from research.llm.question_context import (
    context_focus,
    drop_opener,
    move_setting,
    split_afterword,
    split_context,
    split_topic,
    with_context,
)
from research.llm.scope import find_geographies, find_timeframe
from research.llm.wording import AUX as _AUX
from research.llm.wording import FACET_PREPOSITION as _FACET_PREPOSITION
from research.llm.wording import IMPERATIVE as _IMPERATIVE
from research.llm.wording import VERBS as _VERBS
from research.llm.wording import WH as _WH
from research.llm.wording import SubQuestion, join_items, split_list
from research.llm.wording import as_question as _as_question
from research.llm.wording import clean as _clean

__all__ = [
    "Comparison",
    "Decomposition",
    "SubQuestion",
    "decompose",
    "find_comparison",
    "find_geographies",
    "find_subject",
    "find_timeframe",
    "split_context",
    "split_parts",
]
# "…, and from which dates…": a second question may open with a preposition.
_LEADING_PREPOSITION = r"(?:from|on|in|at|by|for|to|with|since|until|under|after|before)"
# Where one question holds several: "…, and why…", "; how…", "? What…", "and explain…".
_PART_SPLIT = re.compile(
    rf"\s*[?;]\s*|\s*,?\s+(?:and|but|also|as well as)\s+"
    rf"(?=(?:(?:{_LEADING_PREPOSITION})\s+{_WH}|{_WH}|{_AUX}|{_IMPERATIVE})\b)"
    rf"|\s*,\s+(?={_WH}\b)",
    re.IGNORECASE,
)
_PERSONAL_PRONOUN = re.compile(r"\b(it|its|they|their|them)\b", re.IGNORECASE)
# "that"/"this" only stand for the subject where they act as one: "how does that compare".
_DEMONSTRATIVE = re.compile(
    r"\b(this|that|these|those)\b(?=\s+(?:compare|compares|differ|differs|change|changed|"
    r"is|are|was|were|has|have|had|affect|affects|mean|means)\b)",
    re.IGNORECASE,
)
_RELATIONAL_NOUN = re.compile(
    r"\b(?:driver|drivers|cause|causes|reason|reasons|effect|effects|impact|impacts|consequence|"
    r"consequences|factor|factors|source|sources|role|result|results|trigger|triggers)$",
    re.IGNORECASE,
)


@dataclass
class Decomposition:
    """What the wording of a question breaks down into."""

    questions: list[SubQuestion]
    subject: str
    topics: list[str] = field(default_factory=list)
    geographies: list[str] = field(default_factory=list)
    timeframe: tuple[str | None, str | None] | None = None


@dataclass(frozen=True)
class Subject:
    """What a question's first part is about, for resolving references in its later parts.

    ``entity`` is the thing ("the new harbour bridge") that "it"/"its" and a bare follow-up
    ("is wind the main load?") point to; ``measure`` is what "that" stands for in "how does that
    compare" ("the length of the main span of the … bridge"); ``context`` anchors a follow-up
    that names neither ("how much did it cost in total").
    """

    entity: str
    measure: str
    context: str = ""
    # "How many lines of history does X keep": what was counted, the plural that "they" and
    # "them" in a follow-up agree with ("where does it save them" → the lines of history).
    counted: str = ""
    # The first part's subject could not be cut from its verb ("Which hosts run the Tarn
    # daemon", "Which port does the Tarn daemon listen on": no verb we know ends the noun
    # phrase), so ``entity`` is a clause: a pronoun in a later part is left as asked, with
    # the first question before it.
    clause: bool = False

    def __bool__(self) -> bool:
        return bool(self.entity)


def _cut_at_verb(words: list[str]) -> list[str]:
    for index, word in enumerate(words):
        if index and (fold(word) in _VERBS or (word.islower() and word.endswith("ed"))):
            return words[:index]
    return words


# A degree or focus adverb in -ly between the question word and its auxiliary ("What
# *exactly* is …", "What *really* causes …") or before the question word ("*Roughly* how
# many …"): it qualifies the asking, not the thing asked about. Four letters or more before
# the suffix, so "only", "early" and "apply" are not read as one.
_LY_ADVERB = r"(?-i:[a-z]{4,}ly|[A-Z][a-z]{3,}ly)"


# "How do I undo a commit", "How can we log the queries": a question about what the asker
# does to something.
_ACTOR = re.compile(
    r"^(?:how|when|why|where)\s+(?:do|does|did|can|could|should|would|will)\s+(?:i|we|you)\s+"
    r"(?P<verb>[a-z]+)\s+(?P<object>.+)$",
    re.IGNORECASE,
)
# A negation or a subordinating conjunction ends the thing a clause is about: "my database
# file | not smaller after I delete rows", "the cache | when the server restarts".
_CLAUSE_BREAK = re.compile(
    r"\s+(?:not|never|no longer|after|when|whenever|if|unless|because|while|before|since|"
    r"until|once)\s.*$",
    re.IGNORECASE,
)


def _cut_at_clause(text: str) -> str:
    """``text`` up to a negation or a subordinate clause, when something is left before it."""
    cut = _CLAUSE_BREAK.sub("", text)
    return cut if cut.strip() else text


def find_subject(first_part: str) -> Subject:
    """What the first part of a question is about.

    "What is CRISPR" → CRISPR; "How many visitors does the X museum have" → the X museum,
    measured as "the number of visitors of the X museum"; "How long did the 1998 strike last"
    → the 1998 strike; "Which tax rules change in 2027" → tax rules.
    """
    text = _clean(first_part)
    quantity = re.match(
        rf"^how\s+(?P<kind>many|much)\s+(?P<x>.+?)\s+{_AUX}\s+(?P<y>.+)$", text, re.IGNORECASE
    )
    if quantity:
        words = quantity.group("y").split()
        entity = " ".join(_cut_at_verb(words))
        noun = "number" if quantity.group("kind").casefold() == "many" else "amount"
        counted = quantity.group("x")
        plural = counted if noun == "number" else ""
        # "How many threads can send on one channel": the counted things are the subject and
        # what follows the auxiliary is their verb, not a thing "it" could mean.
        clause = len(entity.split()) == len(words)
        return Subject(
            entity,
            f"the {noun} of {counted} of {entity}",
            f"{counted} of {entity}",
            plural,
            clause=clause,
        )
    measure = re.match(rf"^how\s+\w+\s+(?P<aux>{_AUX})\s+(?P<x>.+)$", text, re.IGNORECASE)
    if measure:
        words = measure.group("x").split()
        if measure.group("aux").casefold() in ("do", "does", "did") and len(words) > 2:
            # "how long did the drought last": the last word is the verb, not the thing.
            words = words[:-1]
        return Subject(" ".join(words), measure.group("x"))
    actor = _ACTOR.match(text)
    if actor:
        # "How do I show the SQL that … emits": what the asker acts on is what "it" means.
        entity = _cut_at_clause(actor.group("object"))
        return Subject(entity, entity)
    lead = re.sub(
        rf"^(?:{_WH}\s+)?(?:{_LY_ADVERB}\s+)?(?:{_AUX}\s+)?", "", text, flags=re.IGNORECASE
    )
    lead = re.sub(r"^(?:caused|causes|cause|drives|drove|explains?)\s+", "", lead, flags=re.I)
    did = re.match(rf"^(?i:{_WH}\s+(?:do|does|did)\s+)(?P<x>.+?)\s+(?P<verb>[a-z]+)$", text)
    if did and (fold(did.group("verb")) in _VERBS or len(did.group("x").split()) == 1):
        # "When did the line 14 extension open", "How does CRISPR work": the last word is the
        # verb, not the thing.
        return Subject(did.group("x"), did.group("x"))
    if re.match(rf"^{_WH}\s+(?:do|does|did)\s", text, re.IGNORECASE):
        # "How does the Tarn pool handle stale connections": the subject ends at its verb;
        # when no verb we know ends it ("How does X compare with Y"), it is a clause.
        words = lead.split()
        cut = _cut_at_verb(words)
        if len(cut) < len(words):
            return Subject(" ".join(cut), " ".join(cut))
        return Subject(_cut_at_clause(lead), lead, clause=True)
    listed = _listed_items(lead)
    if listed is not None:
        # "the effects of remote work on pay, housing and commuting" is about remote work's
        # effects; the list is what the parts ask about.
        head = re.sub(
            rf"\s+(?:{_FACET_PREPOSITION}|of|about|in|between|among)\s+(?:the\s+)?$", "", listed[0]
        )
        lead = head.strip() or lead
        return Subject(lead, lead)
    if re.match(rf"^(?:what|which)\s+(?!(?:{_LY_ADVERB}\s+)?{_AUX}\b)", text, re.IGNORECASE):
        # "Which grant rules change in 2024": the words before the verb. A which-question
        # always has a verb; when none we know ends the noun phrase ("Which hosts run …"), or
        # an auxiliary follows it ("Which port does the daemon listen on"), what a later
        # "it" means is the daemon, not the words up to the verb.
        words = lead.split()
        cut = _cut_at_verb(words)
        clause = len(cut) == len(words) or bool(re.search(rf"\s{_AUX}\s", f" {lead} ", re.I))
        return Subject(_cut_at_clause(" ".join(cut)), " ".join(cut), clause=clause)
    return Subject(_cut_at_clause(lead), lead)


def split_parts(objective: str, *, keep_bare: bool = False) -> list[str]:
    """The separate questions inside ``objective`` ("What is X and how does it work?"); a
    bare "why" is kept when ``keep_bare`` (it asks about the statements before it)."""
    parts: list[str] = []
    for part in (_clean(piece) for piece in _PART_SPLIT.split(objective)):
        if parts and _CONDITIONAL_FOLLOW_UP.fullmatch(parts[-1]):
            parts[-1] = f"{parts[-1]}, {part}"  # "If not, what should I use instead"
        else:
            parts.append(part)
    return [
        part
        for part in parts
        if content_terms(part) or (keep_bare and re.fullmatch(_WH, part, re.IGNORECASE))
    ]


_LISTED_TAIL = re.compile(
    rf"^(?P<head>.+\s(?:{_FACET_PREPOSITION}|of|about|in|among)\s+(?:the\s+)?)"
    r"(?P<list>[^,]+?(?:,\s*[^,]+?)*(?:,?\s+(?:and|or)\s+)[^,]+?)(?P<tail>\s+(?:since|from|between|"
    r"before|after|during|in)\s+\d{4}.*)?$",
    re.IGNORECASE,
)


_BRACKETS = ("()", "[]", "{}")


def _unbalanced(text: str) -> bool:
    """Whether ``text`` opens or closes a bracket it does not close or open."""
    return any(text.count(pair[0]) != text.count(pair[1]) for pair in _BRACKETS)


def _listed_items(part: str) -> tuple[str, list[str], str] | None:
    """ "…on weight, blood sugar and cholesterol" → (head, items, tail) when the items are short."""
    match = _LISTED_TAIL.match(part)
    if not match or re.search(r"\bbetween\s+[^,]+?\s+and\s", part, re.IGNORECASE):
        # "…between 1850 and 1900" names the two ends of one thing, not two items.
        return None
    items = split_list(match.group("list"))
    if not 2 <= len(items) <= 5 or any(len(item.split()) > 4 for item in items):
        return None
    if any(_unbalanced(item) for item in items):
        # "…on a network drive (NFS or SMB share)": the list is inside an aside, which
        # qualifies one item ("a network drive"); it lists no items of the head's own.
        return None
    if any(re.match(rf"^(?:\w+\s+)?{_WH}\b", item, re.IGNORECASE) for item in items):
        # "…in 2025, and on which dates?" asks a second question, it lists no items.
        return None
    if any(re.match(r"^(?:never|not|no longer|also|always|still|then)\b", i, re.I) for i in items):
        # "…lives only in RAM and never touches the disk": a second predicate, not an item.
        return None
    head = match.group("head")
    preposition = head.split()[-1].casefold()
    # "…for debug builds and for release builds": the items do not repeat the head's "for".
    items = [re.sub(rf"^{re.escape(preposition)}\s+", "", item, flags=re.I) for item in items]
    return head, items, match.group("tail") or ""


def _to_question(part: str) -> str:
    text = re.sub(r"^(?:(?:and|also|please|then)\s+)+", "", _clean(part), flags=re.IGNORECASE)
    imperative = re.match(rf"^{_IMPERATIVE}\s+(?P<rest>.+)$", text, re.IGNORECASE)
    if imperative:
        rest = imperative.group("rest")
        text = (
            rest if re.match(rf"^{_WH}\b", rest, re.IGNORECASE) else f"What is known about {rest}"
        )
    elif not re.match(
        rf"^(?:{_LY_ADVERB}\s+)?(?:(?:{_LEADING_PREPOSITION})\s+{_WH}|{_WH}|{_AUX})\b",
        text,
        re.IGNORECASE,
    ):
        text = f"What is known about {text}"
    return _as_question(text)


# "on which dates", "since which Git version": a wh-phrase with no verb of its own.
_ELLIPTICAL = re.compile(
    rf"^(?P<lead>(?:{_LEADING_PREPOSITION}\s+)?(?:which|what)(?:\s+(?!{_AUX}\b)[\w.-]+){{1,3}})$",
    re.IGNORECASE,
)
_WHAT_CLAUSE = re.compile(rf"^(?:what|which)\s+(?!{_AUX}\b)(?P<clause>.+)$", re.IGNORECASE)


def _complete_ellipsis(part: str, first_part: str) -> str | None:
    """ "…take effect in 2025, and on which dates?" → "On which dates do fare changes take
    effect in 2025?": a bare "on which dates" borrows the clause of the question before it;
    "…, and since which version?" asks "Since which version has this been the case: …?"."""
    bare = _ELLIPTICAL.match(_clean(part))
    if not bare:
        return None
    clause = _WHAT_CLAUSE.match(_clean(first_part))
    if clause:
        return f"{bare.group('lead')} do {clause.group('clause')}"
    # "What does X do by default…, and since which version?": the phrase asks when (or where)
    # the answer to the first question holds, which a verb of its own says.
    first = _clean(first_part)
    return f"{bare.group('lead')} has this been the case: {first[:1].lower()}{first[1:]}"


def _resolve_references(part: str, subject: Subject, first_part: str = "") -> str:
    """Replace "it"/"its" with the subject, "that …" with what was measured, and anchor a bare
    "main driver" or "on which dates" to the question before."""
    if not subject:
        return part
    if first_part and _CONDITIONAL_FOLLOW_UP.match(_clean(part)):
        # "If not, what should I use instead?" asks on the answer to the question before it.
        return f"{_as_question(first_part)} {_as_question(part)}"
    completed = _complete_ellipsis(part, first_part)
    if completed is not None:
        return completed
    bare_count = re.match(rf"^(?P<how>how\s+many)\s+(?P<rest>{_AUX}\s.+)$", _clean(part), re.I)
    if bare_count and subject.counted:
        # "…, and how many can receive from it?": as many of the things counted before.
        part = f"{bare_count.group('how')} {subject.counted} {bare_count.group('rest')}"
    if subject.clause and first_part and _PERSONAL_PRONOUN.search(part):
        # "Which port does the daemon listen on, and how many clients can it serve?": "it" is
        # left as asked, after the question that says what it is.
        return f"{_as_question(first_part)} {_as_question(part)}"
    entity = subject.entity

    def replace(match: re.Match[str]) -> str:
        pronoun = match.group(1).casefold()
        if subject.counted and pronoun in ("they", "them", "their"):
            # A plural pronoun agrees with the counted plural, not the singular thing.
            thing = subject.counted
        else:
            thing = entity
        if pronoun in ("its", "their"):
            return f"{thing}'" if thing.endswith("s") else f"{thing}'s"
        return thing

    resolved = _PERSONAL_PRONOUN.sub(replace, part)
    resolved = _DEMONSTRATIVE.sub(lambda match: subject.measure, resolved)
    subject_terms = set(content_terms(subject.measure))
    if resolved == part and not subject_terms & set(content_terms(part)):
        # "…, and is phosphorus the main driver?" means the driver *of the subject*.
        anchor = subject.context or entity
        if _CLAUSE.search(anchor):
            # The subject is a clause ("which version lets me…"), not a thing "of" which one
            # can ask: the follow-up keeps the first question before it, as asked.
            return f"{_as_question(first_part)} {_as_question(part)}"
        joiner = " of " if _RELATIONAL_NOUN.search(_clean(part)) else " in the case of "
        resolved = f"{_clean(part)}{joiner}{anchor}"
    return resolved


# "If not, …", "If so, …", "Otherwise, …", "If that fails, …": a part conditional on the
# answer to the part before it.
_CONDITIONAL_FOLLOW_UP = re.compile(
    r"(?:if\s+(?:not|so|yes|no|that|this|it|they)\b|otherwise\b|else\b)", re.IGNORECASE
)
# After a comparison: a part asking how the sides differ, and words standing for the sides
# ("when should I use each", "which of them is faster").
_DIFFERENCE = re.compile(r"\bdiffer(?:s|ence|ences|ent)?\b", re.IGNORECASE)
_SIDES_EACH = re.compile(r"\b(?:each|either)\b(?!\s+of\b)", re.IGNORECASE)
_SIDES_PRONOUN = re.compile(r"\b(?:them|they|both)\b", re.IGNORECASE)


def _why_of(part: str) -> str | None:
    """ "Is X safer than Y? Why?" → "Why is X safer than Y?": a bare "why" after a yes/no
    question asks the reason for its answer; after any other question it adds nothing."""
    first = _clean(part)
    if re.match(rf"^{_AUX}\b", first, re.IGNORECASE):
        return _as_question(f"Why {first[:1].lower()}{first[1:]}")
    return None


def _after_comparison(part: str, comparison: Comparison, compared_part: str) -> str | None:
    """What a part following a comparison asks, or ``None`` when the comparison's own
    questions ask it already ("…safer than Y? What is the difference?" asks how they differ;
    "Is X safer than Y? Why?" asks why; "…, and when should I use each?" asks about both
    sides), or ``""`` when it is a question of its own."""
    text = _clean(part)
    a, b = comparison.items[0], join_items(comparison.items[1:])
    if _DIFFERENCE.search(text) and len(content_terms(text, drop=QUESTION_FILLER)) <= 2:
        if comparison.difference:
            return None
        both = "do" if re.search(r"\b(?:and|or)\b", a) else "does"
        return _as_question(f"How {both} {a} differ from {b}")
    if re.fullmatch(r"why", text, re.IGNORECASE):
        return _why_of(compared_part)
    if _SIDES_EACH.search(text) or _SIDES_PRONOUN.search(text):
        resolved = _SIDES_EACH.sub(lambda m: f"{m.group(0)} of {a} and {b}", text, count=1)
        resolved = _SIDES_PRONOUN.sub(f"{a} and {b}", resolved, count=1)
        return _to_question(resolved)
    if len(content_terms(text, drop=QUESTION_FILLER)) <= 1:
        return None
    return ""


# A personal pronoun, an auxiliary or a wh-word marks a clause rather than a noun phrase.
_CLAUSE = re.compile(rf"\b(?:i|me|my|you|your|we|our|{_AUX}|{_WH})\b", re.IGNORECASE)


def _wh_word(text: str) -> str:
    match = re.match(rf"^({_WH})\b", text, re.IGNORECASE)
    return match.group(1).casefold() if match else ""


# A code token: word characters joined by punctuation ("main..feature", "s[0]", "--force").
_CODE_TOKEN = re.compile(r"\S*\w[^\s\w]+\w\S*|--?\w[\w-]*")


def _same_code(first: str, second: str) -> bool:
    """Whether two questions name the same code tokens: "git log a..b" and "git log a...b"
    have the same words and ask about two things."""
    return set(_CODE_TOKEN.findall(first)) == set(_CODE_TOKEN.findall(second))


def _terms_overlap(first: str, second: str) -> float:
    a = set(content_terms(first, drop=QUESTION_FILLER))
    b = set(content_terms(second, drop=QUESTION_FILLER))
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def decompose(objective: str, *, limit: int = 6) -> Decomposition:
    """Break ``objective`` into at most ``limit`` sub-questions (at least one)."""
    context, asked = split_context(drop_opener(objective))
    if not context:
        topic, question = split_topic(asked)
        # "Quill vs Tarn: which is faster?" is a comparison, its sides before the colon.
        if topic and find_comparison(asked) is None:
            context, asked = topic, question
    context, situation = context_focus(context)
    asked, afterword = split_afterword(asked)
    asked = move_setting(asked)
    parts = split_parts(asked, keep_bare=True) or [_clean(asked)]
    subject = find_subject(parts[0])
    questions: list[SubQuestion] = []
    topics: list[str] = []
    compared: tuple[Comparison, str] | None = None
    for index, raw_part in enumerate(parts):
        if compared is not None:
            follow_up = _after_comparison(raw_part, *compared)
            if follow_up is None:
                continue
            if follow_up:
                questions.append(SubQuestion(follow_up, "The follow-up to the comparison."))
                continue
        if index and not context and re.fullmatch(_WH, raw_part, re.IGNORECASE):
            why = _why_of(parts[0]) if raw_part.casefold() == "why" else None
            if why is not None:
                questions.append(SubQuestion(why, "The why part of the question."))
            continue
        # With statements before the question, every part keeps them: "it" reads as asked.
        part = (
            _resolve_references(raw_part, subject, parts[0]) if index and not context else raw_part
        )
        comparison = find_comparison(raw_part if index else part, subject=subject.measure)
        if comparison is not None:
            compared = (comparison, raw_part if index else part)
            questions.extend(comparison_questions(comparison))
            topics.extend(comparison.topics)
            continue
        listed = _listed_items(part)
        if listed is not None:
            head, items, tail = listed
            for item in items:
                questions.append(
                    SubQuestion(
                        _to_question(f"{head}{item}{tail}"),
                        f"One of the items the question lists: {item}.",
                    )
                )
            topics.extend(items)
            continue
        question = _to_question(part)
        wh = _wh_word(question)
        reason = (
            f"The {wh} part of the question." if wh and len(parts) > 1 else "The question as asked."
        )
        questions.append(SubQuestion(question, reason))
    questions = [with_context(question, context, situation, afterword) for question in questions]
    unique: list[SubQuestion] = []
    for question in questions:
        # The same words asked with another wh-word ("Why is X free?" after "Is X free?") is
        # another question.
        if all(
            _terms_overlap(question.text, kept.text) < 1.0
            or _wh_word(question.text) != _wh_word(kept.text)
            or not _same_code(question.text, kept.text)
            for kept in unique
        ):
            unique.append(question)
    return Decomposition(
        questions=unique[:limit],
        subject=subject.entity,
        topics=list(dict.fromkeys(topic for topic in topics if topic)),
        geographies=find_geographies(objective),
        timeframe=find_timeframe(objective),
    )
