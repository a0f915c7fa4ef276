"""Text normalisation shared by the engine, the extractive backend and the date reader of
research/sources: folding, the English month names, and terms — the one stop-word list, the
Snowball English stemmer and the tokens text is matched by."""

import functools
import re
import threading
import unicodedata
from collections.abc import Sequence
from typing import Any

import snowballstemmer


def fold(text: str) -> str:
    """``text`` in matching form: compatibility-decomposed (NFKD), accents (combining marks)
    dropped and case-folded — "Électricité" and "electricite" fold alike."""
    if text.isascii():
        # ASCII has nothing to decompose or drop; this path keeps folding a long page cheap.
        return text.casefold()
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


# English month names and their usual abbreviations, to the month's number.
MONTHS: dict[str, int] = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}


# --------------------------------------------------------------------------------------------
# Terms: the one normalisation the engine and the extractive backend match words by
# --------------------------------------------------------------------------------------------


def word_set(words: str) -> frozenset[str]:
    """The whitespace-separated words of ``words`` as a set (keeps long word lists readable)."""
    return frozenset(words.split())


# Words a search and a passage share without meaning anything: articles, prepositions,
# question words, forms of "be", "do" and "have", demonstratives and a few vague quantifiers.
# A query fingerprint folds away these and no more (guards/queries.py).
COMMON_WORDS = word_set(
    """a about all an and any are as at be been being between by did do does for from had has
    have how in into is it its many me much now of on or over per some than that the their then
    there these this those to under was were what when where which who whom whose why with"""
)

# The stop words of text matching: the common words, and pronouns, negations, modal verbs,
# connectives and words of order and degree. Matching drops them all; a search fingerprint
# keeps these, because "without subsidies", "not before 2020" or "more than" ask something
# else than the same query without them.
STOP_WORDS = COMMON_WORDS | word_set(
    """above after again against also am aren't because before below both but can cannot could
    doing don't down during each either etc few further having he her here hers herself him
    himself his however i if isn't it's itself just let more most must my myself neither no nor
    not off once only other ought our ours ourselves out own same shall she should so such
    that's theirs them themselves there's they through thus too until up upon us very via wasn't
    we weren't what's whether while will within without would yet you your yours yourself
    yourselves"""
) | word_set(
    # The rest of the closed class of connectives and prepositions whose fellows are above
    # ("until", "before", "because", "if", "while"): "since" beside "until", "unless" beside
    # "if", "although" beside "because".
    "since unless although though whereas despite"
)

# Words our own question templates add; they carry no meaning a source would share.
QUESTION_FILLER = word_set(
    """compare compared comparison comparing differ difference differences versus vs key main
    characteristic characteristics evidence say says known describe explain overview aspect
    aspects respect respects term terms strength strengths weakness weaknesses well suited
    regarding concerning important notable number amount type types kind kinds sort sorts"""
)

# The template words that are nouns or adjectives: besides filling a template ("the key
# difference", "the main reason", "the number of") they can stand inside a noun compound of the
# subject ("foreign key constraints", "column type affinity"), where they are part of its name.
# The verbs, prepositions and adverbs of the templates ("compare", "versus", "say", "well",
# "regarding") head no compound and are always filler.
_COMPOUND_FILLER = word_set(
    """key main characteristic characteristics evidence overview aspect aspects term terms
    strength strengths weakness weaknesses important notable number amount type types kind
    kinds sort sorts difference differences comparison"""
)
# What may stand between two words of one noun phrase: spaces, or a hyphen.
_PHRASE_GAP = re.compile(r"[ \t]+|-")
_PLAIN_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?")


def _modifies(word: str) -> bool:
    """Whether folded ``word`` can be a member of a noun compound: a content word, neither a
    possessive (a determiner's place: "Python's main features") nor a template word."""
    return (
        word not in STOP_WORDS
        and word not in QUESTION_FILLER
        and not word.endswith(("'s", "’s"))
        and len(word) > 1
    )


