"""Comparisons in a question's wording, split into well-formed questions per side.

Used by :mod:`research.llm.decompose`. A comparison names two sides and perhaps what they are
compared on (facets: "on cost and noise"), a purpose ("for small websites", "to update a
branch"), a condition ("when one task fails") or a scope ("in the UK since 2019"). Each side
gets a question of its own that reads as a question — a capital, a verb, a question mark —
with the purpose, condition and scope it shares with the other side, and the comparison
itself gets one more: "How does X differ from Y when one task fails?" becomes "How does X
behave when one task fails?", "How does Y behave when one task fails?" and the question as
asked.
"""

import re
from dataclasses import dataclass

from research.llm.wording import AUX as _AUX
from research.llm.wording import COMPARATIVES as _COMPARATIVES
from research.llm.wording import CONVERSE as _CONVERSE
from research.llm.wording import FACET_PREPOSITION as _FACET_PREPOSITION
from research.llm.wording import WH as _WH
from research.llm.wording import (
    SubQuestion,
    as_question,
    clean,
    join_items,
    natural_case,
    split_list,
)

_SCOPE_SUFFIX = re.compile(
    r"\s+(?:(?:in|across|within|throughout)\s+(?:the\s+)?[A-Z][\w.'-]*(?:\s+(?:and|or|&)?\s*"
    r"(?:the\s+)?[A-Z][\w.'-]*)*(?:\s+(?:since|from|between|before|after|in|during)\s+.*)?"
    r"|(?:since|from|between|before|after|during|in)\s+(?:the\s+)?(?:\d{4}|\w+\s+\d{4}).*)$"
)
_PREPOSITION = re.compile(r"^(?P<head>.+?\s(?:of|in|for|at|on|across|among)\s+)(?P<tail>.+)$")
# A condition both sides share, after the second side: "…zircon replay when the branch is shared".
_CONDITION = re.compile(
    r"\s+(?P<tail>(?:when|whenever|if|unless|while|once|after|before|during)\s.+)$", re.I
)
# A purpose both sides share: "…MegaORM for small websites", "…replay to update a branch".
_PURPOSE = re.compile(r"\s+(?P<tail>(?:for|to)\s.+)$", re.I)
_ADJECTIVE = r"(?:more|less|most|least)\s+\w+|\w+er|better|worse"
# "Should I use X or Y": the verbs of a choice and the gerund its per-side question uses.
_CHOICE_VERBS = {
    "use": "using",
    "choose": "choosing",
    "pick": "picking",
    "prefer": "using",
    "adopt": "adopting",
    "learn": "learning",
    "buy": "buying",
    "install": "installing",
}
_CHOICE = "|".join(_CHOICE_VERBS)
# "each", "each one", "either": a word standing for every side in turn.
_EACH = re.compile(r"\b(?:each|either)(?:\s+one)?\b(?!\s+(?:of|other)\b)", re.IGNORECASE)
_VERSUS = re.compile(r"\s+(?:vs\.?|versus)\s+", re.IGNORECASE)
_DASH_BEFORE_QUESTION = re.compile(rf"\s+[-\u2013\u2014]\s+(?=(?:{_WH}|{_AUX})\b)", re.I)
# "what's the difference", "what is the difference": a question naming only the difference.
_ASKS_DIFFERENCE_ONLY = re.compile(
    r"^(?:what(?:'s|\s+is|\s+are)\s+the\s+differences?|how\s+do\s+they\s+differ)\s*\??$",
    re.IGNORECASE,
)


def _each_of(asked: str) -> str:
    """``asked`` when it asks its question of each side in turn ("…: which commits does
    each one list?"), else ``""``."""
    return asked if asked and _EACH.search(asked) else ""


