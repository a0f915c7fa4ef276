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

from research.engine.text import QUESTION_FILLER, content_terms, fold, word_set

_WH = r"(?:what|why|how|when|where|who|whom|whose|which|whether)"
_AUX = r"(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|might|may)"
_IMPERATIVE = (
    r"(?:explain|describe|compare|summari[sz]e|list|identify|assess|evaluate|estimate|find|"
    r"analy[sz]e|outline|discuss|determine|investigate|review|examine|look\s+(?:at|into)|"
    r"focus\s+on|include|cover|add|check)"
)
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
_FACET_PREPOSITION = r"(?:on|in terms of|regarding|with respect to|when it comes to|for|across)"
_SCOPE_SUFFIX = re.compile(
    r"\s+(?:(?:in|across|within|throughout)\s+(?:the\s+)?[A-Z][\w.'-]*(?:\s+(?:and|or|&)?\s*"
    r"(?:the\s+)?[A-Z][\w.'-]*)*(?:\s+(?:since|from|between|before|after|in|during)\s+.*)?"
    r"|(?:since|from|between|before|after|during|in)\s+(?:the\s+)?(?:\d{4}|\w+\s+\d{4}).*)$"
)
_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_MONTHS = word_set(
    "january february march april may june july august september october november december"
)
_LIST_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|,\s*|\s+and\s+|\s+or\s+|\s*&\s*|\s*/\s*)")
_PREPOSITION = re.compile(r"^(?P<head>.+?\s(?:of|in|for|at|on|across|among)\s+)(?P<tail>.+)$")
_VERBS = word_set(
    """have has had get gets got record records recorded see sees saw attract attracts receive
    receives received pay pays paid make makes made cost costs use uses used serve serves carry
    carries employ employs produce produces sell sells sold reach reaches reached need needs
    require requires take takes took generate generates change changes changed apply applies start
    starts end ends rise rises rose fall falls fell increase increases decrease decreases open
    opens close closes begin begins last lasts launch launches finish finishes peak peaks grow
    grows happen happens occur occurs find finds show shows say says"""
)
_COMPARATIVES = {
    "better": "good",
    "worse": "bad",
    "cheaper": "cheap",
    "safer": "safe",
    "larger": "large",
    "bigger": "big",
    "smaller": "small",
    "faster": "fast",
    "slower": "slow",
    "greener": "green",
    "healthier": "healthy",
    "easier": "easy",
    "harder": "hard",
    "riskier": "risky",
    "costlier": "costly",
    "cleaner": "clean",
    "quieter": "quiet",
    "stronger": "strong",
}
_RELATIONAL_NOUN = re.compile(
    r"\b(?:driver|drivers|cause|causes|reason|reasons|effect|effects|impact|impacts|consequence|"
    r"consequences|factor|factors|source|sources|role|result|results|trigger|triggers)$",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class SubQuestion:
    """A sub-question of the plan with the reason it exists."""

    text: str
    rationale: str
    priority: str = "required"
    requires_primary: bool = False


@dataclass
class Decomposition:
    """What the wording of a question breaks down into."""

    questions: list[SubQuestion]
    subject: str
    topics: list[str] = field(default_factory=list)
    geographies: list[str] = field(default_factory=list)
    timeframe: tuple[str | None, str | None] | None = None


def _clean(text: str) -> str:
    return " ".join(text.replace("\u2019", "'").split()).strip(" ,.;:!?")


def _as_question(text: str) -> str:
    text = _clean(text)
    return f"{text[:1].upper()}{text[1:]}?" if text else text


def _natural_case(item: str) -> str:
    """ "Heat pumps" at the start of a question becomes "heat pumps"; "Rust", "UK" and
    "Paris Metro" keep their capitals."""
    words = item.split()
    if len(words) >= 2 and words[0][:1].isupper() and words[0][1:].islower() and words[1].islower():
        return words[0].lower() + item[len(words[0]) :]
    return item


def _strip_lead(text: str) -> str:
    """Drop a leading wh-word, auxiliary and article: "how do heat pumps" -> "heat pumps"."""
    text = _clean(text)
    text = re.sub(rf"^(?:{_WH}\s+)?(?:{_AUX}\s+)?", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^(?:the\s+)?differences?\s+between\s+", "", text, flags=re.IGNORECASE)
    return re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.IGNORECASE).strip()


def find_timeframe(text: str) -> tuple[str | None, str | None] | None:
    """The period a question names: "since 2019" → (2019, None), "2015–2020" → (2015, 2020)."""
    span = re.search(r"\b(?:between|from)\s+(\d{4})\s+(?:and|to|until|-|–)\s+(\d{4})\b", text)
    span = span or re.search(r"\b(\d{4})\s*[-–]\s*(\d{4})\b", text)
    if span:
        return (span.group(1), span.group(2))
    since = re.search(r"\b(?:since|after|from)\s+(\d{4})\b", text, re.IGNORECASE)
    if since:
        return (since.group(1), None)
    before = re.search(r"\b(?:before|until|up to)\s+(\d{4})\b", text, re.IGNORECASE)
    if before:
        return (None, before.group(1))
    years = sorted(set(_YEAR.findall(text)))
    if years:
        return (years[0], years[-1])
    return None


def find_geographies(text: str) -> list[str]:
    """Capitalised places after "in"/"across": "in the UK" → ["UK"], "in France and Germany" →
    ["France", "Germany"]. Months and years are not places."""
    places: list[str] = []
    pattern = re.compile(
        r"\b(?:in|across|within|throughout)\s+(?:the\s+)?"
        r"((?:[A-Z][\w.'-]*)(?:\s+[A-Z][\w.'-]*)*(?:\s*(?:,|and|or|&)\s*(?:the\s+)?"
        r"[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*)*)*)"
    )
    for match in pattern.finditer(text):
        for item in _LIST_SPLIT.split(match.group(1)):
            item = item.strip()
            if item and fold(item) not in _MONTHS and not item.isdigit() and item not in places:
                places.append(item)
    return places


@dataclass(frozen=True)
class Subject:
    """What a question's first part is about, for resolving references in its later parts.

    ``entity`` is the thing ("the Paris Metro line 14 extension") that "it"/"its" and a bare
    follow-up ("is phosphorus the main driver?") point to; ``measure`` is what "that" stands for
    in "how does that compare" ("the number of weekday boardings of the … extension");
    ``context`` anchors a follow-up that names neither ("how much was paid out in total").
    """

    entity: str
    measure: str
    context: str = ""

    def __bool__(self) -> bool:
        return bool(self.entity)


def _cut_at_verb(words: list[str]) -> list[str]:
    for index, word in enumerate(words):
        if index and (fold(word) in _VERBS or (word.islower() and word.endswith("ed"))):
            return words[:index]
    return words


def find_subject(first_part: str) -> Subject:
    """What the first part of a question is about.

    "What is CRISPR" → CRISPR; "How many weekday boardings does the X extension have" → the X
    extension, measured as "the number of weekday boardings of the X extension"; "How long did
    the 2023 drought last" → the 2023 drought; "Which grant rules change in 2024" → grant rules.
    """
    text = _clean(first_part)
    quantity = re.match(
        rf"^how\s+(?P<kind>many|much)\s+(?P<x>.+?)\s+{_AUX}\s+(?P<y>.+)$", text, re.IGNORECASE
    )
    if quantity:
        entity = " ".join(_cut_at_verb(quantity.group("y").split()))
        noun = "number" if quantity.group("kind").casefold() == "many" else "amount"
        counted = quantity.group("x")
        return Subject(entity, f"the {noun} of {counted} of {entity}", f"{counted} of {entity}")
    measure = re.match(rf"^how\s+\w+\s+(?P<aux>{_AUX})\s+(?P<x>.+)$", text, re.IGNORECASE)
    if measure:
        words = measure.group("x").split()
        if measure.group("aux").casefold() in ("do", "does", "did") and len(words) > 2:
            # "how long did the drought last": the last word is the verb, not the thing.
            words = words[:-1]
        return Subject(" ".join(words), measure.group("x"))
    lead = re.sub(rf"^(?:{_WH}\s+)?(?:{_AUX}\s+)?", "", text, flags=re.IGNORECASE)
    lead = re.sub(r"^(?:caused|causes|cause|drives|drove|explains?)\s+", "", lead, flags=re.I)
    did = re.match(rf"^(?i:{_WH}\s+(?:do|does|did)\s+)(?P<x>.+?)\s+(?P<verb>[a-z]+)$", text)
    if did and fold(did.group("verb")) in _VERBS and len(did.group("x").split()) >= 2:
        # "When did the line 14 extension open": the last word is the verb, not the thing.
        return Subject(did.group("x"), did.group("x"))
    listed = _listed_items(lead)
    if listed is not None:
        # "the effects of remote work on pay, housing and commuting" is about remote work's
        # effects; the list is what the parts ask about.
        head = re.sub(
            rf"\s+(?:{_FACET_PREPOSITION}|of|about|in|between|among)\s+(?:the\s+)?$", "", listed[0]
        )
        lead = head.strip() or lead
        return Subject(lead, lead)
    if re.match(rf"^(?:what|which)\s+(?!{_AUX}\b)", text, re.IGNORECASE):
        # "Which grant rules change in 2024": the words before the verb.
        lead = " ".join(_cut_at_verb(lead.split()))
    return Subject(lead, lead)


def split_parts(objective: str) -> list[str]:
    """The separate questions inside ``objective`` ("What is X and how does it work?")."""
    parts = [_clean(part) for part in _PART_SPLIT.split(objective)]
    return [part for part in parts if content_terms(part)]


@dataclass(frozen=True)
class Comparison:
    """Things compared, on optional facets, for an optional purpose, within an optional scope.

    ``adjective`` is set for "which is cheaper, X or Y"; ``anaphoric`` when one side refers back
    to an earlier part ("how does that compare with the forecast").
    """

    items: list[str]
    facets: list[str]
    purpose: str = ""
    scope: str = ""
    adjective: str = ""
    anaphoric: bool = False
    # For "the cost of heat pumps vs gas boilers": the bare second side ("gas boilers"), so
    # the comparison reads "how does the cost of heat pumps compare with gas boilers".
    counterpart: str = ""


def _split_list(text: str) -> list[str]:
    items = [_clean(item) for item in _LIST_SPLIT.split(text)]
    return [item for item in items if item]


def _trailing_scope(text: str) -> tuple[str, str]:
    match = _SCOPE_SUFFIX.search(text)
    if not match:
        return text, ""
    return text[: match.start()].strip(), match.group(0).strip()


def _shared_tail(a: str, b: str) -> tuple[str, str]:
    """ "Route 9 vs Route 2 ridership": when the first side is only a name, lower-case words
    after the second name are what both are compared on."""
    if any(word[:1].islower() for word in a.split()):
        return b, ""
    words = b.split()
    names = 0
    while names < len(words) and not words[names][:1].islower():
        names += 1
    if 0 < names < len(words):
        return " ".join(words[:names]), " ".join(words[names:])
    return b, ""


def _distribute(a: str, b: str) -> tuple[str, str]:
    """ "cost of heat pumps" vs "gas boilers" → "cost of gas boilers" for the second side."""
    match = _PREPOSITION.match(a)
    if (
        match
        and len(match.group("tail").split()) <= 3
        and len(b.split()) <= 3
        and not _PREPOSITION.match(b)
    ):
        return a, f"{match.group('head')}{b}"
    return a, b


def find_comparison(part: str, *, subject: str = "") -> Comparison | None:
    """Recognise a comparison in one question part, or return ``None``."""
    text = _clean(part)
    facet_tail = rf"(?:\s+(?P<prep>{_FACET_PREPOSITION})\s+(?P<facets>.+))?"
    patterns = (
        r"^(?:which|what)\s+(?:is|are|was|were)\s+(?P<adj>(?:more|less|most|least)\s+\w+|\w+er|"
        r"better|worse)\s*[,:]?\s+(?P<a>.+?)\s+or\s+(?P<b>.+?)$",
        rf"^(?:{_WH}\s+(?:{_AUX}\s+)?)?(?P<a>.+?)\s+(?:compare|compares|stack up|measure up)\s+"
        rf"(?:with|to|against)\s+(?P<b>.+?){facet_tail}$",
        rf"^(?:compare|comparing|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against|versus|vs\.?)\s+"
        rf"(?P<b>.+?){facet_tail}$",
        rf"^(?:.*?\bdifferences?\s+between\s+)(?P<a>.+?)\s+and\s+(?P<b>.+?){facet_tail}$",
        rf"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?){facet_tail}$",
    )
    for pattern in patterns:
        match = re.match(pattern, text, re.IGNORECASE)
        if not match:
            continue
        groups = match.groupdict()
        a = _strip_lead(re.sub(r"^.*:\s*", "", groups["a"]))
        b = _clean(groups["b"])
        facets_text = groups.get("facets") or ""
        if ":" in b:
            b, facets_text = (piece.strip() for piece in b.split(":", 1))
        purpose = ""
        if facets_text and (groups.get("prep") or "").casefold() == "for":
            purpose, facets_text = f"for {facets_text}", ""
        scope = ""
        if facets_text:
            facets_text, scope = _trailing_scope(facets_text)
        else:
            b, scope = _trailing_scope(b)
            b, facets_text = _shared_tail(a, b)
        if purpose:
            purpose, purpose_scope = _trailing_scope(purpose)
            scope = scope or purpose_scope
        anaphoric = bool(re.fullmatch(r"(?:this|that|these|those|it|they)", a, re.IGNORECASE))
        if not anaphoric:
            b = re.sub(r"^(?:the|a|an)\s+", "", b, flags=re.IGNORECASE)
        if not a or not b:
            continue
        distributed = False
        if anaphoric:
            a = subject or a
        else:
            a = _natural_case(a)
            a, distributed_b = _distribute(a, b)
            distributed = distributed_b != b
        return Comparison(
            items=[a, distributed_b if distributed else b],
            counterpart=b if distributed else "",
            facets=_split_list(facets_text)[:4],
            purpose=purpose,
            scope=scope,
            adjective=(groups.get("adj") or "").casefold(),
            anaphoric=anaphoric,
        )
    return None


def _base_adjective(adjective: str) -> str:
    words = adjective.split()
    if words[0] in ("more", "less", "most", "least"):
        return " ".join(words[1:])
    return _COMPARATIVES.get(adjective, adjective[:-2] if len(adjective) > 5 else adjective)


def _comparison_questions(comparison: Comparison) -> list[SubQuestion]:
    a, b = comparison.items
    scope = f" {comparison.scope}" if comparison.scope else ""
    purpose = f" {comparison.purpose}" if comparison.purpose else ""
    facets = comparison.facets
    if comparison.anaphoric:
        return [
            SubQuestion(
                _as_question(f"How does {a} compare with {b}{scope}"),
                "The comparison the question asks for.",
            )
        ]
    questions = []
    for item in comparison.items:
        if comparison.adjective:
            verb = "are" if item.endswith("s") else "is"
            text = f"How {_base_adjective(comparison.adjective)} {verb} {item}{purpose}{scope}"
        elif comparison.counterpart and not facets:
            text = f"What is known about the {item}{purpose}{scope}"
        elif facets:
            text = f"What is known about the {_join(facets)} of {item}{purpose}{scope}"
        else:
            text = f"What are the strengths and weaknesses of {item}{purpose}{scope}"
        questions.append(SubQuestion(_as_question(text), f"One side of the comparison: {item}."))
    if comparison.adjective:
        questions.append(
            SubQuestion(
                _as_question(f"Which is {comparison.adjective}, {a} or {b}{scope}"),
                "The direct comparison the question asks for.",
            )
        )
    elif len(facets) > 1:
        for facet in facets[:3]:
            questions.append(
                SubQuestion(
                    _as_question(f"How do {a} and {b} compare on {facet}{purpose}{scope}"),
                    f"The comparison on {facet}.",
                )
            )
    elif comparison.counterpart:
        on = f" on {facets[0]}" if facets else ""
        questions.append(
            SubQuestion(
                _as_question(f"How does the {a} compare with {comparison.counterpart}{on}{scope}"),
                "The direct comparison the question asks for.",
            )
        )
    else:
        on = f" on {facets[0]}" if facets else ""
        questions.append(
            SubQuestion(
                _as_question(f"How do {a} and {b} compare{on}{purpose}{scope}"),
                "The direct comparison the question asks for.",
            )
        )
    return questions


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


_LISTED_TAIL = re.compile(
    rf"^(?P<head>.+\s(?:{_FACET_PREPOSITION}|of|about|in|between|among)\s+(?:the\s+)?)"
    r"(?P<list>[^,]+?(?:,\s*[^,]+?)*(?:,?\s+(?:and|or)\s+)[^,]+?)(?P<tail>\s+(?:since|from|between|"
    r"before|after|during|in)\s+\d{4}.*)?$",
    re.IGNORECASE,
)


def _listed_items(part: str) -> tuple[str, list[str], str] | None:
    """ "…on weight, blood sugar and cholesterol" → (head, items, tail) when the items are short."""
    match = _LISTED_TAIL.match(part)
    if not match:
        return None
    items = _split_list(match.group("list"))
    if not 2 <= len(items) <= 5 or any(len(item.split()) > 4 for item in items):
        return None
    if any(re.match(rf"^(?:\w+\s+)?{_WH}\b", item, re.IGNORECASE) for item in items):
        # "…in 2025, and on which dates?" asks a second question, it lists no items.
        return None
    return match.group("head"), items, match.group("tail") or ""


def _to_question(part: str) -> str:
    text = re.sub(r"^(?:(?:and|also|please|then)\s+)+", "", _clean(part), flags=re.IGNORECASE)
    imperative = re.match(rf"^{_IMPERATIVE}\s+(?P<rest>.+)$", text, re.IGNORECASE)
    if imperative:
        rest = imperative.group("rest")
        text = (
            rest if re.match(rf"^{_WH}\b", rest, re.IGNORECASE) else f"What is known about {rest}"
        )
    elif not re.match(
        rf"^(?:(?:{_LEADING_PREPOSITION})\s+{_WH}|{_WH}|{_AUX})\b", text, re.IGNORECASE
    ):
        text = f"What is known about {text}"
    return _as_question(text)


_ELLIPTICAL = re.compile(
    rf"^(?P<lead>(?:{_LEADING_PREPOSITION}\s+)?(?:which|what)\s+\w+)$", re.IGNORECASE
)
_WHAT_CLAUSE = re.compile(rf"^(?:what|which)\s+(?!{_AUX}\b)(?P<clause>.+)$", re.IGNORECASE)


def _complete_ellipsis(part: str, first_part: str) -> str | None:
    """ "…take effect in 2025, and on which dates?" → "On which dates do fare changes take
    effect in 2025?": a bare "on which dates" borrows the clause of the question before it."""
    bare = _ELLIPTICAL.match(_clean(part))
    clause = _WHAT_CLAUSE.match(_clean(first_part))
    if not bare or not clause:
        return None
    return f"{bare.group('lead')} do {clause.group('clause')}"


def _resolve_references(part: str, subject: Subject, first_part: str = "") -> str:
    """Replace "it"/"its" with the subject, "that …" with what was measured, and anchor a bare
    "main driver" or "on which dates" to the question before."""
    if not subject:
        return part
    completed = _complete_ellipsis(part, first_part)
    if completed is not None:
        return completed
    entity = subject.entity

    def replace(match: re.Match[str]) -> str:
        if match.group(1).casefold() in ("its", "their"):
            return f"{entity}'" if entity.endswith("s") else f"{entity}'s"
        return entity

    resolved = _PERSONAL_PRONOUN.sub(replace, part)
    resolved = _DEMONSTRATIVE.sub(lambda match: subject.measure, resolved)
    subject_terms = set(content_terms(subject.measure))
    if resolved == part and not subject_terms & set(content_terms(part)):
        # "…, and is phosphorus the main driver?" means the driver *of the subject*.
        joiner = " of " if _RELATIONAL_NOUN.search(_clean(part)) else " in the case of "
        resolved = f"{_clean(part)}{joiner}{subject.context or entity}"
    return resolved


def _wh_word(text: str) -> str:
    match = re.match(rf"^({_WH})\b", text, re.IGNORECASE)
    return match.group(1).casefold() if match else ""


def _terms_overlap(first: str, second: str) -> float:
    a = set(content_terms(first, drop=QUESTION_FILLER))
    b = set(content_terms(second, drop=QUESTION_FILLER))
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def decompose(objective: str, *, limit: int = 6) -> Decomposition:
    """Break ``objective`` into at most ``limit`` sub-questions (at least one)."""
    parts = split_parts(objective) or [_clean(objective)]
    subject = find_subject(parts[0])
    questions: list[SubQuestion] = []
    topics: list[str] = []
    for index, raw_part in enumerate(parts):
        part = _resolve_references(raw_part, subject, parts[0]) if index else raw_part
        comparison = find_comparison(raw_part if index else part, subject=subject.measure)
        if comparison is not None:
            questions.extend(_comparison_questions(comparison))
            topics.extend(comparison.items + comparison.facets)
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
    unique: list[SubQuestion] = []
    for question in questions:
        if all(_terms_overlap(question.text, kept.text) < 1.0 for kept in unique):
            unique.append(question)
    return Decomposition(
        questions=unique[:limit],
        subject=subject.entity,
        topics=list(dict.fromkeys(topic for topic in topics if topic)),
        geographies=find_geographies(objective),
        timeframe=find_timeframe(objective),
    )
