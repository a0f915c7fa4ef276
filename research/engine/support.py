"""Does a finding say what its cited excerpts say? Deterministic checks, before publishing.

Citations are real when every id resolves to a verified excerpt; this module asks the next
question, whether the statement's own words are borne out by those excerpts:

* **numbers**: every quantity in the statement (with its sign, unit of measure, percentage,
  magnitude word and currency), every date and every year occurs in a cited excerpt, after the
  formats are normalised (1,200 = 1200 = 1.2 thousand; 1 January 2024 = 2024-01-01);
* **negation**: the sentence of the excerpts that shares most words with the statement agrees
  with it on being negated ("is not", "no longer", "never", "cannot");
* **comparison**: that sentence does not say the opposite comparison ("before" for "after",
  "less" for "more");
* **names**: every name (a capitalised word inside a sentence, an acronym) and identifier
  (``asyncio.TaskGroup``, ``max_connections``) occurs in a cited excerpt or in the plan;
* **overlap**: at least half of the statement's content words occur in the cited excerpts, so a
  statement cannot borrow an unrelated excerpt.

:func:`clean_statement` removes what statement text may not contain at all: addresses, citation
markers of its own ("[3]") and markup. Checks are about form, not about any corpus: the word
sets below are the closed classes of English that carry negation and comparison, and the units
of measure in common use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from decimal import Decimal, InvalidOperation

from research.engine.text import MONTHS, STOP_WORDS, stem, word_set
from research.engine.text import fold as _fold

# A statement must share at least this share of its content words with its excerpts. A
# paraphrase keeps the subject and most of what is said of it; an unrelated excerpt shares
# little beyond function words, which are not counted.
MIN_OVERLAP = 0.5


@dataclass(frozen=True)
class Check:
    """One check on one statement: its name, whether it passed, and what did not match."""

    name: str
    passed: bool
    detail: str = ""


@dataclass(frozen=True)
class Support:
    """Every check run on one statement."""

    checks: tuple[Check, ...]

    @property
    def supported(self) -> bool:
        return all(check.passed for check in self.checks)

    @property
    def mismatches(self) -> list[str]:
        return [check.detail for check in self.checks if not check.passed]


def check_support(
    statement: str, excerpts: Sequence[str], *, known_text: Iterable[str] = ()
) -> Support:
    """Run every check of ``statement`` against the ``excerpts`` it cites; ``known_text`` is
    text whose names the statement may use without an excerpt (the plan's objective and
    questions)."""
    joined = "\n".join(excerpts)
    return Support(
        checks=(
            _check_numbers(statement, joined),
            _check_negation(statement, excerpts),
            _check_comparison(statement, excerpts),
            _check_names(statement, joined, "\n".join(known_text)),
            _check_overlap(statement, joined),
        )
    )


# --- statement hygiene ------------------------------------------------------------------------

_URL_TEXT = re.compile(
    r"\b(?:https?|ftp|javascript|data|file|mailto):[^\s<>\"'\]]*|\bwww\.[^\s<>\"'\]]+",
    re.IGNORECASE,
)
_MARKER = re.compile(r"\s*\[(?:\d+(?:\s*[,–-]\s*\d+)*|[a-z]?\d+[a-z]?|citation needed|source)\]")
_MARKUP = re.compile(r"</?[a-zA-Z][\w:-]*(?:\s[^<>]*)?/?>|\*\*|__|`")


def clean_statement(text: str, quoted: str = "") -> tuple[str, int]:
    """``text`` without the addresses, citation markers and markup of its own, and how many
    were removed. What also stands in ``quoted`` (the cited excerpts) is the source's own text,
    quoted, and stays."""
    removed = 0

    def drop(match: re.Match[str]) -> str:
        nonlocal removed
        if match.group(0).strip() and match.group(0).strip() in quoted:
            return match.group(0)
        removed += 1
        return ""

    for pattern in (_URL_TEXT, _MARKER, _MARKUP):
        text = pattern.sub(drop, text)
    if removed:
        text = re.sub(r"\s+([,.;:!?])", r"\1", " ".join(text.split()))
    return text, removed


# --- numbers, dates and years -------------------------------------------------------------------

_MONTH = r"(?:" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_DATE_FORMS = (
    (re.compile(r"\b(\d{4})-(\d\d)-(\d\d)\b"), ("y", "m", "d")),
    (
        re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?({_MONTH})\s+(\d{{4}})\b", re.I),
        ("d", "M", "y"),
    ),
    (
        re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I),
        ("M", "d", "y"),
    ),
)
_MAGNITUDES = {
    "thousand": Decimal(1000),
    "k": Decimal(1000),
    "million": Decimal(10**6),
    "m": Decimal(10**6),
    "mn": Decimal(10**6),
    "billion": Decimal(10**9),
    "bn": Decimal(10**9),
    "trillion": Decimal(10**12),
}
# Units of measure, each spelling mapped to one name; a following word that is not a unit
# (a noun such as "listeners") says what is counted and is not compared.
_UNITS = {
    spelling: name
    for name, spellings in {
        "celsius": ("°c", "℃", "celsius", "degrees celsius", "degree celsius", "centigrade"),
        "fahrenheit": ("°f", "℉", "fahrenheit", "degrees fahrenheit", "degree fahrenheit"),
        "kelvin": ("kelvin", "k"),
        "degree": ("°", "degrees", "degree"),
        "metre": ("m", "metre", "metres", "meter", "meters"),
        "kilometre": ("km", "kilometre", "kilometres", "kilometer", "kilometers"),
        "centimetre": ("cm", "centimetre", "centimetres", "centimeter", "centimeters"),
        "millimetre": ("mm", "millimetre", "millimetres", "millimeter", "millimeters"),
        "mile": ("mi", "mile", "miles"),
        "foot": ("ft", "foot", "feet"),
        "inch": ("in", "inch", "inches"),
        "gram": ("g", "gram", "grams", "gramme", "grammes"),
        "kilogram": ("kg", "kilogram", "kilograms", "kilo", "kilos"),
        "tonne": ("t", "tonne", "tonnes", "ton", "tons"),
        "pound": ("lb", "lbs", "pound", "pounds"),
        "litre": ("l", "litre", "litres", "liter", "liters"),
        "millilitre": ("ml", "millilitre", "millilitres", "milliliter", "milliliters"),
        "second": ("s", "sec", "secs", "second", "seconds"),
        "millisecond": ("ms", "millisecond", "milliseconds"),
        "microsecond": ("µs", "us", "microsecond", "microseconds"),
        "minute": ("min", "mins", "minute", "minutes"),
        "hour": ("h", "hr", "hrs", "hour", "hours"),
        "day": ("day", "days"),
        "week": ("week", "weeks"),
        "month": ("month", "months"),
        "year": ("year", "years", "yr", "yrs"),
        "byte": ("b", "byte", "bytes"),
        "kilobyte": ("kb", "kib", "kilobyte", "kilobytes", "kibibyte", "kibibytes"),
        "megabyte": ("mb", "mib", "megabyte", "megabytes", "mebibyte", "mebibytes"),
        "gigabyte": ("gb", "gib", "gigabyte", "gigabytes", "gibibyte", "gibibytes"),
        "terabyte": ("tb", "tib", "terabyte", "terabytes"),
        "bit": ("bit", "bits"),
        "hertz": ("hz", "hertz"),
        "kilohertz": ("khz",),
        "megahertz": ("mhz",),
        "gigahertz": ("ghz",),
        "watt": ("w", "watt", "watts"),
        "kilowatt": ("kw", "kilowatt", "kilowatts"),
        "kilowatt-hour": ("kwh", "kilowatt-hour", "kilowatt-hours"),
        "volt": ("v", "volt", "volts"),
        "ampere": ("a", "amp", "amps", "ampere", "amperes"),
        "pascal": ("pa", "pascal", "pascals"),
        "bar": ("bar", "bars"),
        "calorie": ("cal", "calorie", "calories", "kcal"),
    }.items()
    for spelling in spellings
}
_CURRENCIES = {
    "$": "usd",
    "usd": "usd",
    "us$": "usd",
    "dollars": "usd",
    "€": "eur",
    "eur": "eur",
    "euros": "eur",
    "£": "gbp",
    "gbp": "gbp",
    "pounds sterling": "gbp",
    "¥": "jpy",
    "jpy": "jpy",
    "yen": "jpy",
    "chf": "chf",
}
_CURRENCY_PREFIX = r"(?P<currency>us\$|\$|€|£|¥|usd|eur|gbp|jpy|chf)?\s?"
_NUMBER = re.compile(
    r"(?<![\w.])(?P<sign>[-−–]|minus\s|plus\s|\+)?"
    + _CURRENCY_PREFIX
    + r"(?P<digits>\d{1,3}(?:[,\u202f\u00a0 ]\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)"
    r"(?![\w.]*\d)(?:\s?(?P<magnitude>thousand|million|billion|trillion|bn|mn|k\b|m\b))?"
    r"(?:\s?(?P<percent>%|per\s?cent\b|percent\b))?"
    r"(?:\s?(?P<unit>°\s?[cf]\b|℃|℉|°|degrees?\s+(?:celsius|fahrenheit)|[a-zµ]{1,12}(?:-[a-z]+)?))?"
    r"(?:\s(?P<suffix_currency>dollars|euros|yen|usd|eur|gbp|chf)\b)?",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Quantity:
    value: Decimal
    percent: bool
    unit: str | None
    currency: str | None
    text: str


def _quantities(text: str) -> list[_Quantity]:
    found: list[_Quantity] = []
    masked = text
    for pattern, _order in _DATE_FORMS:
        masked = pattern.sub(lambda m: " " * len(m.group(0)), masked)
    for match in _NUMBER.finditer(masked):
        digits = re.sub(r"[,\u202f\u00a0 ]", "", match.group("digits"))
        try:
            value = Decimal(digits)
        except InvalidOperation:
            continue
        magnitude = (match.group("magnitude") or "").lower()
        unit_text = (match.group("unit") or "").lower()
        if magnitude in ("m", "k") and unit_text:
            magnitude = ""  # "5 m long": metres, not millions
        value *= _MAGNITUDES.get(magnitude, Decimal(1))
        sign = (match.group("sign") or "").strip().lower()
        if sign in ("-", "−", "–", "minus"):
            value = -value
        unit = _UNITS.get(" ".join(unit_text.replace("° ", "°").split()))
        currency = _CURRENCIES.get((match.group("currency") or "").lower()) or _CURRENCIES.get(
            (match.group("suffix_currency") or "").lower()
        )
        found.append(
            _Quantity(
                value=value.normalize(),
                percent=bool(match.group("percent")),
                unit=unit,
                currency=currency,
                text=match.group(0).strip(),
            )
        )
    return found


@dataclass(frozen=True)
class Measure:
    """A quantity with a dimension — a unit of measure, a percentage or a currency — as the
    numbers check reads it: "100 °C" and "100 degrees Celsius" are the same measure."""

    value: Decimal
    dimension: str
    text: str


def measures(text: str) -> list[Measure]:
    """The quantities of ``text`` that carry a dimension, in order (bare counts and years,
    which say nothing of what they measure, are left out)."""
    return [
        Measure(q.value, q.unit or q.currency or "percent", _without_counted_noun(q.text))
        for q in _quantities(text)
        if q.unit or q.currency or q.percent
    ]


def _without_counted_noun(text: str) -> str:
    """ "$1.2 billion to" → "$1.2 billion": a last word that is no unit, magnitude or currency
    is the next word of the sentence, not part of the measure."""
    words = text.split()
    last = words[-1].lower() if words else ""
    known = last in _UNITS or last in _CURRENCIES or last in _MAGNITUDES
    if len(words) > 1 and last.isalpha() and not known and last not in ("percent", "cent"):
        return " ".join(words[:-1])
    return text


def _dates(text: str) -> set[date]:
    found: set[date] = set()
    for pattern, order in _DATE_FORMS:
        for match in pattern.finditer(text):
            parts = dict(zip(order, match.groups(), strict=True))
            month = int(parts["m"]) if "m" in parts else MONTHS[parts["M"].lower().rstrip(".")]
            try:
                found.add(date(int(parts["y"]), month, int(parts["d"])))
            except ValueError:
                continue
    return found


def _matches(wanted: _Quantity, offered: Iterable[_Quantity]) -> bool:
    for quantity in offered:
        if quantity.value != wanted.value or quantity.percent != wanted.percent:
            continue
        if wanted.unit and quantity.unit and wanted.unit != quantity.unit:
            continue
        if wanted.currency and quantity.currency and wanted.currency != quantity.currency:
            continue
        return True
    return False


_VERSION = re.compile(r"(?<![\w.])v?\d+(?:\.\d+){2,}(?![\w.]*\d)")


def _check_numbers(statement: str, excerpts: str) -> Check:
    for version in _VERSION.findall(statement):
        if version.lstrip("v") not in excerpts:
            return Check("numbers", False, f"“{version}” is in no cited excerpt")
    offered_dates = _dates(excerpts)
    missing_dates = sorted(_dates(statement) - offered_dates)
    if missing_dates:
        return Check(
            "numbers", False, f"the date {missing_dates[0].isoformat()} is in no cited excerpt"
        )
    offered = _quantities(excerpts)
    # A year inside a date of the excerpts also states that year.
    offered += [
        _Quantity(Decimal(day.year), False, None, None, str(day.year)) for day in offered_dates
    ]
    for wanted in _quantities(statement):
        if not _matches(wanted, offered):
            return Check("numbers", False, f"“{wanted.text}” is in no cited excerpt")
    return Check("numbers", True)


# --- words ------------------------------------------------------------------------------------

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)?", re.UNICODE)
# Words that carry no subject, so overlap is measured without them: text matching's stop words
# (engine/text.py) and the hedges and counters "may", "might", "one(s)" and "still", which a
# paraphrase adds or drops freely. Text matching keeps those, since "May" is also a month.
_FUNCTION_WORDS = STOP_WORDS | word_set("may might one ones still")
# Bounds written with "no": "no more than 20" says "at most 20", it negates nothing.
_BOUND = re.compile(
    r"\bno\s+(?:more|less|fewer|later|earlier|greater|longer|shorter|sooner|higher|lower|"
    r"larger|smaller|bigger)\s+than\b",
    re.IGNORECASE,
)
# Words whose opposite flips a comparison; each pair is listed once.
_OPPOSITES = (
    ("more", "less"),
    ("more", "fewer"),
    ("greater", "smaller"),
    ("greater", "less"),
    ("larger", "smaller"),
    ("higher", "lower"),
    ("above", "below"),
    ("before", "after"),
    ("earlier", "later"),
    ("faster", "slower"),
    ("increase", "decrease"),
    ("increases", "decreases"),
    ("increased", "decreased"),
    ("maximum", "minimum"),
    ("most", "least"),
    ("longer", "shorter"),
    ("older", "newer"),
    ("enabled", "disabled"),
    ("allowed", "forbidden"),
)


def _words(text: str) -> list[str]:
    return [word.replace("’", "'") for word in _WORD.findall(_fold(text))]


def content_words(text: str) -> set[str]:
    """The content words of ``text``, stemmed (Snowball English): no function words, no numbers."""
    return {
        stem(word)
        for word in _words(text)
        if word not in _FUNCTION_WORDS and len(word) > 2 and not word.isdigit()
    }


_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|\n+")


def _closest_sentence(statement: str, excerpts: Sequence[str]) -> str:
    """The sentence of the excerpts that shares most content words with the statement."""
    wanted = content_words(statement)
    best, best_shared = "", -1
    for excerpt in excerpts:
        for sentence in _SENTENCE_END.split(excerpt):
            shared = len(wanted & content_words(sentence))
            if shared > best_shared:
                best, best_shared = sentence, shared
    return best


_CUES = frozenset(
    ["not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "cannot", "without"]
)
# How far after a negation word its predicate may stand ("is not yet safe", "cannot be raised").
_PREDICATE_REACH = 4


def _polarity(text: str) -> tuple[set[str], set[str]]:
    """The content words (stemmed) of ``text`` that stand negated — the first content word
    after a negation word — and those that do not."""
    negated: set[str] = set()
    plain: set[str] = set()
    for sentence in _SENTENCE_END.split(_BOUND.sub(" ", text)):
        _sentence_polarity(_words(sentence), negated, plain)
    return negated, plain


def _sentence_polarity(words: list[str], negated: set[str], plain: set[str]) -> None:
    reach = 0
    for word in words:
        cue = word in _CUES or word.endswith("n't") or word.endswith("n'")
        if cue:
            reach = _PREDICATE_REACH
            continue
        if word == "longer" and reach == _PREDICATE_REACH:
            continue  # "no longer": the negation goes on to the next word
        content = word not in _FUNCTION_WORDS and len(word) > 2 and not word.isdigit()
        if content and reach:
            negated.add(stem(word))
            reach = 0
        elif content:
            plain.add(stem(word))
        elif reach:
            reach -= 1


def _check_negation(statement: str, excerpts: Sequence[str]) -> Check:
    """What the statement negates its excerpts negate, and it does not affirm what they only
    ever negate ("is safe" against "is not safe")."""
    says_not, says = _polarity(statement)
    source_not: set[str] = set()
    source: set[str] = set()
    for excerpt in excerpts:
        negated, plain = _polarity(excerpt)
        source_not |= negated
        source |= plain
    for word in sorted(says_not - source_not):
        return Check("negation", False, f"the statement negates “{word}…”, its excerpts do not")
    for word in sorted((source_not - source) & says):
        return Check("negation", False, f"the statement affirms “{word}…”, its excerpts negate it")
    return Check("negation", True)


_COMPARATIVES = {word for pair in _OPPOSITES for word in pair}


def _context_tokens(text: str) -> list[str]:
    """Words that can stand next to a comparison word: content words (stemmed), numbers and
    the comparison words themselves."""
    return [
        word if word in _COMPARATIVES or word.isdigit() else stem(word)
        for word in _words(text)
        if word in _COMPARATIVES
        or word.isdigit()
        or (word not in _FUNCTION_WORDS and len(word) > 2)
    ]


def _neighbours(tokens: list[str], index: int) -> tuple[str | None, str | None]:
    before = tokens[index - 1] if index > 0 else None
    after = tokens[index + 1] if index + 1 < len(tokens) else None
    return before, after


def _check_comparison(statement: str, excerpts: Sequence[str]) -> Check:
    """A comparison word of the statement whose opposite stands between the same words in an
    excerpt ("run after the workers start" against "run before the workers start")."""
    said = _context_tokens(statement)
    # The sentence that says what the statement says is the one to compare with; other
    # sentences of a paragraph often contrast ("less than 100 … greater than 100").
    sources = [_context_tokens(_closest_sentence(statement, excerpts))]
    opposites: dict[str, set[str]] = {}
    for first, second in _OPPOSITES:
        opposites.setdefault(first, set()).add(second)
        opposites.setdefault(second, set()).add(first)
    for index, word in enumerate(said):
        if word not in opposites:
            continue
        before, after = _neighbours(said, index)
        for tokens in sources:
            if word in tokens:
                continue  # the sentence says it too ("more or less")
            for position, other in enumerate(tokens):
                if other not in opposites[word]:
                    continue
                other_before, other_after = _neighbours(tokens, position)
                if (before and before == other_before) or (after and after == other_after):
                    return Check(
                        "comparison",
                        False,
                        f"the statement says “{word}” where its excerpt says “{other}”",
                    )
    return Check("comparison", True)


_IDENTIFIER = re.compile(
    r"(?<![\w.])(?:[A-Za-z_]\w+(?:\.[A-Za-z_]\w+)+(?:\(\))?"  # dotted: asyncio.TaskGroup
    r"|[a-z]+(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"  # snake_case, UPPER_CASE
    r"|[a-z]+[A-Z]\w*"  # camelCase
    r"|[A-Za-z]\w*<[^<>\s]+>"  # generic types: Rc<T>
    r"|[A-Z]{2,}[a-z]*[A-Z0-9]*\b)"  # acronyms, wherever they stand: WAL, SQLite
)
_CAPITALISED = re.compile(r"(?<![\w.'’-])[A-Z][\w'’-]*")


def _names(statement: str) -> list[str]:
    names = [match.group(0) for match in _IDENTIFIER.finditer(statement)]
    for sentence in _SENTENCE_END.split(statement):
        words = list(_CAPITALISED.finditer(sentence))
        first = re.match(r"\W*", sentence)
        start = first.end() if first else 0
        for match in words:
            word = match.group(0)
            if len(word) < 2:
                continue  # "I"
            # A sentence's first word is capitalised anyway; a possessive ("Lisbon's") still
            # shows it to be a name.
            if match.start() == start and not re.search(r"['’]s$", word):
                continue
            names.append(word)
    return list(dict.fromkeys(re.sub(r"['’]s?$", "", name) for name in names))


def _check_names(statement: str, excerpts: str, known: str) -> Check:
    haystack = _fold(excerpts + "\n" + known)
    for name in _names(statement):
        folded = _fold(name)
        if folded.endswith("()"):
            folded = folded[:-2]
        if folded in haystack:
            continue
        # "Pallets'" or a plural form of a name the excerpt has in the singular.
        if folded.endswith("s") and folded[:-1] in haystack:
            continue
        return Check("names", False, f"“{name}” is in no cited excerpt")
    return Check("names", True)


def _check_overlap(statement: str, excerpts: str) -> Check:
    wanted = content_words(statement)
    if not wanted:
        return Check("overlap", True)
    offered = content_words(excerpts)
    share = len(wanted & offered) / len(wanted)
    if share >= MIN_OVERLAP:
        return Check("overlap", True)
    return Check(
        "overlap",
        False,
        f"only {share:.0%} of the statement's words are in its excerpts",
    )
