"""The gap check of the extractive report: whether the quotations shown for a question answer
it, and if not, the sentence saying why (:func:`unanswered`).

Quoting loosely related passages is no answer: a report whose quotations for a question carry
none of the kind of value it asks for, or never name what it asks about, states a gap for it
instead of implying an answer (docs/llm.md, "Report").
"""

import re
from collections.abc import Callable, Sequence

from research.engine.contracts import Evidence, SourceSummary
from research.engine.pool_rank import names_subject as pool_names_subject
from research.engine.pool_rank import said
from research.engine.quality import fold_name, subject_names
from research.engine.question_terms import question_terms, wanted_value
from research.engine.text import MONTHS, content_terms

# Text whose digits state no value: a web address, a bracketed footnote or reference mark and
# a manual page's section ("git-am(1)", "signal(7)").
_NOT_VALUES = re.compile(r"\b(?:https?|ftp)://\S+|\[\d{1,3}\]|(?<=\w)\(\d[a-z]?\)")
# Numbers that count nothing, so no figure answers "how many / how much / how large" with them:
# a release ("Git 1.5.2", "2.6.23-rc3", "v18", "version 3.24"), a calendar date ("October
# 2009", "3 May 2021", "2018-06-04") and a cross-reference, the number naming a part of a
# document after the noun it labels ("Chapter 16", "Listing 16-3", "Section 2.4", "page 12"):
# a label, like a release number, not a quantity. A release or a date question still finds
# them, since only a figure question's check leaves them out.
_NOT_FIGURES = re.compile(
    r"\bv?\d+(?:\.\d+){2,}(?:-?(?:rc|alpha|beta|pre)\d*)?(?![\w.])"
    r"|\b\d+(?:\.\d+)*-?(?:rc|alpha|beta|pre)\d+\b"
    r"|\bv\d+(?:\.\d+)*\b"
    r"|\b(?:versions?|releases?)\s+\d+(?:\.\d+)*\b"
    r"|\b(?:chapters?|sections?|appendix|appendices|figures?|fig\.|listings?|tables?|parts?"
    r"|pages?|pp?\.|steps?|examples?|lines?)\s+\d+(?:[.-]\d+)*\b"
    r"|\b(?:" + "|".join(MONTHS) + r")\.?\s+(?:\d{1,2}(?:st|nd|rd|th)?,?\s+)?\d{4}\b"
    r"|\b\d{1,2}\s+(?:" + "|".join(MONTHS) + r")\.?\s+\d{4}\b"
    r"|\b\d{4}-\d{2}-\d{2}\b",
    re.I,
)
# The number a heading or a list item opens with, ending in a full stop ("2. Details",
# "16.2. Using Message Passing", "IV. Results", "3. Run the tests"): the label of a part of the
# document or of a step, like "Chapter 16", not a figure it states.
_LABEL_NUMBER = re.compile(r"^\s*(?:\d+(?:\.\d+)*|[IVXLC]+)\.\s+")
# The names :func:`research.engine.question_terms.wanted_value` gives the value of a question
# asking for a count or an amount ("how many", "how much", "how large") and of one asking for a
# length of time ("how long", "how often"). Neither is answered by a release, a date or a
# cross-reference: a date is a point in time, not a length of it.
_FIGURE = "a figure"
_MEASURES = frozenset({_FIGURE, "a length of time"})
# A word as :func:`research.engine.quality.subject_names` reads names ("Node.js", "init_db").
_NAME_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[._+#-][A-Za-z0-9]+)*")
# A name the question gives a release number ("Windows 7", "Node.js 18", "SQLAlchemy 1.4"): the
# question is about that release, so the quotations must speak of it. The word is a name
# (:func:`research.engine.quality.subject_names` decides), the number an integer or a dotted
# release, with an optional "v" ("v18").
_VERSIONED = re.compile(
    r"(?P<name>[A-Za-z][A-Za-z0-9]*(?:[._+#-][A-Za-z0-9]+)*)\s+v?(?P<number>\d+(?:\.\d+)*)\b"
)


def unanswered(
    question: str,
    quoted: list[Evidence],
    sources: dict[str, SourceSummary],
    named: Callable[[Evidence], bool] | None = None,
) -> str:
    """Why the quotations ``quoted`` for ``question`` do not answer it, or "": none carries the
    kind of value it asks for (a date, a version, a figure), or none — nor its source's title
    or address — names the subject the question names. Quoting loosely related passages is
    no answer, and the report says so instead of implying one. ``named`` tells whether a
    quotation names the subject when the caller knows more (the pool's page-level naming)."""
    names = subject_names([question])

    def names_subject(item: Evidence) -> bool:
        if named is not None:
            return named(item)
        return pool_names_subject(item, names, sources)

    value = wanted_value(question)
    focus = question_terms(question)[1]

    # What is asked of the subject may stand in the passage's page title or address, as its
    # subject may: a passage is read in its document's context (Callan, SIGIR 1994), and a
    # title page's "this version of the text assumes …" speaks of the book its address names.
    def speaks_to_focus(item: Evidence) -> bool:
        return not focus or bool(focus & set(content_terms(said(item, sources))))

    # The value must stand in a quotation about the subject and about what is asked of it: a
    # date in a passage about another product, or a year in a passage about the lake's
    # phosphorus for a question about its eels, answers nothing. The digits of a web address,
    # a footnote mark ("[2]") or a manual page's section ("git-am(1)") are no value.
    # A dotted number right after a name the question itself names is a release of that
    # thing ("Linux 2.6" for a question about the Linux kernel's repository), not a count.
    releases = [re.compile(rf"\b{re.escape(name)}\s+v?\d+(?:\.\d+)+\b", re.I) for name in names]

    def carries_value(text: str) -> bool:
        if value[0] in _MEASURES:
            text = _LABEL_NUMBER.sub(" ", text)
        text = _NOT_VALUES.sub(" ", text)
        if value[0] in _MEASURES:
            text = _NOT_FIGURES.sub(" ", text)
            for release in releases:
                text = release.sub(" ", text)
        return bool(value[1].search(text))

    if value and not any(
        (carries_value(item.excerpt) or carries_value(item.locator.heading or ""))
        and names_subject(item)
        and speaks_to_focus(item)
        for item in quoted
    ):
        return f"No quoted excerpt states {value[0]} for: {question}"
    if names and not any(names_subject(item) for item in quoted):
        return f"No quoted excerpt or source names what the question asks about: {question}"
    return ""


def stated_gap(
    question: str,
    quoted: list[Evidence],
    sources: dict[str, SourceSummary],
    gathered: Sequence[Evidence] = (),
) -> str:
    """The gap a question's section states, or "": :func:`unanswered` for its quotations, or
    a subject of the question that neither its quotations nor the rest of the evidence
    ``gathered`` for it speak of at all (:func:`unnamed_subject`).

    A question is about all it names, not one of them: "Is A faster than B", "How do I deploy
    A on B", "Why did A move from B to C" are unanswered by evidence that only ever names A.
    The check is over the question's evidence together (each subject named by one passage,
    in its excerpt, heading, source title or address), so a quotation naming one side of a
    comparison and another naming the other still answer it; and a subject named only in
    gathered evidence the report did not quote is the quotation choice's miss, not a gap."""
    return unanswered(question, quoted, sources) or unnamed_subject(
        question, [*quoted, *gathered], sources
    )


def unnamed_subject(
    question: str, quoted: list[Evidence], sources: dict[str, SourceSummary]
) -> str:
    """The gap sentence when a subject ``question`` names — or a release of one it names
    ("Windows 7") — is named by none of ``quoted`` (excerpt, heading, source title or
    address), or ""."""
    if not quoted:
        return ""
    texts = [said(item, sources) for item in quoted]
    folded = fold_name("\n".join(texts))
    names = subject_names([question])
    missing = [name for name in _spelled_names(question, names) if fold_name(name) not in folded]
    if missing:
        return (
            f"No quoted excerpt or source names {', '.join(missing)}, which the question asks "
            f"about: {question}"
        )
    lowered = [text.casefold() for text in texts]
    for match in _VERSIONED.finditer(question):
        name, number = match.group("name"), match.group("number")
        if fold_name(name) not in names:
            continue
        if not any(_speaks_of_release(name, number, text) for text in lowered):
            return f"No quoted excerpt or source speaks of {name} {number}: {question}"
    return ""


def _spelled_names(question: str, names: frozenset[str]) -> list[str]:
    """The subject names ``names`` (folded) as ``question`` spells them, in its order, each once
    (a dotted name's first part is left out when the whole is there: "Node.js", not "Node")."""
    spelled: list[str] = []
    for match in _NAME_WORD.finditer(question):
        word = match.group(0)
        if fold_name(word) in names and word not in spelled:
            spelled.append(word)
    covered = {fold_name(word) for word in spelled}
    leftover = sorted(name for name in names if name not in covered)
    return spelled + [name for name in leftover if not any(name in c for c in covered)]


def _speaks_of_release(name: str, number: str, text: str) -> bool:
    """Whether ``text`` (case-folded) names release ``number`` of ``name``: the name followed
    by the number ("node.js v18.13.0" for "Node.js 18", "sqlite version 3.40" for "SQLite 3"),
    or the number standing alone as a versioned address or title does ("/en/2.2.x/" for
    "Flask 2.2", "/1.63.0/book/" for "Rust 1.63") when the text names the release's subject
    (a page of that release's own documentation)."""
    release = rf"(?:(?:version|release)\s+)?v?{re.escape(number)}(?![0-9])"
    if re.search(rf"{re.escape(name.casefold())}[\s_-]*{release}", text):
        return True
    return fold_name(name) in fold_name(text) and bool(
        re.search(rf"(?:/|\(|\bv){re.escape(number)}(?:\.[0-9]+)*(?:\.x)?(?=[/)]|\s|$)", text)
    )
