"""The plan scope a question's wording states: its time frame and its places.

Used by :mod:`research.llm.decompose`. A question about software names things the same way it
names places ("in Zig", "in Ferrite 3.11", "in MegaORM", "in Paris"), and without a gazetteer
the wording is all the evidence there is. So a capitalised name after "in" is weighed:

* it is a technical name when its own wording says so (:func:`is_technical_name`): a code-like
  shape, a version after it, a software word it modifies or contains, or the same name
  elsewhere in the question before a software word or a version ("Which Zircon version…");
* it is a place when its wording says so (:func:`_place_evidence`): a place word in it or
  around it ("Lake Orla", "the city of Varno", "Estria's north");
* otherwise it is a place unless the question is about software (:func:`software_question`:
  code-like tokens or software vocabulary). In doubt the geography stays empty, which only
  means "no place restriction", rather than holding a program's name.
"""

import re

from research.engine.text import fold, word_set

# Four-digit years a question may name: from the nineteenth century to the end of this one.
_YEAR = re.compile(r"(?<![\w.#])(1[89]\d\d|20\d\d|2100)(?![\w]|\.\d)")
_DECADE = re.compile(r"\b(?:the\s+)?(1[89]\d|20\d)0s\b")
_MONTHS = word_set(
    "january february march april may june july august september october november december"
)
_LIST_SPLIT = re.compile(r"\s*(?:,\s*(?:and|or)\s+|,\s*|\s+and\s+|\s+or\s+|\s*&\s*|\s*/\s*)")
# A name with a shape no place name has: an inner capital after a lower-case letter (iPadOS,
# JavaScript) or capitals running into lower case (MegaORMs, XMLHttp), a digit (v18, Log4j),
# or a dot, underscore, plus or hash joining letters (Brisk.js, read_file, C++, C#). Surname
# prefixes ("McAllen", "MacArthur") and dotted initials ("U.S.") are the shapes of places.
_TECHNICAL_SHAPE = re.compile(
    r"[a-z][A-Z]|[A-Z]{2}[a-z]|[A-Za-z][0-9]|[A-Za-z][._+#][A-Za-z+#]|[+#]$"
)
_PLACE_SHAPE = re.compile(r"^(?:Ma?c[A-Z][a-z]+|(?:[A-Z]\.)+)$")
# A version or edition after a name: "Ferrite 3.11", "Quill 2.3", "Brisk v18", "Tarn 2021".
_VERSION = re.compile(r"^\s*v?\d+(?:\.\d+)*\b")
# Tokens only code has, anywhere in a question: a call "fetch()", a path "core::io", a type
# parameter "Box<V>", an index "v[2]", an option "--force", a snake_case or CONSTANT_CASE name,
# a dotted identifier "Pool.take" or ".cache", an inner capital after two lower-case letters
# ("takeFast", "TaskQueue" — not "PhD" or "McDonald"), capitals running into lower case
# other than a plural ("XMLite", not "CEOs"), and a dotted version after a name or a "v18".
_CODE_TOKEN = re.compile(
    r"\w\([^()]*\)|::|\w<[\w ,<>]*>|\w\[[^\]]*\]|(?:^|\s)--?[a-z][\w-]*|[a-z0-9]_[a-z0-9]"
    r"|\b[A-Z]+_[A-Z]+\b|\b[A-Za-z]\w+\.[a-z]\w*|(?:^|\s)\.[a-z]\w+|[a-z]{2}[A-Z]"
    r"|[A-Z]{2}(?:[a-rt-z]|s[a-z])|[A-Z][\w.+#-]*\s+v?\d+\.\d+|\bv\d+\b"
)
# Words that in a question almost only have their software sense: one makes the question a
# software question.
_SOFTWARE_WORDS = word_set(
    """api apis sdk cli compiler compile compiles compiled compiling runtime syntax crate crates
    repository repositories repo repos commit commits rebase config configuration configure
    plugin plugins framework frameworks debug debugger deprecated codebase programming cookie
    cookies async await stdout stderr localhost regex middleware namespace endpoint endpoints
    clone docs documentation version versions module modules struct enum pointer orm thread
    threads"""
)
# Words with a software sense among others ("stimulus package", "national flag", "tax code"):
# two of them, or one with a software word, make the question a software question.
_SOFTWARE_HINTS = word_set(
    """release releases function functions library libraries command commands flag flags
    package packages option options setting settings default defaults error errors warning
    warnings exception exceptions file files server servers client clients query queries
    table tables database databases session sessions request requests string
    strings array arrays buffer buffers variable variables script scripts cache branch
    branches merge push view views template templates test tests memory process processes
    code install installed installing dependency dependencies import imports terminal shell
    developer developers browser app apps build builds deploy deployment container binary
    kernel tutorial language languages"""
)
# Place words inside a name ("Lake Orla", "Varno County", "United States") or before "of"
# ("the city of Varno"), and the place nouns a possessive opens ("Estria's north").
_PLACE_WORDS = word_set(
    """lake lakes river mount mountains city town village county province state states region
    district borough island islands bay valley coast sea ocean gulf peninsula republic kingdom
    emirates union municipality prefecture canton territory capital"""
)
_PLACE_NOUNS = word_set(
    """north south east west northern southern eastern western capital cities towns villages
    regions provinces states countryside coast coastline border borders population economy
    government people residents citizens"""
)
_PLACE_OF = re.compile(
    r"\b(?:city|town|village|county|province|state|region|district|island|republic|kingdom|"
    r"municipality|capital|population|economy|government|mayor|residents|citizens)\s+of\s+"
    r"(?:the\s+)?((?:[A-Z][\w.'-]*)(?:\s+[A-Z][\w.'-]*)*)"
)
_PLACE_PHRASE = re.compile(
    r"\b(?:[Ii]n|across|within|throughout)\s+(?P<the>the\s+)?"
    r"(?P<name>(?:[A-Z][\w.'+#-]*)(?:\s+[A-Z][\w.'+#-]*)*(?:\s*(?:,|and|or|&)\s*(?:the\s+)?"
    r"[A-Z][\w.'+#-]*(?:\s+[A-Z][\w.'+#-]*)*)*)"
)
# Nouns a number labels rather than dates: "error 2003", "port 2000", "release 2021".
_NUMBER_LABELS = word_set(
    """version release edition error code port build issue number no page section chapter
    article route line model item patch revision"""
)


