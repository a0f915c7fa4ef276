"""Before planning: what a research question leaves open.

With a model, one tool-less call may return up to three clarifying questions (scope, time
frame, audience, definitions) that the composer shows before planning; the person answers or
skips them, and the answers become planning input and plan assumptions.

Without a model, :func:`question_gaps` recognises three gaps by the form of the question, not
by its topic, and the composer shows them as optional hints:

* **no time frame for a recency question** — the question asks for the newest state of
  something ("latest", "current", "as of now") and names no year or period;
* **an unresolved acronym** — a word written in capitals (two to six letters, perhaps with
  digits) that the question never spells out, neither as "Long Name (LN)" nor "LN (long
  name)";
* **a comparison with one side** — the question asks to compare or contrast, or which is
  better, but names only one thing and nothing after "than".
"""

import re
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from research.engine.contracts import Contract
from research.engine.contracts.base import _Part
from research.llm.config import Phase
from research.llm.decompose import find_comparison, find_timeframe, split_parts
from research.llm.prompts import DATA_NOT_INSTRUCTIONS, Prompt, _output_rule, untrusted_block

MAX_CLARIFYING_QUESTIONS = 3
CLARIFY_ANSWER_MAX_CHARS = 500

# Words asking for the newest state of something: the general category, not any one topic.
_RECENCY = re.compile(
    r"\b(?:latest|newest|most\s+recent|recent(?:ly)?|current(?:ly)?|nowadays|right\s+now|"
    r"as\s+of\s+(?:now|today)|today|this\s+(?:year|month|week)|up[-\s]to[-\s]date|so\s+far)\b",
    re.IGNORECASE,
)
_PERIOD = re.compile(
    r"\b(?:19|20)\d{2}s?\b|\b(?:last|past|next)\s+\d+\s+(?:years?|months?|weeks?|days?)\b",
    re.IGNORECASE,
)
_ACRONYM = re.compile(r"\b([A-Z][A-Z0-9]{1,5})s?\b")
# Asking to compare, or for a judgement that needs something to compare with.
_COMPARES = re.compile(
    r"\b(?:compar\w*|contrast\w*|versus|vs\.?|better|worse|differences?|stack\s+up)\b",
    re.IGNORECASE,
)
_THAN = re.compile(r"\bthan\s+\w", re.IGNORECASE)


@dataclass(frozen=True)
class Gap:
    """Something the question leaves open, with a sentence suggesting what to add."""

    kind: Literal["time_frame", "acronym", "comparison"]
    hint: str


def _spelled_out(acronym: str, text: str) -> bool:
    letters = acronym.rstrip("0123456789")
    words = r"\s+".join(rf"{re.escape(c)}[\w-]*" for c in letters)
    defined_before = re.search(rf"{words}\s*\(\s*{re.escape(acronym)}\s*\)", text, re.IGNORECASE)
    defined_after = re.search(rf"\b{re.escape(acronym)}\s*\(\s*[^)]{{3,}}\)", text)
    return bool(defined_before or defined_after)


def question_gaps(question: str) -> list[Gap]:
    """The gaps :mod:`this module <research.llm.clarify>` recognises in ``question``."""
    gaps: list[Gap] = []
    recency = _RECENCY.search(question)
    if recency and find_timeframe(question) is None and not _PERIOD.search(question):
        gaps.append(
            Gap(
                "time_frame",
                f"“{recency.group(0)}” depends on when: name a year or period (for example "
                "“as of 2025” or “since 2022”) so sources of the right date are chosen.",
            )
        )
    seen: set[str] = set()
    for match in _ACRONYM.finditer(question):
        acronym = match.group(1)
        if acronym in seen or not re.search(r"[A-Z].*[A-Z]", acronym):
            continue
        seen.add(acronym)
        if not _spelled_out(acronym, question):
            gaps.append(
                Gap(
                    "acronym",
                    f"“{acronym}” is not spelled out; if it could mean more than one thing, "
                    "write it in full once.",
                )
            )
    if _COMPARES.search(question) and not _THAN.search(question):
        two_sides = any(find_comparison(part) for part in split_parts(question) or [question])
        if not two_sides:
            gaps.append(
                Gap(
                    "comparison",
                    "The question asks for a comparison but names one side; say what it "
                    "should be compared with.",
                )
            )
    return gaps


class ClarifyingQuestion(_Part):
    question: Annotated[str, Field(min_length=1, max_length=300)]
    about: Literal["scope", "time_frame", "audience", "definition", "other"] = "other"


class ClarifyingQuestions(Contract):
    """What the planner would like to know before planning; empty when nothing is unclear."""

    questions: Annotated[list[ClarifyingQuestion], Field(max_length=MAX_CLARIFYING_QUESTIONS)] = (
        Field(default_factory=list)
    )


_CLARIFIER_ROLE = f"""You are the planner of a deep-research service. Before a research plan is
drafted, decide whether the request is ambiguous in a way that would waste the research: its
scope, its time frame, its audience, or a term that could mean several things. You have no tools.

Rules:
- Ask at most {MAX_CLARIFYING_QUESTIONS} short questions, each answerable in one line, only about
  what changes what should be researched. Ask none when the request is clear enough.
- Never answer the request; never ask for information the request already gives."""

PHASE: Phase = "planner"


def clarifying_prompt(question: str) -> Prompt:
    """The call asking what the request leaves open (the planner's model)."""
    return Prompt(
        phase=PHASE,
        system=f"{_CLARIFIER_ROLE}\n\n{DATA_NOT_INSTRUCTIONS}\n\n{_output_rule(ClarifyingQuestions)}",
        user=f"Research request:\n{untrusted_block('REQUEST', 'request', question)}",
    )
