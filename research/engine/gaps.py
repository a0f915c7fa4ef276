"""The gap check of the extractive report: whether the quotations shown for a question answer
it, and if not, the sentence saying why (:func:`unanswered`).

Quoting loosely related passages is no answer: a report whose quotations for a question carry
none of the kind of value it asks for, or never name what it asks about, states a gap for it
instead of implying an answer (docs/llm.md, "Report").
"""

import re

from research.engine.contracts import Evidence, SourceSummary
from research.engine.pool_rank import names_subject as pool_names_subject
from research.engine.quality import subject_names
from research.engine.question_terms import question_terms, wanted_value
from research.engine.text import content_terms

# Text whose digits state no value: a web address, a bracketed footnote or reference mark and
# a manual page's section ("git-am(1)", "signal(7)").
_NOT_VALUES = re.compile(r"\b(?:https?|ftp)://\S+|\[\d{1,3}\]|(?<=\w)\(\d[a-z]?\)")


def unanswered(question: str, quoted: list[Evidence], sources: dict[str, SourceSummary]) -> str:
    """Why the quotations ``quoted`` for ``question`` do not answer it, or "": none carries the
    kind of value it asks for (a date, a version, a figure), or none — nor its source's title
    or address — names the subject the question names. Quoting loosely related passages is
    no answer, and the report says so instead of implying one."""
    names = subject_names([question])

    def names_subject(item: Evidence) -> bool:
        return pool_names_subject(item, names, sources)

    value = wanted_value(question)
    focus = question_terms(question)[1]

    def speaks_to_focus(item: Evidence) -> bool:
        return not focus or bool(
            focus & set(content_terms(f"{item.excerpt} {item.locator.heading or ''}"))
        )

    # The value must stand in a quotation about the subject and about what is asked of it: a
    # date in a passage about another product, or a year in a passage about the lake's
    # phosphorus for a question about its eels, answers nothing. The digits of a web address,
    # a footnote mark ("[2]") or a manual page's section ("git-am(1)") are no value.
    if value and not any(
        (
            value[1].search(_NOT_VALUES.sub(" ", item.excerpt))
            or value[1].search(_NOT_VALUES.sub(" ", item.locator.heading or ""))
        )
        and names_subject(item)
        and speaks_to_focus(item)
        for item in quoted
    ):
        return f"No quoted excerpt states {value[0]} for: {question}"
    if names and not any(names_subject(item) for item in quoted):
        return f"No quoted excerpt or source names what the question asks about: {question}"
    return ""
