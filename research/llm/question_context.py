"""The statements around a question: sentences before it and a statement joined to it by
", so" (context every sub-question keeps), a reported clause and the situation it was said
in, a leading setting ("In Quill, …"), and what the asker adds after the question.

Used by :mod:`research.llm.decompose`, which breaks the question proper into sub-questions.
"""

import re

from research.engine.text import content_terms
from research.llm.wording import AUX as _AUX
from research.llm.wording import IMPERATIVE as _IMPERATIVE
from research.llm.wording import WH as _WH
from research.llm.wording import SubQuestion, sentence_case
from research.llm.wording import clean as _clean

# A sentence ends at "." or "!" (not an ellipsis "...") before a capital or a quotation.
_SENTENCE_BREAK = re.compile(r"(?<=[^.][.!])\s+(?=[A-Z\"\u201c])")
_QUESTION_START = re.compile(rf"^(?:{_WH}|{_AUX}|{_IMPERATIVE})\b", re.IGNORECASE)
# "In Quillpad, what is…": a leading phrase that sets the context of the whole question.
_LEADING_SETTING = re.compile(
    rf"^(?P<lead>(?:in|for|with|using|within|on)\s+[^,?]{{1,60}}),\s+(?P<rest>(?:{_WH}|{_AUX})\b.+)$",
    re.IGNORECASE,
)


# "Quill tasks are retried by default, so what do I gain from…?": a statement joined to the
# question by a connective is context, as a sentence before the question is; the statement
# opens with no question word and says something (two content words at least, so "OK, so
# what is …" has none). It needs no auxiliary: "Quill and Tarn both own their data, so …"
# is a statement too, and whatever comes before ", so" and a question is what it asks on.
_JOINED_STATEMENT = re.compile(
    rf"^(?P<statement>(?!(?:{_WH}|{_AUX}|{_IMPERATIVE})\b)[^,?]+?),\s+"
    rf"(?:so|but|yet|then)\s+(?P<question>(?:{_WH}|{_AUX})\b.+)$",
    re.IGNORECASE,
)


# "OK, so what is …?", "Hi, how do I …?", "Well, why …?": an interjection or greeting that opens
# a request (a closed class of English discourse markers, Schiffrin, "Discourse Markers",
# 1987) says nothing about what is asked. It is dropped when punctuation or a question word,
# an auxiliary or a request verb follows it, so "Well water …" and "So-called …" stay whole.
_OPENER = re.compile(
    r"^(?:(?:ok(?:ay)?|so|well|hi|hello|hey|um+|uh+|er+m?|oh|ah|alright|anyway)"
    r"(?:\s+(?:there|all|everyone|folks))?(?:\s*[,!.:;\u2026]+\s*|\s+[-\u2013\u2014]+\s+|\s+(?="
    rf"(?:{_WH}|{_AUX}|{_IMPERATIVE}|ok(?:ay)?|so|well)\b)))+",
    re.IGNORECASE,
)


def drop_opener(objective: str) -> str:
    """``objective`` without the interjections or greeting it opens with ("OK, so what is
    …" → "What is …"); unchanged when it has none, or when nothing would be left."""
    rest = _OPENER.sub("", objective.lstrip(), count=1)
    if not rest.strip() or rest == objective.lstrip():
        return objective
    return sentence_case(rest)


def split_context(objective: str) -> tuple[str, str]:
    """Statements before the question ("My script fails with … . What does that mean?") and
    the question itself. The statements are context every sub-question keeps, since the
    question ("what does that mean", "why") means nothing without them."""
    sentences = _SENTENCE_BREAK.split(
        _clean(objective) + ("?" if objective.rstrip().endswith("?") else "")
    )
    context: list[str] = []
    while len(sentences) > 1 and not sentences[0].rstrip().endswith("?"):
        if _QUESTION_START.match(sentences[0]):
            break
        context.append(sentences.pop(0).rstrip(" ."))
    joined = _JOINED_STATEMENT.match(sentences[0]) if len(sentences) == 1 else None
    if joined and len(content_terms(joined.group("statement"))) >= 2:
        context.append(joined.group("statement"))
        sentences = [joined.group("question")]
    return ". ".join(context), " ".join(sentences)


