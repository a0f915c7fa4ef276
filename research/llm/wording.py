"""Word tables and phrase helpers of the no-model planner (:mod:`research.llm.decompose`,
:mod:`research.llm.comparison`).

``VERBS`` are verbs that end the subject of a question ("When did the extension *open*"), so a
question's subject is the words before them: the verbs a question about an event or an amount
asks with — of change, possession, production and capacity ("How many lines does the shell
*keep*", "… does the pool *hold*"); ``COMPARATIVES`` map irregular and common
comparatives to the adjective a per-side question asks with ("safer" → "How safe is X").
"""

import re
from dataclasses import dataclass

from research.engine.text import word_set

WH = r"(?:what|why|how|when|where|who|whom|whose|which|whether)"
AUX = r"(?:is|are|was|were|do|does|did|can|could|should|would|will|has|have|had|might|may)"
FACET_PREPOSITION = r"(?:on|in terms of|regarding|with respect to|when it comes to|for|across)"
# Instructions that open a request ("Explain …", "Compare …"): a question of their own.
IMPERATIVE = (
    r"(?:explain|describe|compare|summari[sz]e|list|identify|assess|evaluate|estimate|find|"
    r"analy[sz]e|outline|discuss|determine|investigate|review|examine|look\s+(?:at|into)|"
    r"focus\s+on|include|cover|add|check)"
)
# "…, and the other way round?", "…, or vice versa?": a connective asking the same question with
# the two sides swapped. It names no topic, so it is no search word either (a search for
# "… way round" read a page about a protocol's round trips).
CONVERSE = re.compile(
    r"\s*,?\s*(?:(?:and|or)\s+)?(?:the\s+other\s+way\s+a?round|vice\s+versa|conversely)"
    r"(?=\s*[?.!]*\s*$)",
    re.IGNORECASE,
)
LIST_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|,\s*|\s+and\s+|\s+or\s+|\s*&\s*|\s*/\s*)")


@dataclass(frozen=True)
class SubQuestion:
    """A sub-question of the plan with the reason it exists."""

    text: str
    rationale: str
    priority: str = "required"
    requires_primary: bool = False


def clip(text: str, limit: int) -> str:
    """``text`` on one line, cut at a word to at most ``limit`` characters (with an ellipsis)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rsplit(" ", 1)[0] + "…"


def clean(text: str) -> str:
    """``text`` on one line, curly apostrophes straightened, end punctuation dropped."""
    return " ".join(text.replace("\u2019", "'").split()).strip(" ,.;:!?")


# A question opening with code ("pool.drain() or …", "quill.g or …", "setMaxTasks …") keeps
# its case: a capital would change the identifier.
_CODE_START = re.compile(r"^(?:\S*[(_=\[]|[a-z]+[A-Z]|[a-z][\w-]*\.[a-z])")


def sentence_case(text: str) -> str:
    """``text`` with a capital first letter, unless it opens with code."""
    return text if _CODE_START.match(text) else f"{text[:1].upper()}{text[1:]}"


def as_question(text: str) -> str:
    """``text`` with a capital first letter (unless it opens with code) and a question mark."""
    text = clean(text)
    return f"{sentence_case(text)}?" if text else text


def natural_case(item: str) -> str:
    """ "Heat pumps" at the start of a question becomes "heat pumps"; "Zig", "UK" and
    "Lisbon Tram" keep their capitals."""
    words = item.split()
    if len(words) >= 2 and words[0][:1].isupper() and words[0][1:].islower() and words[1].islower():
        return words[0].lower() + item[len(words[0]) :]
    return item


def strip_lead(text: str) -> str:
    """Drop a leading wh-word, auxiliary and article: "how do heat pumps" -> "heat pumps"."""
    text = clean(text)
    text = re.sub(rf"^(?:{WH}\s+)?(?:{AUX}\s+)?", "", text, flags=re.IGNORECASE)
    text = re.sub(r"^(?:the\s+)?differences?\s+between\s+", "", text, flags=re.IGNORECASE)
    return re.sub(r"^(?:the|a|an)\s+", "", text, flags=re.IGNORECASE).strip()


def split_list(text: str) -> list[str]:
    """The items of "a, b and c"."""
    items = [clean(item) for item in LIST_SPLIT.split(text)]
    return [item for item in items if item]


def join_items(items: list[str]) -> str:
    """ "a, b and c" from the items."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


VERBS = word_set(
    """have has had get gets got record records recorded see sees saw attract attracts receive
    receives received pay pays paid make makes made cost costs use uses used serve serves carry
    carries employ employs produce produces sell sells sold reach reaches reached need needs
    require requires take takes took generate generates change changes changed apply applies start
    starts end ends rise rises rose fall falls fell increase increases decrease decreases open
    opens close closes begin begins last lasts launch launches finish finishes peak peaks grow
    grows happen happens occur occurs find finds show shows say says work works keep keeps kept
    hold holds held store stores stored contain contains allow allows accept accepts support
    supports handle handles"""
)
COMPARATIVES = {
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
