"""The verifier's part in publishing a report: verdicts, repair, demotion, hostile answers.

The verifier here is a function standing in for the model call (the port's edge); the
findings and excerpts were written for these tests."""

from collections.abc import Sequence

from research.engine.citations import CitationProblem
from research.engine.contracts import (
    FindingVerdict,
    Report,
    Verification,
    VerificationRequest,
)
from research.engine.ports import ModelError
from research.engine.review import UNVERIFIED_LABEL, finalize_report
from tests.engine.factories import make_evidence

LEASE = make_evidence(
    "A worker renews its lease every 10 seconds and gives it up after 3 missed renewals.",
    source_id="s1",
)
POOL = make_evidence(
    "The pool holds at most 20 connections, and a request waits 30 seconds before it fails.",
    source_id="s2",
    start=200,
)
EVIDENCE = {item.id: item for item in (LEASE, POOL)}


def report(*statements: tuple[str, str, str]) -> Report:
    return Report.model_validate(
        {
            "title": "Workers and pools",
            "sections": [
                {
                    "id": "all",
                    "title": "All",
                    "statements": [
                        {"claim_id": c, "kind": "finding", "text": t, "evidence_ids": [e]}
                        for c, t, e in statements
                    ],
                }
            ],
        }
    )


DRAFT = report(
    ("lease", "A worker renews its lease every 10 seconds.", LEASE.id),
    ("pool", "A request waits 30 seconds before it fails.", POOL.id),
)


class Judge:
    """Answers with ``verdicts`` per claim id (supported by default) and records requests."""

    def __init__(self, verdicts: dict[str, tuple[str, str]] | None = None, extra=()) -> None:
        self.verdicts = verdicts or {}
        self.extra = list(extra)
        self.requests: list[VerificationRequest] = []

    def __call__(self, request: VerificationRequest) -> Verification:
        self.requests.append(request)
        answers = [
            FindingVerdict(
                claim_id=item.claim_id,
                verdict=self.verdicts.get(item.claim_id, ("supported", ""))[0],
                unsupported_part=self.verdicts.get(item.claim_id, ("", ""))[1],
            )
            for item in request.findings
        ]
        return Verification(verdicts=[*answers, *self.extra])


def findings(result) -> dict:
    return {s.claim_id: s for s in result.report.statements() if s.kind == "finding"}


def caveats(result) -> dict:
    return {s.claim_id: s for s in result.report.statements() if s.kind == "caveat"}


def test_supported_verdicts_are_stored_with_each_finding():
    judge = Judge()
    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE, verify=judge)
    assert {cid: s.verdict.verdict for cid, s in findings(result).items()} == {
        "lease": "supported",
        "pool": "supported",
    }
    (request,) = judge.requests
    assert [item.claim_id for item in request.findings] == ["lease", "pool"]
    assert request.findings[0].excerpts[0].text == LEASE.excerpt
    assert result.verifier_calls == 1 and not result.verifier_notes


def test_an_unsupported_finding_is_repaired_once_then_kept_as_a_labelled_caveat():
    judge = Judge({"pool": ("unsupported", "before it fails")})
    asked: list[Sequence[CitationProblem]] = []

    def repair(draft: Report, problems: Sequence[CitationProblem]) -> Report:
        asked.append(problems)
        return draft  # a stubborn writer sends the same report back

    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE, verify=judge, repair=repair)
    (problems,) = asked
    assert [p.claim_id for p in problems] == ["pool"]
    assert "not supported by its cited excerpts" in problems[0].message
    assert "“before it fails”" in problems[0].message
    caveat = caveats(result)["pool"]
    assert caveat.text.startswith(UNVERIFIED_LABEL)
    assert caveat.verdict.unsupported_part == "before it fails"
    assert caveat.evidence_ids == [POOL.id] and caveat.confidence == "low"
    assert result.unconfirmed_claim_ids == ["pool"]
    # The unchanged findings were not asked about again.
    assert len(judge.requests) == 1


def test_a_repaired_finding_is_judged_again_and_published_when_supported():
    judge = Judge({"pool": ("partially_supported", "always")})

    def repair(draft: Report, _: Sequence[CitationProblem]) -> Report:
        judge.verdicts = {}
        return report(
            ("lease", "A worker renews its lease every 10 seconds.", LEASE.id),
            ("pool", "The pool holds at most 20 connections.", POOL.id),
        )

    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE, verify=judge, repair=repair)
    assert findings(result)["pool"].verdict.verdict == "supported"
    assert [item.claim_id for item in judge.requests[1].findings] == ["pool"]


def test_a_verdict_for_an_unknown_finding_is_ignored_with_a_reason():
    judge = Judge(extra=[FindingVerdict(claim_id="made-up", verdict="unsupported")])
    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE, verify=judge)
    assert sorted(findings(result)) == ["lease", "pool"]
    assert any("“made-up”, which is no finding it was shown" in n for n in result.verifier_notes)


def test_a_missing_or_repeated_verdict_is_noted_and_the_checks_decide():
    def verify(request: VerificationRequest) -> Verification:
        return Verification(
            verdicts=[
                FindingVerdict(claim_id="lease", verdict="supported"),
                FindingVerdict(claim_id="lease", verdict="unsupported"),
            ]
        )

    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE, verify=verify)
    published = findings(result)
    assert published["lease"].verdict.verdict == "supported"
    assert published["pool"].verdict is None  # published on its deterministic checks
    assert any("judged finding lease twice" in note for note in result.verifier_notes)
    assert any("no verdict for pool" in note for note in result.verifier_notes)


def test_a_verifier_that_fails_leaves_the_findings_to_the_checks():
    def verify(_: VerificationRequest) -> Verification:
        raise ModelError("The model gave an invalid finding verification answer twice.")

    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE, verify=verify)
    assert sorted(findings(result)) == ["lease", "pool"]
    assert result.verifier_notes == [
        "The verifier could not judge the findings: The model gave an invalid finding "
        "verification answer twice."
    ]


def test_findings_failing_the_deterministic_checks_are_not_sent_to_the_verifier():
    judge = Judge()
    draft = report(
        ("lease", "A worker renews its lease every 90 seconds.", LEASE.id),
        ("pool", "A request waits 30 seconds before it fails.", POOL.id),
    )
    result = finalize_report(draft, run_id="run-1", evidence=EVIDENCE, verify=judge)
    assert [item.claim_id for item in judge.requests[0].findings] == ["pool"]
    assert caveats(result)["lease"].verdict is None


def test_without_a_verifier_no_verdict_is_stored():
    result = finalize_report(DRAFT, run_id="run-1", evidence=EVIDENCE)
    assert all(s.verdict is None for s in findings(result).values())
    assert result.verifier_calls == 0
