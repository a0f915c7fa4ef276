"""Questions about one report version, answered from its frozen evidence alone.

When a report is saved, the program freezes what it was written from — the report, every
verified excerpt of the run with its locator, the sources those excerpts come from and the
map of which statement cites which excerpt — as one :class:`FrozenEvidence` record whose
identity is the SHA-256 of its canonical JSON (:func:`frozen_digest`). Later research never
changes that record; a question about the version is answered from it and nothing else.

An answer is a list of statements shaped like a report's, checked the way report findings are
(:func:`research.engine.review.finalize_report` with :mod:`research.engine.support`): a
finding its excerpts do not bear out, or one citing nothing, is kept only as a labelled
caveat. A citation of any evidence id that is not in the frozen record — another run's, or one
the run found after this version was written — is not repaired: the whole answer is refused
(:class:`AnswerRefused`), because a model that reaches outside what it was given cannot be
trusted with the rest of its answer either.
"""

import hashlib
import json
from typing import Annotated, Literal

from pydantic import Field

from research.engine.contracts import Contract, Evidence, Report, ReportSection, Statement
from research.engine.contracts.base import _Part
from research.engine.review import MISMATCH_LABEL, UNSUPPORTED_LABEL, finalize_report

QUESTION_MAX_CHARS = 1000
# What one answer may hold: enough statements to answer a follow-up, few enough to read.
ANSWER_MAX_STATEMENTS = 8
NOT_ANSWERED = "The report's evidence does not answer this."
# How a sentence the checks did not accept begins (research/engine/citations.py).
UNSUPPORTED_LABEL_PREFIXES = (UNSUPPORTED_LABEL, MISMATCH_LABEL)


class FrozenSource(_Part):
    """What a reader needs to know about where a frozen excerpt comes from."""

    id: str
    title: str = ""
    url: str = ""
    domain: str = ""


class FrozenEvidence(Contract):
    """One report version and everything it was written from, as it was then."""

    run_id: str
    report: Report
    evidence: list[Evidence] = Field(default_factory=list)
    sources: list[FrozenSource] = Field(default_factory=list)
    # claim id → the evidence ids that statement cites.
    citations: dict[str, list[str]] = Field(default_factory=dict)

    def evidence_by_id(self) -> dict[str, Evidence]:
        return {item.id: item for item in self.evidence}

    def source_by_id(self) -> dict[str, FrozenSource]:
        return {source.id: source for source in self.sources}


def citation_map(report: Report) -> dict[str, list[str]]:
    """Which evidence each statement of ``report`` cites, by claim id."""
    return {s.claim_id: list(s.evidence_ids) for s in report.statements() if s.evidence_ids}


def frozen_digest(content: FrozenEvidence) -> str:
    """The content address of a frozen record: SHA-256 of its canonical JSON."""
    canonical = json.dumps(
        content.model_dump(mode="json"), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class AnswerDraft(Contract):
    """What an answerer proposes: statements citing frozen evidence ids, and whether the
    evidence answers the question at all."""

    answerable: bool
    statements: Annotated[list[Statement], Field(max_length=ANSWER_MAX_STATEMENTS)] = Field(
        default_factory=list
    )


class Answer(Contract):
    """A checked answer. ``answerable`` is false when no finding survived the checks."""

    answerable: bool
    statements: list[Statement] = Field(default_factory=list)
    mode: Literal["extractive", "model"] = "extractive"
    demoted: int = 0


class AnswerRefused(Exception):
    """The answer cited evidence outside the frozen record; it is not kept."""


def validate_answer(
    draft: AnswerDraft, *, frozen: FrozenEvidence, mode: Literal["extractive", "model"]
) -> Answer:
    """Check ``draft`` against ``frozen`` exactly as report findings are checked.

    Raises :class:`AnswerRefused` when any statement cites an id the frozen record does not
    hold. Otherwise unsupported findings become labelled caveats and the answer counts as
    answered only when at least one finding remains.
    """
    known = frozen.evidence_by_id()
    outside = sorted({eid for s in draft.statements for eid in s.evidence_ids if eid not in known})
    if outside:
        shown = ", ".join(outside[:3]) + (" …" if len(outside) > 3 else "")
        raise AnswerRefused(
            f"The answer cited evidence that is not part of this report version ({shown}), "
            "so it was refused. Retry to ask again."
        )
    if not draft.statements:
        return Answer(answerable=False, mode=mode)
    wrapper = Report(
        title="Answer",
        sections=[ReportSection(id="answer", title="Answer", statements=draft.statements)],
        mode=mode,
    )
    validated = finalize_report(wrapper, run_id=frozen.run_id, evidence=known)
    statements = validated.report.statements()
    has_finding = any(s.kind == "finding" for s in statements)
    return Answer(
        answerable=draft.answerable and has_finding,
        statements=statements,
        mode=mode,
        demoted=len(validated.demoted_claim_ids),
    )