# "Tarn merges: how do they work?": a topic before a colon and the question about it. The
# topic is context every sub-question keeps, as a sentence before the question is, so "they"
# reads as asked in each part ("Tarn merges: why do they fail?").
_TOPIC_LEAD = re.compile(
    rf"^(?P<topic>[^:?]{{1,80}}?):\s+(?P<question>(?:{_WH}|{_AUX}|{_IMPERATIVE})\b.+)$",
    re.IGNORECASE,
)


def split_topic(asked: str) -> tuple[str, str]:
    """The topic a question opens with before a colon ("Export to CSV in Quill: are column
    names included?") and the question; no topic when there is none or it has no content
    word."""
    lead = _TOPIC_LEAD.match(asked)
    if lead is None or not content_terms(lead.group("topic")):
        return "", asked
    question = lead.group("question")
    return lead.group("topic").strip(), sentence_case(question)


# "After a checkout Quill tells me I am in 'safe mode'": a statement reporting what a program
# (or a page, a person) says is about the reported clause, and what comes before the
# reporting verb is the situation it was said in. The reported clause is the statement's
# focus (Moldovan et al., "The structure and performance of an open-domain question answering
# system", ACL 2000: a question's focus is the entity or state it asks about, and its other
# words are context); the situation still anchors the searches through the objective
# (search_queries), but repeated in front of every sub-question it outweighs the asked part
# (verbose-query reduction: Kumaran & Carvalho, "Reducing long queries using query quality
# predictors", SIGIR 2009). The reported clause must be introduced by a listener ("tells me")
# or "that" ("says that"), so "Quill says hello" is not a report.
_REPORTED = re.compile(
    r"^(?P<situation>.+?)\s+(?:tells?|told|says?|said|warns?|warned|shows?|showed|reports?|"
    r"reported|complains?|complained)\s+(?:(?:me|us|you)\s+(?:that\s+)?|that\s+)(?P<reported>\S.+)$",
    re.IGNORECASE,
)


def context_focus(context: str) -> tuple[str, str]:
    """The part of the statements before a question that every sub-question keeps, and the
    situation they were made in: "After a checkout Quill tells me I am in 'safe mode'" →
    ("I am in 'safe mode'", "After a checkout Quill tells me")."""
    match = _REPORTED.match(context)
    if not match or not content_terms(match.group("reported")):
        return context, ""
    reported = match.group("reported")
    return sentence_case(reported), match.group("situation")


def move_setting(text: str) -> str:
    """ "In Quillpad, what is X?" → "what is X in Quillpad": the setting joins the end."""
    match = _LEADING_SETTING.match(_clean(text))
    if not match:
        return text
    return f"{match.group('rest').rstrip(' ?')} {match.group('lead')[:1].lower()}{match.group('lead')[1:]}"


def split_afterword(asked: str) -> tuple[str, str]:
    """The question and the statements the asker adds after it ("What does X do? I see it in
    every tutorial."): what follows the last question mark, when it asks nothing itself (no
    question mark, no question word, auxiliary or instruction at its start). The statement is
    the asker's situation, kept in each part's rationale; asked as a part of its own it would
    become "What is known about I see …?"."""
    head, mark, tail = asked.rpartition("?")
    tail = tail.strip()
    if not mark or not tail or not content_terms(head) or _QUESTION_START.match(tail):
        return asked, ""
    return f"{head}?", tail


def with_context(
    question: SubQuestion, context: str, situation: str = "", afterword: str = ""
) -> SubQuestion:
    """``question`` led by the statements before it (``context``), with the situation they
    were said in and the asker's afterword in its rationale."""
    if not (context or afterword):
        return question
    text = question.text
    rationale = question.rationale
    if context:
        text = f"{sentence_case(context)}: {text[:1].lower()}{text[1:]}"
        if situation:
            rationale = f"{rationale} Asked in this situation: {situation}."
    if afterword:
        rationale = f"{rationale} The asker adds: {afterword}"
    return SubQuestion(text, rationale, question.priority, question.requires_primary)
