"""Query fingerprints: when two searches count as the same search."""

import re
from collections.abc import Iterable
from dataclasses import dataclass

from research.engine.text import COMMON_WORDS, fold, word_set

# Words that never change what a search asks for: the common words every text match drops,
# and the words of a request to a search engine. Pronouns, negations and words of order stay
# (see ``research.engine.text.STOP_WORDS``).
_SEARCH_REQUEST_WORDS = word_set(
    "latest current recent recently today please find search show tell give versus vs"
)
_STOP_WORDS = COMMON_WORDS | _SEARCH_REQUEST_WORDS
_OPERATOR = re.compile(
    r"(?<!\S)(-?)(site|inurl|intitle|filetype|before|after):(\S+)", re.IGNORECASE
)
_YEAR_RANGE = re.compile(r"^(19\d\d|20\d\d)-(19\d\d|20\d\d)$")
_ISO_DATE = re.compile(r"^(19\d\d|20\d\d)-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$")
_YEAR = re.compile(r"^(19\d\d|20\d\d)$")
# Letters and digits of any script, optionally hyphenated ("covid-19", "2019-2023").
_TOKEN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


@dataclass(frozen=True)
class QueryFingerprint:
    """A search query reduced to what it asks for.

    ``terms`` are the sorted content words (case, accents, punctuation, stop-words, simple
    plurals and word order folded away); ``dates`` is the date scope (years, year ranges, ISO
    dates, before:/after:); ``domains`` and ``filetypes`` are the site scope. Two queries
    with the same :attr:`key` are equivalent: a ``site:`` restriction is a scope of the same
    question, not a new question.
    """

    terms: tuple[str, ...]
    dates: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    filetypes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The equivalence key: terms plus date scope."""
        text = " ".join(self.terms)
        return f"{text} @{','.join(self.dates)}" if self.dates else text

    @property
    def scoped_key(self) -> str:
        """The key including site and file-type scope, for display and step dedupe keys."""
        parts = [self.key]
        parts += [f"site:{domain}" for domain in self.domains]
        parts += [f"filetype:{kind}" for kind in self.filetypes]
        return " ".join(parts)

    @property
    def empty(self) -> bool:
        """Whether the query had no searchable words at all."""
        return not self.terms


def _singular(word: str) -> str:
    # A light plural fold so "rates" and "rate" meet; words too short or ending in ss/us/is
    # (class, status, analysis) are left alone.
    if len(word) <= 3 or word.isdigit() or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s"):
        return word[:-1]
    return word


def fingerprint_query(query: str) -> QueryFingerprint:
    """Reduce ``query`` to a :class:`QueryFingerprint`.

    "GDP of France 2023", "france gdp, 2023" and "2023 France GDP site:insee.fr" all have the
    key ``france gdp @2023``.
    """
    text = fold(query)
    domains: set[str] = set()
    filetypes: set[str] = set()
    dates: set[str] = set()
    for match in _OPERATOR.finditer(text):
        negated, name = match.group(1), match.group(2).lower()
        value = match.group(3).strip("\"'()")
        if name == "site":
            # An excluded site stays visible in the scope as "-example.org".
            domains.add(negated + value.strip("./").split("/")[0])
        elif name == "filetype":
            filetypes.add(value.lstrip("."))
        elif name in ("before", "after"):
            dates.add(f"{name}:{value}")
        # inurl:/intitle: narrow where words appear; the words themselves stay content terms.
        else:
            text += f" {value}"
    text = _OPERATOR.sub(" ", text)
    terms: set[str] = set()
    for token in _TOKEN.findall(text.replace("\u2013", "-").replace("\u2014", "-")):
        if _YEAR.match(token) or _ISO_DATE.match(token):
            dates.add(token)
            continue
        year_range = _YEAR_RANGE.match(token)
        if year_range:
            dates.add(f"{year_range.group(1)}..{year_range.group(2)}")
            continue
        for word in token.split("-"):
            if _YEAR.match(word):
                dates.add(word)
            elif word and word not in _STOP_WORDS:
                terms.add(_singular(word))
    return QueryFingerprint(
        terms=tuple(sorted(terms)),
        dates=tuple(sorted(dates)),
        domains=tuple(sorted(domains)),
        filetypes=tuple(sorted(filetypes)),
    )


# The constant of reciprocal-rank fusion (Cormack, Clarke and Büttcher, 2009): it damps the
# weight of the very top places so that a result several searches rank well beats one a single
# search ranks first; 60 is the value the paper found robust across collections.
RRF_K = 60


def reciprocal_rank(ranks: Iterable[int]) -> float:
    """The reciprocal-rank fusion score of one result: the sum of ``1 / (RRF_K + rank)`` over
    the searches (or other rankings) that ranked it, ``rank`` 1 being the top."""
    return sum(1.0 / (RRF_K + rank) for rank in ranks if rank >= 1)