def question_filler(question: str) -> frozenset[str]:
    """The template words ``question`` uses as filler: ``QUESTION_FILLER`` without those it
    has only inside a noun compound. A template word stands inside a compound when a content
    word precedes it and another follows it in the same phrase ("foreign key constraints":
    modifier, word, head — the noun-phrase pattern of Justeson & Katz 1995); after a
    determiner, a possessive or a question word ("the key difference", "Python's main
    features", "what kind of") it is the template's. A word used both ways stays filler."""
    words = list(_PLAIN_WORD.finditer(question))
    inside: set[str] = set()
    outside: set[str] = set()
    for index, match in enumerate(words):
        word = fold(match.group(0))
        if word not in QUESTION_FILLER:
            continue
        compound = word in _COMPOUND_FILLER and 0 < index < len(words) - 1
        if compound:
            before, after = words[index - 1], words[index + 1]
            compound = (
                bool(_PHRASE_GAP.fullmatch(question[before.end() : match.start()]))
                and bool(_PHRASE_GAP.fullmatch(question[match.end() : after.start()]))
                and _modifies(fold(before.group(0)))
                and _modifies(fold(after.group(0)))
            )
        (inside if compound else outside).add(word)
    return QUESTION_FILLER - (inside - outside)


_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+(?:'[^\W\d_]+)?")
# The Snowball English stemmer (Porter2), from the Snowball project's own package
# (docs/dependencies.md). One instance keeps its state while it stems a word, so calls are
# serialised; the cache below makes them rare.
_ENGLISH = snowballstemmer.stemmer("english")
_ENGLISH_LOCK = threading.Lock()
# Distinct words stemmed in one process stay well under this (a long run reads a few hundred
# pages; English prose of that size has some tens of thousands of distinct word forms), so
# every word is stemmed once and the cache stays a few megabytes.
_STEM_CACHE_SIZE = 200_000


# The British spelling of the suffix "-ization" ("optimisation", "organisations"): Porter2
# strips "-ization" but not "-isation", so the two spellings of one word met nowhere. The
# suffix is unambiguous (no English word ends in "-isation" but a British "-ization"); the
# verb's "-ise" is not ("precise", "promise", "revise" are no "-ize"), so it is left alone.
_BRITISH_ISATION = re.compile(r"(?<=[a-z]{3})isation(s?)$")


# The dimensional adjectives of English (Bierwisch's closed class, the measure words of
# "how old/long/large", research/engine/question_terms.py) with their comparative and
# superlative: Porter2 leaves "-er" and "-est" on, since most words ending so are no
# comparatives ("user", "number", "server"), so "entries older than 30 days" never met "how
# old". KStem (Krovetz, SIGIR 1993) strips them only for adjectives its lexicon lists; this
# closed class is that lexicon. "further" and "later" are left out: they mean "more" and
# "afterwards" far more often than a greater distance or time.
_DEGREES = {
    form: base
    for base, *forms in map(
        str.split,
        (
            "old older oldest",
            "long longer longest",
            "short shorter shortest",
            "tall taller tallest",
            "high higher highest",
            "low lower lowest",
            "wide wider widest",
            "deep deeper deepest",
            "far farther farthest",
            "big bigger biggest",
            "large larger largest",
            "small smaller smallest",
            "heavy heavier heaviest",
            "fast faster fastest",
            "slow slower slowest",
        ),
    )
    for form in forms
}


@functools.lru_cache(maxsize=_STEM_CACHE_SIZE)
def stem(word: str) -> str:
    """The Snowball English stem of a folded word: "running"/"runs"/"run" and "caused"/"cause"
    meet, "news" stays "news"; "optimisation" meets "optimization" and "older" meets "old".
    Numbers and words with an apostrophe are kept as they are."""
    if not word.isalpha():
        return word
    word = _DEGREES.get(word) or _BRITISH_ISATION.sub(r"ization\1", word)
    with _ENGLISH_LOCK:
        return _ENGLISH.stemWord(word)


def tokens(text: str) -> list[str]:
    """Folded word and number tokens of ``text`` (thousands separators removed from numbers)."""
    found = []
    for token in _TOKEN.findall(fold(text)):
        if token[0].isdigit():
            token = re.sub(r"(?<=\d),(?=\d{3}\b)", "", token)
        elif token.endswith("'s"):
            token = token[:-2]
        found.append(token)
    return found


# A name written the way code writes it: words joined by "_", "." or "::" ("max_buffer",
# "child_process.exec", "std::vector"), or run together in camelCase or PascalCase
# ("setMaxListeners", "MaxListenersExceededWarning"). Each joined word starts with a letter,
# so a version ("3.11") or a number is no name, and one after a dot with a small letter, so
# two sentences run together ("end.The") are none either. Run together, a capital follows a
# small letter ("setMax", "XMLHttpRequest"); capitals before a word alone ("SQLAlchemy",
# "HTTPServer") are as often a product's name as code and stay one word (splitting them too
# measured one gold fact fewer on the tune set), as a plural of capitals ("URLs") does.
_IDENTIFIER = re.compile(
    r"(?<![\w.])[A-Za-z][A-Za-z0-9]*(?:(?:_+|::)[A-Za-z][A-Za-z0-9]*|\.[a-z][A-Za-z0-9]*)+"
    r"|(?<![\w.])[A-Za-z]*[a-z][A-Za-z0-9]*[A-Z][A-Za-z0-9]*"
)
# The words of one joined piece: a run of capitals before a capitalised word ("HTTP" in
# "HTTPServer"), a capitalised or lower-case word, a run of capitals, a number.
_CASE_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
# A part shorter than this is an initial ("i" of "iPhone", "e" and "g" of "e.g"), no word.
_PART_MIN_CHARS = 2
# A name splits only into at least this many words: "e.g" or "x_axis" are no compound names.
_PARTS_OF_A_NAME = 2


def _name_parts(name: str) -> list[str]:
    """The folded words of a compound name: "setMaxListeners" → set, max, listeners."""
    return [
        fold(word)
        for piece in re.split(r"_+|\.|::", name)
        for word in _CASE_WORD.findall(piece)
        if len(word) >= _PART_MIN_CHARS and not word.isdigit()
    ]


def _term_of(token: str, drop: frozenset[str]) -> str | None:
    if token in STOP_WORDS or token in drop or (len(token) == 1 and not token.isdigit()):
        return None
    return stem(token)


def _terms_and_parts(text: str, drop: frozenset[str]) -> tuple[list[str], set[str]]:
    """The content terms of ``text`` in order, and those that stand in it only as a part of a
    compound name. A name gives its whole (folded; "max_buffer") and then its parts, the
    identifier splitting of code search (Enslen et al., MSR 2009): "listeners" in a passage
    meets "setMaxListeners" in a question."""
    terms: list[str] = []
    parts: set[str] = set()
    words: set[str] = set()
    position = 0

    def plain(span: str) -> None:
        for token in tokens(span):
            if (term := _term_of(token, drop)) is not None:
                terms.append(term)
                words.add(term)

    for match in _IDENTIFIER.finditer(text):
        names = _name_parts(match.group(0))
        if len(names) < _PARTS_OF_A_NAME:
            continue
        plain(text[position : match.start()])
        position = match.end()
        whole = fold(match.group(0))
        if whole in drop:
            continue
        # A camelCase name folds to one word, as it always has ("setmaxlisteners"); a joined
        # one is kept with its joins, a code token ("max_buffer").
        terms.append(stem(whole) if whole.isalpha() else whole)
        words.add(terms[-1])
        for name in names:
            if (term := _term_of(name, drop)) is not None:
                terms.append(term)
                parts.add(term)
    plain(text[position:])
    return terms, parts - words


def content_terms(
    text: str, *, drop: frozenset[str] = frozenset(), parts: bool = True
) -> list[str]:
    """Stemmed content terms of ``text`` in order: stop words and ``drop`` words removed; a
    compound name ("setMaxListeners", "max_buffer") gives its whole and, unless ``parts`` is
    false, its parts. Without parts the terms tell names apart ("alloc" against
    "allocUnsafe"), where with them one name's terms would hold the other's."""
    terms, found = _terms_and_parts(text, drop)
    if parts or not found:
        return terms
    return [term for term in terms if term not in found]


def name_part_terms(text: str, *, drop: frozenset[str] = frozenset()) -> frozenset[str]:
    """The terms of ``text`` that stand in it only as parts of compound names ("max" and
    "listen" of "setMaxListeners" in a question that has no "max" of its own)."""
    return frozenset(_terms_and_parts(text, drop)[1])


# A code token keeps its spelling in a search: an option ("--dry-run"), a path
# ("core::io::read"), a type parameter ("Box<V>"), an index ("v[2]"), a dotfile (".cache").
_CODE_WORD = re.compile(
    r"(?<![\w-])--?[A-Za-z][\w-]*[\w]|\w+(?:::\w+)+|\w+<[\w, ]+>|\w+\[\w*\]|(?<![\w.])\.[a-z]\w+"
)
_WORD = re.compile(rf"{_CODE_WORD.pattern}|[\w][\w'’.-]*[\w]|\w")


def _keyword_in_capitals(words: list[str], index: int) -> bool:
    """ "IF" in "CREATE TABLE IF NOT EXISTS": a stop word in capitals beside another word
    in capitals is part of a statement or a constant, not a function word."""
    def capitals(word: str) -> bool:
        return len(word) >= 2 and word.isalpha() and word.isupper()

    neighbours = words[max(index - 1, 0) : index] + words[index + 1 : index + 2]
    return capitals(words[index]) and any(capitals(word) for word in neighbours)


def keywords(text: str, *, drop: frozenset[str] = frozenset()) -> list[str]:
    """Unstemmed content words of ``text`` in their original spelling, for search queries;
    code tokens (options, paths, type parameters, statements in capitals) are kept whole."""
    found = [match.group(0) for match in _WORD.finditer(text)]
    found = [word if _CODE_WORD.fullmatch(word) else word.strip(".") for word in found]
    words = []
    seen: set[str] = set()
    for index, word in enumerate(found):
        folded = fold(word)
        if not word or folded in drop or folded in seen:
            continue
        if folded in STOP_WORDS and not _keyword_in_capitals(found, index):
            continue
        seen.add(folded)
        words.append(word)
    return words


# --------------------------------------------------------------------------------------------
# Definitions: the text of a definition list's description stands under its term
# --------------------------------------------------------------------------------------------

# Between a section's heading and a definition's term in the heading of the term's text:
# "OPTIONS › --force-with-lease".
TERM_MARK = " › "
# A term is shown in headings up to this many characters (cut at a word, "…" added): an
# option's spellings or a function's signature can run to a few hundred characters, and a
# report shows a heading only up to 120 (research/engine/quoted_report.py), section included.
_TERM_SHOWN_CHARS = 60


def _short_term(term: str) -> str:
    term = " ".join(term.split())
    if len(term) <= _TERM_SHOWN_CHARS:
        return term
    cut = term[:_TERM_SHOWN_CHARS]
    space = cut.rfind(" ")
    return (cut[:space] if space > 0 else cut).rstrip(" ,;:(") + "…"


def under_term(section: str | None, term: str) -> str:
    """The heading of a definition's description: its section and its term, shortened."""
    shown = _short_term(term)
    return f"{section}{TERM_MARK}{shown}" if section else shown


def term_under(heading: str) -> str | None:
    """The term (as shown, shortened) that a heading made by :func:`under_term` ends with;
    ``None`` for a heading that joins no section and term."""
    return heading.rsplit(TERM_MARK, 1)[1] if TERM_MARK in heading else None


def term_of(text: str, blocks: Sequence[Any], index: int) -> str | None:
    """The term a description block (``blocks[index]``, kind "description") defines: the run
    of term blocks before it, joined ("-f, --force" in two ``dt``), found by walking back over
    the description's other blocks (a list or code inside it) up to a heading. ``None`` for
    any other block, or a description with no term before it in its section."""
    if blocks[index].kind != "description":
        return None
    position = index - 1
    while position >= 0 and blocks[position].kind not in ("term", "heading"):
        position -= 1
    if position < 0 or blocks[position].kind != "term":
        return None
    first = position
    while first > 0 and blocks[first - 1].kind == "term":
        first -= 1
    return ", ".join(text[block.start : block.end] for block in blocks[first : position + 1])
