"""Asking a finished run's report a follow-up question, without a model, and scoring the answer.

For each answerable task with gold facts, the follow-up is derived from the first gold fact
that the report version's frozen evidence states (so its answer is in that evidence): the
fact's description with its answer masked — every literal variant of the fact and every
number replaced by "…" — asked as "Which passage of the evidence says …?", the "which source
says that?" question readers ask of a report. The question is answered exactly as the
Questions tab answers it without a model (``research.worker.answers.compose_answer``: passage
ranking over the frozen excerpts, then the report-finding checks), and it counts as answered
when the quoted passages state the gold fact. Tasks whose frozen evidence states none of their
gold facts have no follow-up and are counted apart.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from evals.matching import states_fact
from evals.taskset import GoldFact, Task
from research.engine.answers import AnswerRefused, FrozenEvidence

# Figures in a description: "48,200", "1.82", "10", "2023".
_NUMBER = re.compile(r"\d[\d,.]*")
MASK = "…"


@dataclass(frozen=True)
class FollowUp:
    """One task's follow-up question and whether its answer quoted the gold fact."""

    task_id: str
    question: str
    fact_id: str
    answered: bool
    quoted: bool


def follow_up_question(fact: GoldFact) -> str:
    """The fact's description with its answer masked, asked as a follow-up."""
    text = fact.description
    for variant in sorted(fact.any_of, key=len, reverse=True):
        text = re.sub(re.escape(variant), MASK, text, flags=re.IGNORECASE)
    text = _NUMBER.sub(MASK, text).strip().rstrip(".")
    return f"Which passage of the evidence says {text}?"


def _evidence_fact(task: Task, frozen: FrozenEvidence) -> GoldFact | None:
    evidence_text = "\n".join(item.excerpt for item in frozen.evidence)
    return next((fact for fact in task.gold_facts if states_fact(evidence_text, fact)), None)


def ask_follow_up(task: Task, frozen: FrozenEvidence | None) -> FollowUp | None:
    """Ask and score ``task``'s follow-up; None when the task has none (see the module)."""
    from research.worker.answers import answer_text, compose_answer

    if frozen is None or not task.answerable or not task.gold_facts:
        return None
    fact = _evidence_fact(task, frozen)
    if fact is None:
        return None
    question = follow_up_question(fact)
    try:
        answer = compose_answer(frozen, question, [], None)
    except AnswerRefused:
        return FollowUp(task.id, question, fact.id, answered=False, quoted=False)
    quoted = answer.answerable and states_fact(answer_text(answer), fact)
    return FollowUp(task.id, question, fact.id, answered=answer.answerable, quoted=quoted)


def follow_up_totals(tasks: int, follow_ups: Sequence[FollowUp | None]) -> dict[str, object]:
    """Aggregates over one set: how many tasks had a follow-up, and the share answered with
    the gold fact quoted."""
    asked = [item for item in follow_ups if item is not None]
    quoted = sum(1 for item in asked if item.quoted)
    return {
        "tasks": tasks,
        "asked": len(asked),
        "answered": sum(1 for item in asked if item.answered),
        "quoted_gold_fact": quoted,
        "quoted_rate": quoted / len(asked) if asked else None,
    }


def follow_up_line(totals: dict[str, object]) -> str:
    rate = totals["quoted_rate"]
    shown = "—" if rate is None else f"{float(rate) * 100:.0f}%"  # type: ignore[arg-type]
    return (
        f"follow-up questions (extractive answers from the frozen evidence): "
        f"{totals['asked']} of {totals['tasks']} tasks had the answer in their evidence; "
        f"{totals['quoted_gold_fact']} answered with the gold fact quoted ({shown}), "
        f"{totals['answered']} answered at all"
    )