@dataclass(frozen=True)
class Comparison:
    """Things compared, on optional facets, for an optional purpose, under an optional
    condition, within an optional scope.

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
    # "difference between X and Y" asks what each is and how they differ, not which is better.
    difference: bool = False
    # "…when one task fails": how each side behaves then is what the question asks.
    condition: str = ""
    # "Should I use X or Y": the gerund of the choice ("using"); the question as asked is then
    # the comparison's own question.
    choice: str = ""
    # The question as asked, when it is itself the comparison ("Should I use X or Y to…?",
    # "X vs Y: which one uses fewer queries?").
    asked: str = ""
    # "What does X do that Y doesn't?": the verb asked of each side ("do"). The question asked
    # of each side covers "and the other way round" too (the swapped question has the same
    # terms and searches).
    action: str = ""
    # "X vs Y: which commits does each one list?": the question asked of each side in turn.
    each: str = ""

    @property
    def topics(self) -> list[str]:
        """The sides without their articles, and the facets: the plan's included topics."""
        return [_bare(item) for item in self.items] + self.facets


def _trailing_scope(text: str) -> tuple[str, str]:
    match = _SCOPE_SUFFIX.search(text)
    if not match:
        return text, ""
    return text[: match.start()].strip(), match.group(0).strip()


def _shared_tail(a: str, b: str) -> tuple[str, str]:
    """ "Model A vs Model B battery life": when the first side is only a name, lower-case words
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


def _split_tail(a: str, b: str) -> tuple[str, str, str]:
    """The second side, and the condition or purpose after it that both sides share:
    ("zircon replay", "when the branch is shared", "") or ("MegaORM", "", "for small
    websites"). A "for"/"to" the first side also has belongs to the second side alone."""
    condition = _CONDITION.search(b)
    if condition:
        return b[: condition.start()], condition.group("tail"), ""
    purpose = _PURPOSE.search(b)
    if purpose:
        preposition = purpose.group("tail").split()[0].casefold()
        if not re.search(rf"\b{preposition}\b", a, re.IGNORECASE):
            return b[: purpose.start()], "", purpose.group("tail")
    return b, "", ""


_SIDE_PREPOSITION = r"(?:with|by|via|using|through|from|in|on|over|under)"


def _share_head(a: str, b: str) -> str:
    """ "reading a file with streams or with readFile": a second side that is only the
    preposition phrase of the first shares the first side's head ("reading a file with
    readFile")."""
    lead = re.match(rf"^(?P<prep>{_SIDE_PREPOSITION})\s", b, re.IGNORECASE)
    if not lead:
        return b
    at = re.search(rf"\s{re.escape(lead.group('prep'))}\s", a, re.IGNORECASE)
    return f"{a[: at.start()]} {b}" if at else b


def _indefinite(text: str) -> str:
    """The side without "the" but with "a"/"an": "a Roth IRA" reads as a question's subject,
    "the" adds nothing the other templates do not add themselves."""
    return re.sub(r"^the\s+", "", clean(text), flags=re.IGNORECASE)


def _side(text: str) -> str:
    """The first side without the question's lead: "how do heat pumps" → "heat pumps", "the
    difference between a Roth IRA" → "a Roth IRA"."""
    text = re.sub(rf"^(?:{_WH}\s+)?(?:{_AUX}\s+)?", "", clean(text), flags=re.IGNORECASE)
    text = re.sub(r"^(?:the\s+)?differences?\s+between\s+", "", text, flags=re.IGNORECASE)
    return _indefinite(text)


def _bare(item: str) -> str:
    return re.sub(r"^(?:the|a|an)\s+", "", item, flags=re.IGNORECASE)


_NEGATED_AUX = (
    r"(?:doesn't|does\s+not|don't|do\s+not|can't|cannot|can\s+not|didn't|did\s+not|won't|"
    r"will\s+not)"
)
_PATTERNS = (
    # "What does X do that Y doesn't": what one side has and the other lacks (a contrast of two
    # things, asked of one side; "and the other way round" asks it of the other too).
    (
        "contrast",
        r"^what\s+(?P<aux>does|do|can|did|will)\s+(?P<a>.+?)\s+(?P<verb>do|offer|provide|give|"
        rf"support|have|handle|cover|allow)\s+that\s+(?P<b>.+?)\s+(?P<neg>{_NEGATED_AUX})$",
    ),
    (
        "adjective",
        rf"^(?:which|what)\s+(?:one\s+)?(?:is|are|was|were)\s+(?P<adj>{_ADJECTIVE})"
        r"(?:\s+(?P<pre>(?:for|to|when|if|in)\s+[^,:]+?))?\s*[,:]?\s+(?P<a>.+?)\s+or\s+(?P<b>.+?)$",
    ),
    # "Is X safer than Y": a comparative with "than" compares two things on that quality.
    ("adjective", rf"^{_AUX}\s+(?P<a>.+?)\s+(?P<adj>{_ADJECTIVE})\s+than\s+(?P<b>.+?)$"),
    (
        "adjective",
        rf"^(?:is|are|was|were)\s+(?P<a>.+?)\s+or\s+(?P<b>.+?)\s+(?P<adj>{_ADJECTIVE})"
        r"(?P<rest>\s+(?:for|to|when|if|in|on)\s.+)?$",
    ),
    (
        "compare",
        rf"^(?:{_WH}\s+(?:{_AUX}\s+)?)?(?P<a>.+?)\s+(?:compare|compares|stack up|measure up)\s+"
        r"(?:with|to|against)\s+(?P<b>.+?){facets}$",
    ),
    (
        "compare",
        r"^(?:compare|comparing|contrast)\s+(?P<a>.+?)\s+(?:with|to|and|against|versus|vs\.?)\s+"
        r"(?P<b>.+?){facets}$",
    ),
    (
        "difference",
        r"^(?:how|in\s+what\s+ways?|in\s+which\s+ways?)\s+(?:does|do|did)\s+(?P<a>.+?)\s+differ\s+"
        r"from\s+(?P<b>.+?)$",
    ),
    (
        "difference",
        r"^(?:how|in\s+what\s+ways?)\s+(?:do|did)\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+differ"
        r"(?P<rest>\s+.+)?$",
    ),
    ("difference", r"^(?:.*?\bdifferences?\s+between\s+)(?P<a>.+?)\s+and\s+(?P<b>.+?){facets}$"),
    (
        "choice",
        rf"^(?:should|shall|do|would|could|can)\s+(?:i|we|you)\s+(?P<verb>{_CHOICE})\s+"
        r"(?P<a>.+?)\s+or\s+(?P<b>.+?)$",
    ),
    (
        "choice",
        rf"^which\s+(?:one\s+)?should\s+(?:i|we)\s+(?P<verb>{_CHOICE})\s*[,:]?\s+(?P<a>.+?)\s+or"
        r"\s+(?P<b>.+?)$",
    ),
    (
        # "X or Y: which should I use in Z?": the alternatives named first, then the choice.
        "choice",
        r"^(?P<a>[^:]+?)\s+or\s+(?P<b>[^:]+?)\s*:\s*which\s+(?:one\s+)?(?:should|shall)\s+"
        rf"(?:i|we)\s+(?P<verb>{_CHOICE})(?P<rest>\s+.+)?$",
    ),
    ("versus", r"^(?P<a>.+?)\s+(?:vs\.?|versus)\s+(?P<b>.+?){facets}$"),
)


def _rest_parts(rest: str) -> tuple[str, str, str, str]:
    """What follows "…and Y differ" or "…or Y faster": (facets, purpose, condition, scope)."""
    rest = clean(rest)
    if not rest:
        return "", "", "", ""
    if re.match(r"^(?:when|whenever|if|unless|while|once)\b", rest, re.IGNORECASE):
        return "", "", rest, ""
    if re.match(r"^(?:for|to)\b", rest, re.IGNORECASE):
        return "", rest, "", ""
    facet = re.match(r"^(?:in\s+terms\s+of|on|in)\s+(?P<facet>[a-z][\w\s,-]*)$", rest)
    if facet and not re.match(r"^(?:the|a|an)\b", facet.group("facet")):
        return facet.group("facet"), "", "", ""
    return "", "", "", rest


def find_comparison(part: str, *, subject: str = "") -> Comparison | None:
    """Recognise a comparison in one question part, or return ``None``."""
    text = clean(part)
    # "…, and vice versa": each side gets its own question anyway.
    text = clean(_CONVERSE.sub("", text))
    # "X vs Y - which is faster?": a spaced dash before the question asked of both sides
    # separates it as a colon does.
    text = _DASH_BEFORE_QUESTION.sub(": ", text)
    facet_tail = rf"(?:\s+(?P<prep>{_FACET_PREPOSITION})\s+(?P<facets>.+))?"
    for kind, pattern in _PATTERNS:
        match = re.match(pattern.replace("{facets}", facet_tail), text, re.IGNORECASE)
        if not match:
            continue
        groups = match.groupdict()
        a = _side(re.sub(r"^.*:\s*", "", groups["a"]))
        b = clean(groups["b"])
        facets_text = groups.get("facets") or ""
        asked = ""
        if ":" in b:
            b, facets_text = (piece.strip() for piece in b.split(":", 1))
            if re.match(rf"^{_WH}\b", facets_text, re.IGNORECASE):
                # "X vs Y: which one uses fewer queries?" asks its own question of both.
                asked, facets_text = facets_text, ""
            if _ASKS_DIFFERENCE_ONLY.match(asked):
                # "X vs Y: what's the difference?" asks how they differ, no choice between them.
                asked, kind = "", "difference"
        more = _VERSUS.split(b) if kind in ("versus", "difference") and a else [b]
        if len(more) > 1 and not facets_text:
            # "plain BEGIN vs BEGIN IMMEDIATE vs BEGIN EXCLUSIVE": every side is one, and a
            # scope after the last ("… in Tarn") is the scope of all.
            last, scope = _trailing_scope(more[-1])
            sides = [natural_case(a), *more[:-1], last]
            return Comparison(
                items=sides,
                facets=[],
                scope=scope,
                difference=kind == "difference",
                asked=f"{asked}, {', '.join(sides[:-1])} or {sides[-1]}" if asked else "",
                each=_each_of(asked),
            )
        purpose = ""
        if facets_text and (groups.get("prep") or "").casefold() == "for":
            purpose, facets_text = f"for {facets_text}", ""
        if groups.get("pre"):
            purpose = clean(groups["pre"])
        rest_facets, rest_purpose, condition, scope = _rest_parts(groups.get("rest") or "")
        facets_text = facets_text or rest_facets
        purpose = purpose or rest_purpose
        if facets_text:
            facets_text, scope = _trailing_scope(facets_text)
        else:
            b, b_scope = _trailing_scope(b)
            scope = scope or b_scope
            if not (condition or purpose):
                b, condition, purpose = _split_tail(a, b)
            if not (condition or purpose or facets_text):
                b, facets_text = _shared_tail(a, b)
        if purpose:
            purpose, purpose_scope = _trailing_scope(purpose)
            scope = scope or purpose_scope
        if condition:
            condition, condition_scope = _trailing_scope(condition)
            scope = scope or condition_scope
        anaphoric = bool(re.fullmatch(r"(?:this|that|these|those|it|they)", a, re.IGNORECASE))
        if not anaphoric:
            b = _indefinite(b)
        if not a or not b:
            continue
        b = _share_head(a, b)
        distributed = False
        if anaphoric:
            a = subject or a
        else:
            a = natural_case(a)
            a, distributed_b = _distribute(a, b)
            distributed = distributed_b != b
        action = groups["verb"] if kind == "contrast" else ""
        each = _each_of(asked)
        if kind in ("choice", "contrast"):
            asked = text
        elif asked:
            asked = f"{asked}, {a} or {b}"
        return Comparison(
            items=[a, distributed_b if distributed else b],
            counterpart=b if distributed else "",
            facets=split_list(facets_text)[:4],
            purpose=purpose,
            scope=scope,
            adjective=(groups.get("adj") or "").casefold(),
            anaphoric=anaphoric,
            difference=kind == "difference",
            condition=condition,
            choice=_CHOICE_VERBS.get((groups.get("verb") or "").casefold(), ""),
            asked=asked,
            action=action,
            each=each,
        )
    return None


def _base_adjective(adjective: str) -> str:
    words = adjective.split()
    if words[0] in ("more", "less", "most", "least"):
        return " ".join(words[1:])
    return _COMPARATIVES.get(adjective, adjective[:-2] if len(adjective) > 5 else adjective)


def _plural(item: str) -> bool:
    """Whether ``item`` takes a plural verb: "heat pumps", "X and Y" — not "process",
    "Box" or "Pool.take()"."""
    words = item.split()
    if " and " in f" {item} ":
        return True
    if words and re.fullmatch(r"[a-z]+ing", words[0]):
        return False  # a gerund phrase is one activity: "reading many files is…"
    last = words[-1] if words else ""
    return (
        last.isalpha()
        and last.islower()
        and len(last) > 3
        and last.endswith("s")
        and not last.endswith(("ss", "us", "is"))
    )


def _side_question(comparison: Comparison, item: str, tail: str) -> str:
    facets = comparison.facets
    if comparison.each:
        return _EACH.sub(item, comparison.each, count=1)
    does = "do" if _plural(item) else "does"
    if comparison.action:
        return f"What {does} {item} {comparison.action}{tail}"
    if comparison.adjective:
        verb = "are" if _plural(item) else "is"
        return f"How {_base_adjective(comparison.adjective)} {verb} {item}{tail}"
    if comparison.choice:
        return f"What are the strengths and weaknesses of {comparison.choice} {item}{tail}"
    if comparison.condition and not facets:
        return f"How {does} {item} behave{tail}"
    if comparison.difference and not facets and not comparison.purpose:
        return f"What {'are' if _plural(item) else 'is'} {item}{tail}"
    if comparison.counterpart and not facets:
        return f"What is known about the {_bare(item)}{tail}"
    if facets:
        return f"What is known about the {join_items(facets)} of {item}{tail}"
    return f"What are the strengths and weaknesses of {item}{tail}"


def comparison_questions(comparison: Comparison) -> list[SubQuestion]:
    """One question per side and the comparison's own (see the module docstring)."""
    a, b = comparison.items[0], comparison.items[-1]
    scope = f" {comparison.scope}" if comparison.scope else ""
    purpose = f" {comparison.purpose}" if comparison.purpose else ""
    condition = f" {comparison.condition}" if comparison.condition else ""
    tail = f"{purpose}{condition}{scope}"
    facets = comparison.facets
    if comparison.anaphoric:
        return [
            SubQuestion(
                as_question(f"How does {a} compare with {b}{scope}"),
                "The comparison the question asks for.",
            )
        ]
    questions = [
        SubQuestion(
            as_question(_side_question(comparison, item, tail)),
            f"One side of the comparison: {_bare(item)}.",
        )
        for item in comparison.items
    ]
    both = "do" if _plural(a) else "does"
    if len(comparison.items) > 2:
        # More than two sides: how they all differ, or the question asked of all of them.
        final = (not comparison.each and comparison.asked) or (
            f"How do {join_items(comparison.items)} differ{tail}"
        )
        questions.append(SubQuestion(as_question(final), "The comparison the question asks for."))
    elif comparison.each:
        # The question asked of each side is above; together they ask how the sides differ.
        questions.append(
            SubQuestion(
                as_question(f"How {both} {a} differ from {b}{tail}"),
                "The comparison the question asks for.",
            )
        )
    elif comparison.asked:
        questions.append(
            SubQuestion(as_question(comparison.asked), "The comparison the question asks for.")
        )
    elif comparison.adjective:
        questions.append(
            SubQuestion(
                as_question(f"Which is {comparison.adjective}{tail}, {a} or {b}"),
                "The direct comparison the question asks for.",
            )
        )
    elif len(facets) > 1:
        for facet in facets[:3]:
            questions.append(
                SubQuestion(
                    as_question(f"How do {a} and {b} compare on {facet}{tail}"),
                    f"The comparison on {facet}.",
                )
            )
    elif comparison.difference and not facets:
        questions.append(
            SubQuestion(
                as_question(f"How {both} {a} differ from {b}{tail}"),
                "The difference the question asks for.",
            )
        )
    elif comparison.counterpart:
        on = f" on {facets[0]}" if facets else ""
        questions.append(
            SubQuestion(
                as_question(
                    f"How does the {_bare(a)} compare with {comparison.counterpart}{on}{scope}"
                ),
                "The direct comparison the question asks for.",
            )
        )
    else:
        on = f" on {facets[0]}" if facets else ""
        questions.append(
            SubQuestion(
                as_question(f"How do {a} and {b} compare{on}{tail}"),
                "The direct comparison the question asks for.",
            )
        )
    return questions
