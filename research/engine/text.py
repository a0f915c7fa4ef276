"""Text normalisation shared by the engine, the extractive backend and the date reader of
research/sources: folding, the English month names, and terms — the one stop-word list, the
Snowball English stemmer and the tokens text is matched by."""

import functools
import re
import threading
import unicodedata

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
)

# Words our own question templates add; they carry no meaning a source would share.
QUESTION_FILLER = word_set(
    """compare compared comparison comparing differ difference differences versus vs key main
    characteristic characteristics evidence say says known describe explain overview aspect
    aspects respect respects term terms strength strengths weakness weaknesses well suited
    regarding concerning important notable number amount type types kind kinds sort sorts"""
)

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


@functools.lru_cache(maxsize=_STEM_CACHE_SIZE)
def stem(word: str) -> str:
    """The Snowball English stem of a folded word: "running"/"runs"/"run" and "caused"/"cause"
    meet, "news" stays "news". Numbers and words with an apostrophe are kept as they are."""
    if not word.isalpha():
        return word
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


def content_terms(text: str, *, drop: frozenset[str] = frozenset()) -> list[str]:
    """Stemmed content terms of ``text`` in order: stop words and ``drop`` words removed."""
    terms = []
    for token in tokens(text):
        if token in STOP_WORDS or token in drop or (len(token) == 1 and not token.isdigit()):
            continue
        terms.append(stem(token))
    return terms


def keywords(text: str, *, drop: frozenset[str] = frozenset()) -> list[str]:
    """Unstemmed content words of ``text`` in their original spelling, for search queries."""
    words = []
    seen: set[str] = set()
    for match in re.finditer(r"[\w][\w'’.-]*[\w]|\w", text):
        word = match.group(0).strip(".")
        folded = fold(word)
        if not word or folded in STOP_WORDS or folded in drop or folded in seen:
            continue
        seen.add(folded)
        words.append(word)
    return words