# "What is a blueprint in Quill?", "What exactly is an extent in Ferrite?": asking what a term
# means (an indefinite noun phrase after the copula), where the name after "in" is the domain
# the term belongs to (a program, a field, a legal system) as often as a place. As for software,
# only the wording's own place marks count then; "What is the rate in France?" asks about a
# value in a place and keeps it.
_TERM_DEFINITION = re.compile(r"^what\s+(?:\w+ly\s+)?(?:is|are)\s+an?\s", re.IGNORECASE)


def _words(text: str) -> list[str]:
    return [fold(word) for word in re.findall(r"[A-Za-z][A-Za-z'-]*", text)]


def software_question(text: str) -> bool:
    """Whether ``text`` asks about software: a code-like token, a word that almost only has
    its software sense, or two words with a software sense among others."""
    if _CODE_TOKEN.search(text):
        return True
    words = set(_words(text))
    return bool(words & _SOFTWARE_WORDS) or len(words & _SOFTWARE_HINTS) >= 2


def _software_word(word: str) -> bool:
    return fold(word) in _SOFTWARE_WORDS | _SOFTWARE_HINTS


def is_technical_name(name: str, following: str = "", question: str = "") -> bool:
    """Whether ``name`` (followed in the question by ``following``) names a product, a
    program or a version rather than a place, by its own wording: a technical shape, a version
    number after it ("Ferrite 3.11"), a software word it modifies ("the Quill docs") or holds
    ("The Tarn Programming Language"), or — in ``question`` — the same name before a software
    word or a version elsewhere ("Which Zircon version…, and … in Zircon?")."""
    words = name.split()
    if any(_TECHNICAL_SHAPE.search(word) and not _PLACE_SHAPE.match(word) for word in words):
        return True
    if _VERSION.match(following) or any(_software_word(word) for word in words):
        return True
    modified = re.match(r"^\s+([a-z]+)\b", following)
    if modified and _software_word(modified.group(1)):
        return True
    elsewhere = re.finditer(rf"\b{re.escape(name)}\s+(v?\d[\w.]*|[a-z]+)\b", question)
    return any(
        _VERSION.match(match.group(1)) or _software_word(match.group(1)) for match in elsewhere
    )


