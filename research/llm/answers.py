"""Answering a question about a report from its frozen evidence: with a model or without one.

Without a model the answer is extractive: the frozen excerpts are laid out as the blocks of one
document and ranked against the question by the same passage selection that picks evidence from
a page (:func:`research.llm.selection.select_passages`: BM25 with idf-weighted coverage of the
question's terms, a minimum relevance, near-duplicates spread out). Each chosen passage is an
exact span of one excerpt and is quoted as a finding citing that excerpt. No passage reaching
the minimum relevance means the evidence does not answer the question.

With a model the answer comes from one tool-less call that sees the question, the earlier
turns of the topic, the report's statements and the frozen excerpts as sealed untrusted data,
and returns an :class:`~research.engine.answers.AnswerDraft`; the program checks it
(:func:`research.engine.answers.validate_answer`).
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass

from research.engine.answers import ANSWER_MAX_STATEMENTS, AnswerDraft, FrozenEvidence
from research.engine.contracts import Block, Statement
from research.llm.prompts import DATA_NOT_INSTRUCTIONS, Prompt, _output_rule, untrusted_block
from research.llm.selection import QuestionText, select_passages

# Quotations per extractive answer: a follow-up wants the few best passages, not a report.
EXTRACTIVE_QUOTES = 3
# Passages the selector proposes before the answer keeps its EXTRACTIVE_QUOTES most relevant:
# the selector spreads a small pick over different passages (MMR), which serves a report's
# breadth; a follow-up asks one narrow thing, so its quotes are the most relevant, with only
# near-duplicates left out. Twelve is the selector's per-page pick (the orchestrator's
# extraction limit), so every passage it would quote from one page is a candidate.
ANSWER_CANDIDATES = 12
_SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Turn:
    """An earlier question of the topic and the text of its answer."""

    question: str
    answer: str


def extractive_answer(frozen: FrozenEvidence, question: str) -> AnswerDraft:
    """Quote the frozen passages that best answer ``question``; none when nothing is relevant."""
    items = [item for item in frozen.evidence if item.excerpt.strip()]
    if not items:
        return AnswerDraft(answerable=False)
    starts: list[int] = []
    blocks: list[Block] = []
    position = 0
    for item in items:
        starts.append(position)
        blocks.append(Block(start=position, end=position + len(item.excerpt)))
        position += len(item.excerpt) + len(_SEPARATOR)
    text = _SEPARATOR.join(item.excerpt for item in items)
    passages = select_passages(
        text,
        [QuestionText(id="asked", text=question)],
        title=frozen.report.title,
        max_items=ANSWER_CANDIDATES,
        blocks=blocks,
    )
    # The most relevant of the candidates, in the order the evidence holds them on a tie.
    passages = sorted(passages, key=lambda passage: -passage.relevance)[:EXTRACTIVE_QUOTES]
    statements = []
    for number, passage in enumerate(passages, start=1):
        owner = max(i for i, start in enumerate(starts) if start <= passage.start)
        quoted = " ".join(text[passage.start : passage.end].split())
        statements.append(
            Statement(
                claim_id=f"a{number}",
                kind="finding",
                text=f"\u201c{quoted}\u201d"[:4000],
                evidence_ids=[items[owner].id],
                confidence="medium",
            )
        )
    return AnswerDraft(answerable=bool(statements), statements=statements)


_ANSWERER_ROLE = f"""You answer a reader's follow-up question about one research report. You have
no tools and no other knowledge: only the report's statements and the verified evidence cards it
was written from.

Rules:
- Answer only from the evidence cards. A "finding" states a fact and lists in evidence_ids the ids
  of the cards that say it (at least one). An "analysis" draws a conclusion from findings. A
  "caveat" states a limitation.
- Cite only ids that appear on the evidence cards. Never write URLs, links or citation marks.
- When the cards do not answer the question, set answerable to false and say in one caveat what
  is missing; do not answer from memory.
- At most {ANSWER_MAX_STATEMENTS} statements; claim ids unique."""


def answer_prompt(frozen: FrozenEvidence, question: str, history: Sequence[Turn] = ()) -> Prompt:
    """The answering call: question, earlier turns, report statements and evidence cards."""
    statements = [
        {"claim_id": s.claim_id, "kind": s.kind, "text": s.text, "evidence_ids": s.evidence_ids}
        for s in frozen.report.statements()
    ]
    cards = [
        {"id": item.id, "source_id": item.source_id, "excerpt": item.excerpt}
        for item in frozen.evidence
    ]
    earlier = [{"question": turn.question, "answer": turn.answer} for turn in history]
    parts = [
        f"Question:\n{untrusted_block('QUESTION', 'question', question)}",
        f"Earlier turns of this topic:\n{untrusted_block('HISTORY', 'turns', _json(earlier))}",
        f"Report statements:\n{untrusted_block('REPORT', 'report', _json(statements))}",
        f"Evidence cards (untrusted excerpts):\n{untrusted_block('EVIDENCE', 'cards', _json(cards))}",
    ]
    return Prompt(
        phase="synthesizer",
        system=f"{_ANSWERER_ROLE}\n\n{DATA_NOT_INSTRUCTIONS}\n\n{_output_rule(AnswerDraft)}",
        user="\n\n".join(parts),
    )


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)
