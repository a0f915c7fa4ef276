"""The verifier's side of publishing: what it is asked, and what its answer is taken to mean.

With a language model configured, a separate tool-less call judges each finding against the
excerpts it cites (:class:`~research.engine.ports.Verifier`). This module builds that request
from a report and reads the answer back defensively: the verifier is a model, and its answer
may name findings it was never shown, skip some, or repeat one. Each such lapse becomes a
sentence in :attr:`Verdicts.notes` instead of a failure, and a finding without a verdict is
left to the deterministic checks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from research.engine.citations import CitationProblem, cited_excerpts, is_valid_citation
from research.engine.contracts import (
    EXCERPT_MAX_CHARS,
    Evidence,
    Statement,
    StatementVerdict,
    Verification,
    VerificationExcerpt,
    VerificationItem,
    VerificationRequest,
)
from research.engine.ports import ModelError

# The verifier is asked about this many findings at most per report; a report has up to
# about a hundred statements, and a bounded request keeps the call's cost predictable. Findings
# beyond the bound rely on the deterministic checks, and the notes say so.
MAX_FINDINGS_PER_CALL = 60
# Stored with each verdict: enough to name a clause, bounded like the check details.
_PART_CHARS = 500

# The call itself; raises ModelError when it cannot run or its answer cannot be used.
Verify = Callable[[VerificationRequest], Verification]


def judged_key(statement: Statement) -> tuple[str, tuple[str, ...]]:
    """What a verdict is about: a finding's text and what it cites. A finding a repair left
    unchanged keeps the verdict it had."""
    return statement.text, tuple(dict.fromkeys(statement.evidence_ids))


@dataclass
class Verdicts:
    """The verifier's verdicts over the rounds of one report, by :func:`judged_key`."""

    by_key: dict[tuple[str, tuple[str, ...]], StatementVerdict] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    calls: int = 0

    def of(self, statement: Statement) -> StatementVerdict | None:
        return self.by_key.get(judged_key(statement))

    def problems(self, findings: Iterable[Statement]) -> list[CitationProblem]:
        """A repair request for each finding the verifier did not find fully supported."""
        found = []
        for statement in findings:
            verdict = self.of(statement)
            if verdict is None or verdict.verdict == "supported":
                continue
            how = "not supported" if verdict.verdict == "unsupported" else "only partly supported"
            part = f": “{verdict.unsupported_part}”" if verdict.unsupported_part else ""
            found.append(
                CitationProblem(
                    statement.claim_id,
                    f"Finding {statement.claim_id} is {how} by its cited excerpts, the verifier "
                    f"judged{part}. Restate it as the excerpts put it, or cite the excerpt that "
                    "says it.",
                )
            )
        return found

    def judge(
        self,
        findings: Iterable[Statement],
        verify: Verify,
        *,
        evidence: Mapping[str, Evidence],
        run_id: str,
    ) -> None:
        """Ask the verifier about the findings not judged yet (one call), and record what it
        answered. A call that fails leaves them unjudged, with the reason in the notes."""
        pending = [s for s in findings if self.of(s) is None]
        request = verification_request(pending, evidence=evidence, run_id=run_id)
        if request is None:
            return
        shown, skipped = request
        if skipped:
            self.notes.append(
                f"{skipped} findings were beyond the {MAX_FINDINGS_PER_CALL} the verifier is "
                "shown at once; the deterministic checks alone decided them."
            )
        self.calls += 1
        try:
            answer = verify(shown)
        except ModelError as error:
            self.notes.append(f"The verifier could not judge the findings: {error.reason}")
            return
        self._read(shown, answer, {s.claim_id: judged_key(s) for s in pending})

    def _read(
        self,
        request: VerificationRequest,
        answer: Verification,
        keys: Mapping[str, tuple[str, tuple[str, ...]]],
    ) -> None:
        asked = {item.claim_id: item for item in request.findings}
        answered: set[str] = set()
        for item in answer.verdicts:
            claim_id = " ".join(item.claim_id.split())
            if claim_id not in asked:
                self.notes.append(
                    f"The verifier answered for “{claim_id[:80]}”, which is no finding it was "
                    "shown; that verdict was ignored."
                )
                continue
            if claim_id in answered:
                self.notes.append(
                    f"The verifier judged finding {claim_id} twice; its first verdict counts."
                )
                continue
            answered.add(claim_id)
            part = " ".join(item.unsupported_part.split())
            verdict = StatementVerdict(
                verdict=item.verdict,
                unsupported_part="" if item.verdict == "supported" else part[:_PART_CHARS],
            )
            self.by_key[keys[claim_id]] = verdict
        missing = [claim_id for claim_id in asked if claim_id not in answered]
        if missing:
            self.notes.append(
                f"The verifier gave no verdict for {', '.join(missing[:10])}"
                f"{' and others' if len(missing) > 10 else ''}; the deterministic checks alone "
                "decided them."
            )


def verification_request(
    findings: Iterable[Statement], *, evidence: Mapping[str, Evidence], run_id: str
) -> tuple[VerificationRequest, int] | None:
    """The request for ``findings`` that cite valid evidence (at most
    :data:`MAX_FINDINGS_PER_CALL`), with how many were left out; None when none is left."""
    items: list[VerificationItem] = []
    skipped = 0
    for statement in findings:
        cited = [
            eid for eid in judged_key(statement)[1] if is_valid_citation(eid, evidence, run_id)
        ]
        if statement.kind != "finding" or not cited:
            continue
        if len(items) >= MAX_FINDINGS_PER_CALL:
            skipped += 1
            continue
        said = cited_excerpts(statement, evidence, run_id)
        items.append(
            VerificationItem(
                claim_id=statement.claim_id,
                text=statement.text,
                excerpts=[
                    VerificationExcerpt(evidence_id=eid, text=text[: 2 * EXCERPT_MAX_CHARS])
                    for eid, text in zip(cited, said, strict=True)
                ],
            )
        )
    if not items:
        return None
    return VerificationRequest(findings=items), skipped
