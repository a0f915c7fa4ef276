"""Passages that ask, and the passages that answer them: the question–answer structure of FAQ
and forum pages.

A FAQ entry or a forum post restates the asker's question ("Is the old entry still kept?",
"(12) I deleted a lot of data but the file did not get any smaller."), so it matches the
question best of all, yet answers nothing; its answer is the passage that follows it under
the same heading ("No. When you delete data, the unused space is kept for reuse …"). FAQ
retrieval reads such a page as question–answer pairs and matches the user's question against
the entry's question to return the entry's answer (Burke et al., "Question answering from
frequently asked question files", AI Magazine 1997; Jijkoun and de Rijke, "Retrieving answers
from frequently asked questions pages on the web", CIKM 2005): here the answer inherits the
match of the question it follows.
"""

import re
from collections.abc import Callable, Sequence

from research.engine.contracts import EXCERPT_MAX_CHARS, Evidence

# The end of a sentence: its closing mark, and any closing quotation marks or brackets.
_SENTENCE_END = re.compile(r"[.!?…][\"'”’)\]]*(?=\s|$)")
# A FAQ entry's number: "(12)", "12.", "Q12:", "Q:" opening the passage.
_ENTRY_NUMBER = re.compile(r"^\s*(?:\(\d+\)|\d+(?:\.\d+)*[.)]|Q\s*\d*\s*[:.)])\s", re.I)
# The asker's voice: a FAQ entry stated, not asked ("I deleted …", "My build fails …") is
# told in the first person; the answer addresses the asker ("you") or states the facts, and
# a numbered step of a procedure is an imperative.
_FIRST_PERSON = re.compile(r"\bI\b|\b(?i:my|me)\b")
# How far after its question an answer begins, in characters of the page's text: within one
# excerpt's length (the longest passage the selector quotes), the next block or two. What
# stands further off is another passage, not the entry's answer.
_ANSWER_REACH = EXCERPT_MAX_CHARS


def asks(text: str) -> bool:
    """Whether ``text`` ends by asking: its last sentence ends with a question mark. What
    comes before ("I ran the cleanup last month. Is the old entry still kept?") is the asker's
    setting, not an answer; a question answered in the passage ("Is it kept? Yes, 90
    days.") ends with the answer."""
    ends = [match.group(0) for match in _SENTENCE_END.finditer(text.strip())]
    return bool(ends) and ends[-1].startswith("?")


def is_echo(text: str) -> bool:
    """Whether ``text`` restates a question rather than answering one: it asks, or it is a
    numbered FAQ entry told in the asker's voice ("(12) I deleted a lot of data but …")."""
    return asks(text) or bool(_ENTRY_NUMBER.match(text) and _FIRST_PERSON.search(text))


def restates_question(item: Evidence) -> bool:
    """Whether the passage ``item`` restates a question (:func:`is_echo`). A code sample
    never does: a shell prompt or a conditional's "?" asks nothing of the reader."""
    return not item.locator.code and is_echo(item.excerpt)


def answer_pairs(
    items: Sequence[Evidence], holds_terms: Callable[[Evidence], bool]
) -> list[tuple[Evidence, Evidence]]:
    """(echo, answer) pairs among ``items``: each passage that restates a question
    (:func:`restates_question`) and the pooled passage that follows it on the same page under
    the same heading, within :data:`_ANSWER_REACH`. The answer must hold a term of the question itself
    (``holds_terms``): a byline ("asked 12 June 2023 by …") between a forum question and its
    answer answers nothing, and is passed over; so is another question."""
    pairs = []
    for echo in items:
        if not restates_question(echo):
            continue
        after = [
            item
            for item in items
            if item.source_id == echo.source_id
            and item.locator.heading == echo.locator.heading
            and echo.locator.end <= item.locator.start <= echo.locator.end + _ANSWER_REACH
            and holds_terms(item)
            and not restates_question(item)
        ]
        if after:
            pairs.append((echo, min(after, key=lambda item: item.locator.start)))
    return pairs