def _place_evidence(name: str, following: str) -> bool:
    """Whether the wording marks ``name`` as a place: a place word in it ("Lake Orla",
    "United States") or a possessive opening a place noun ("Estria's north")."""
    if any(fold(word) in _PLACE_WORDS for word in name.split()[:1] + name.split()[-1:]):
        return True
    noun = re.match(r"^\s+(\w+)", following)
    return name.endswith("'s") and bool(noun) and fold(noun.group(1)) in _PLACE_NOUNS


def find_timeframe(text: str) -> tuple[str | None, str | None] | None:
    """The period a question names: "since 2019" → (2019, None), "2015–2020" → (2015, 2020),
    "the 1990s" → (1990, 1999).

    A number right after a capitalised name ("Tarn 2021", "Windows 2000"), after a noun it
    labels ("error 2003", "version 2020") or inside a version ("2020.1", "v2021") is not a
    year of the question."""
    span = re.search(r"\b(?:between|from)\s+(\d{4})\s+(?:and|to|until|-|–)\s+(\d{4})\b", text)
    span = span or re.search(r"\b(\d{4})\s*[-–]\s*(\d{4})\b", text)
    if span and _is_year(text, span.start(1)) and _is_year(text, span.start(2)):
        return (span.group(1), span.group(2))
    since = re.search(r"\b(?:since|after|from)\s+(\d{4})\b", text, re.IGNORECASE)
    if since and _is_year(text, since.start(1)):
        return (since.group(1), None)
    before = re.search(r"\b(?:before|until|up to)\s+(\d{4})\b", text, re.IGNORECASE)
    if before and _is_year(text, before.start(1)):
        return (None, before.group(1))
    years = {match.group(1) for match in _YEAR.finditer(text) if _is_year(text, match.start())}
    for decade in _DECADE.finditer(text):
        years |= {f"{decade.group(1)}0", f"{decade.group(1)}9"}
    if years:
        return (min(years), max(years))
    return None


def _is_year(text: str, start: int) -> bool:
    if not _YEAR.match(text, start):
        return False
    previous = re.search(r"([A-Za-z][\w.+#-]*)\s+$", text[:start])
    if not previous:
        return True
    word = previous.group(1)
    if fold(word) in _NUMBER_LABELS:
        return False
    return not (word[:1].isupper() and fold(word) not in _MONTHS | _CLAUSE_WORDS)


# Words that may follow a place without the place modifying them ("in France and…", "in the UK
# since 2019", "in Paris last year"): conjunctions, prepositions, and time words.
_CLAUSE_WORDS = word_set(
    """and or but nor yet so if unless when while whereas because since until before after during
    from to for of on in at by with without about over under between than as compared versus vs
    last this next each every per today now then ever still already"""
)


def _is_place(item: str, following: str, text: str, software: bool, article: bool) -> bool:
    name = item.removesuffix("'s")
    if not name or fold(name) in _MONTHS or name.isdigit():
        return False
    if name.isupper() and not article:
        # A place written in capitals takes "the" ("in the UK", "across the EU"); a technical
        # term does not ("in RAM", "in JSON").
        return False
    if is_technical_name(name, following, text):
        return False
    return _place_evidence(item, following) or not software


def find_geographies(text: str) -> list[str]:
    """Places the question names: capitalised names after "in"/"across" ("in the UK" → ["UK"],
    "in France and Germany" → ["France", "Germany"]) and after a place word ("the city of
    Varno"). Months, years and technical names are not places, and in a question about software
    a name counts only when the wording marks it as a place (see the module docstring)."""
    software = software_question(text) or bool(_TERM_DEFINITION.match(text))
    places: list[str] = []
    for match in _PLACE_PHRASE.finditer(text):
        following = text[match.end("name") :]
        items = [item.strip() for item in _LIST_SPLIT.split(match.group("name"))]
        if any(is_technical_name(item, following if item == items[-1] else "", text)
               for item in items if item):
            continue  # one technical name makes the whole list technical ("in Git or Mercurial")
        for item in items:
            item_following = following if item == items[-1] else ""
            article = bool(match.group("the")) or bool(re.match(r"^the\s", item, re.I))
            item = re.sub(r"^the\s+", "", item, flags=re.IGNORECASE)
            if item and _is_place(item, item_following, text, software, article):
                places.append(item.removesuffix("'s"))
    for match in _PLACE_OF.finditer(text):
        if not is_technical_name(match.group(1), text[match.end(1) :], text):
            places.append(match.group(1).removesuffix("'s"))
    return list(dict.fromkeys(places))
