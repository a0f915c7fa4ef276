"""The plan scope a question's wording states: its time frame and its places.

Used by :mod:`research.llm.decompose`. A question about software names things the same way it
names places ("in Zig", "in Ferrite 3.11", "in MegaORM"), so a capitalised name after "in" is
a place only when nothing about it says it is a technical name: see :func:`is_technical_name`.
"""

import re

from research.engine.text import fold, word_set

_YEAR = re.compile(r"\b(1[89]\d\d|20\d\d)\b")
_MONTHS = word_set(
    "january february march april may june july august september october november december"
)
_LIST_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|,\s*|\s+and\s+|\s+or\s+|\s*&\s*|\s*/\s*)")
# A name with a shape no place name has: an inner capital after a lower-case letter (iPadOS,
# JavaScript) or capitals running into lower case (MegaORMs, XMLHttp), a digit (v18, Log4j),
# or a dot, underscore, plus or hash joining letters (Brisk.js, read_file, C++, C#).
_TECHNICAL_SHAPE = re.compile(
    r"[a-z][A-Z]|[A-Z]{2}[a-z]|[A-Za-z][0-9]|[A-Za-z][._+#][A-Za-z+#]|[+#]$"
)
# A version or edition after a name: "Ferrite 3.11", "Quill 2.3", "Brisk v18", "Tarn 2021".
_VERSION = re.compile(r"^\s*v?\d+(?:\.\d+)*\b")
_PLACE_PHRASE = re.compile(
    r"\b(?:in|across|within|throughout)\s+(?:the\s+)?"
    r"((?:[A-Z][\w.'+#-]*)(?:\s+[A-Z][\w.'+#-]*)*(?:\s*(?:,|and|or|&)\s*(?:the\s+)?"
    r"[A-Z][\w.'+#-]*(?:\s+[A-Z][\w.'+#-]*)*)*)"
)


def is_technical_name(name: str, following: str = "") -> bool:
    """Whether ``name`` (followed in the question by ``following``) names a product, a
    program or a version rather than a place: a technical shape, a version number after it
    ("Ferrite 3.11"), or a lower-case noun it modifies ("The Tarn Programming Guide book",
    "the Quill docs") — a place is rarely a modifier in a question."""
    if any(_TECHNICAL_SHAPE.search(word) for word in name.split()):
        return True
    if _VERSION.match(following):
        return True
    modified = re.match(r"^\s+([a-z]+)\b", following)
    return bool(modified) and fold(modified.group(1)) not in _CLAUSE_WORDS


# Words that may follow a place without the place modifying them ("in France and…", "in the UK
# since 2019", "in Paris last year"): conjunctions, prepositions, and time words.
_CLAUSE_WORDS = word_set(
    """and or but nor yet so if unless when while whereas because since until before after during
    from to for of on in at by with without about over under between than as compared versus vs
    last this next each every per today now then ever still already"""
)


def find_timeframe(text: str) -> tuple[str | None, str | None] | None:
    """The period a question names: "since 2019" → (2019, None), "2015–2020" → (2015, 2020).

    A four-digit number right after a capitalised name ("Tarn 2021", "Windows 2000") is an
    edition or a version, not a year of the question."""
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
    years = sorted(
        {match.group(1) for match in _YEAR.finditer(text) if not _after_name(text, match.start())}
    )
    if years:
        return (years[0], years[-1])
    return None


def _after_name(text: str, start: int) -> bool:
    previous = re.search(r"([A-Za-z][\w.+#-]*)\s+$", text[:start])
    if not previous:
        return False
    word = previous.group(1)
    return word[:1].isupper() and fold(word) not in _MONTHS | _CLAUSE_WORDS


def find_geographies(text: str) -> list[str]:
    """Capitalised places after "in"/"across": "in the UK" → ["UK"], "in France and Germany" →
    ["France", "Germany"]. Months, years and technical names (:func:`is_technical_name`) are
    not places."""
    places: list[str] = []
    for match in _PLACE_PHRASE.finditer(text):
        following = text[match.end(1) :]
        items = [item.strip() for item in _LIST_SPLIT.split(match.group(1))]
        if any(is_technical_name(item, following if item == items[-1] else "") for item in items):
            continue  # one technical name makes the whole list technical ("in Git or Mercurial")
        for item in items:
            if item and fold(item) not in _MONTHS and not item.isdigit() and item not in places:
                places.append(item)
    return places
