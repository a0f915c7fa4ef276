"""The verifier through Django, the frozen web and a scripted model that answers every call.

The writer states one finding its excerpts only partly bear out (it passes the deterministic
checks: same figures, same names, most words shared); the verifier must catch it, the repair
round must be asked for it, and it must be published only as a labelled caveat. Hostile
verifier answers (text that is no JSON, verdicts for findings that do not exist) must leave
the run completed, with the reason stated.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from research.engine.contracts import (
    Report,
    ReportSection,
    Statement,
    SynthesisRequest,
    VerificationRequest,
)
from research.engine.quoted_report import write_extractive_report
from research.engine.review import UNVERIFIED_LABEL
from research.models import ResearchRun
from tests.integration.scripted import advance, approved_run, steps
from tests.integration.test_scenarios import PLAN, report_of, researcher, script

pytestmark = pytest.mark.django_db(transaction=True)


EMBELLISHMENT = ", the busiest of any new line in the country"


def _embellishing_writer(request: SynthesisRequest) -> Report:
    """Each question's first excerpt as a finding; the first one with a clause added that no
    excerpt says. Asked to repair, it sends the same report again."""
    statements = []
    for question in request.plan.questions:
        item = next(e for e in request.evidence if question.id in e.question_ids)
        text = item.excerpt.rstrip(".")
        if not statements:
            text += EMBELLISHMENT
        statements.append(
            Statement(
                claim_id=f"{question.id}-finding",
                kind="finding",
                text=text + ".",
                evidence_ids=[item.id],
            )
        )
    return Report(
        title=request.plan.objective[:300],
        sections=[ReportSection(id="all", title="Findings", statements=statements)],
        gaps=list(request.gaps),
        partial=request.partial,
    )


def _judge(request: VerificationRequest) -> str:
    """A verifier answering in the wire format (JSON text): the embellished finding is
    partly supported, everything else supported."""
    verdicts = [
        {"claim_id": item.claim_id, "verdict": "partially_supported", "unsupported_part": part}
        if (part := EMBELLISHMENT.strip(", ")) in item.text
        else {"claim_id": item.claim_id, "verdict": "supported"}
        for item in request.findings
    ]
    return json.dumps({"verdicts": verdicts})


def _run(owner, model) -> ResearchRun:
    run = advance(approved_run(owner, model, PLAN))
    assert run.status == "completed", (run.status, run.last_error)
    return run


def test_a_finding_the_verifier_does_not_confirm_is_repaired_once_then_a_caveat(
    owner, model, frozen
):
    script(model, researcher(), synthesize=_embellishing_writer)
    model.rule("verifier", _judge)
    run = _run(owner, model)

    statements = {s.claim_id: s for s in report_of(run).statements()}
    caveat = statements["q1-finding"]
    assert caveat.kind == "caveat" and caveat.text.startswith(UNVERIFIED_LABEL)
    assert caveat.verdict.verdict == "partially_supported"
    assert caveat.verdict.unsupported_part == EMBELLISHMENT.strip(", ")
    assert all(check.passed for check in caveat.checks)  # only the verifier caught it
    published = statements["q2-finding"]
    assert published.kind == "finding" and published.verdict.verdict == "supported"

    first, repair = model.calls_for("synthesizer")
    assert any("only partly supported" in problem for problem in repair.request.problems)
    # The unchanged findings were judged once; the verifier saw its excerpts in envelopes.
    (judged,) = model.calls_for("verifier")
    assert "<<<UNTRUSTED_EVIDENCE" in judged.prompt.user
    (synthesis,) = steps(run, "synthesize")
    assert "1 not confirmed by the verifier" in synthesis.summary
    assert run.usage["model_calls"] >= 5  # planner, decider, extractor, 2 × synthesis, verifier


def test_verdicts_are_shown_on_the_report_in_the_evidence_panel_api_and_admin(
    owner, staff, model, frozen, client
):
    script(model, researcher(), synthesize=_embellishing_writer)
    model.rule("verifier", _judge)
    run = _run(owner, model)
    report = report_of(run)
    published = next(s for s in report.statements() if s.kind == "finding")

    client.force_login(owner)
    page = client.get(reverse("research:run_report", args=[run.pk])).content.decode()
    assert "Verifier: supported by its excerpts." in page
    assert "Verifier: partially supported by its excerpts; not borne out: “" in page

    panel = client.get(
        reverse("research:evidence_detail", args=[run.pk, published.evidence_ids[0]])
    ).content.decode()
    assert "Cited by" in panel and "Verifier: supported by its excerpts." in panel

    body = client.get(f"/api/v1/runs/{run.pk}/report").json()
    verdicts = [
        s.get("verdict") for section in body["report"]["sections"] for s in section["statements"]
    ]
    assert {"verdict": "supported", "unsupported_part": ""} in verdicts

    client.force_login(staff)
    admin = client.get(reverse("admin:research_researchrun_change", args=[run.pk]))
    assert admin.status_code == 200
    assert "partially supported — not borne out: “" in admin.content.decode()


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("The findings all look right to me.", "The scripted verifier answer is invalid"),
        (
            json.dumps({"verdicts": [{"claim_id": "no-such-finding", "verdict": "unsupported"}]}),
            "“no-such-finding”, which is no finding it was shown",
        ),
    ],
)
def test_a_hostile_verifier_answer_is_survived_with_a_clear_reason(
    owner, model, frozen, answer, reason
):
    script(model, researcher())
    model.rule("verifier", lambda _: answer)
    run = _run(owner, model)

    report = report_of(run)
    findings = [s for s in report.statements() if s.kind == "finding"]
    assert findings and all(s.verdict is None for s in findings)
    assert any(reason in line for line in report.methodology)
    (synthesis,) = steps(run, "synthesize")
    assert reason in synthesis.summary


def test_a_report_of_quotations_is_not_sent_to_the_verifier(owner, model, frozen):
    # The scripted writer hands back an extractive report: quotations need no verifier.
    script(model, researcher(), synthesize=write_extractive_report)
    model.rule("verifier", _judge)
    run = _run(owner, model)
    assert not model.calls_for("verifier")
    assert all(s.verdict is None for s in report_of(run).statements())


# Paraphrases of the excerpts this run verifies, written for this test: reordered words, other
# number formats (48200, 48.2 thousand, 35%, 1.82 billion dollars), parts of a sentence.
PARAPHRASES = {
    "fourth quarter of 2023": [
        "The five new stations recorded an average of 48200 boardings per weekday in the fourth "
        "quarter of 2023.",
        "An average of 48,200 boardings per weekday was recorded by the five new stations in the "
        "fourth quarter of 2023.",
        "From October to December 2023 the five new stations averaged 48,200 boardings per "
        "weekday.",
        "In the fourth quarter of 2023 the new stations recorded 48.2 thousand boardings per "
        "weekday on average.",
        "The five new stations recorded, on average, 48,200 weekday boardings in the fourth "
        "quarter of 2023.",
    ],
    "newest Metro stations": [
        "Harwick's newest Metro stations handled 48,200 boardings each weekday on average in the "
        "last three months of 2023.",
        "In the last three months of 2023 an average of 48,200 boardings each weekday were "
        "handled by Harwick's newest Metro stations.",
        "Harwick's newest Metro stations averaged 48200 boardings each weekday in the last three "
        "months of 2023.",
        "Each weekday in the last three months of 2023, the newest Metro stations in Harwick "
        "handled 48,200 boardings on average.",
        "The newest Metro stations of Harwick handled an average of 48.2 thousand weekday "
        "boardings in the last three months of 2023.",
    ],
    "$1.82 billion": [
        "It cost $1.82 billion to build.",
        "Building it cost $1.82 billion, about 35 per cent more than the $1.35 billion "
        "councillors approved in 2017.",
        "The $1.82 billion it cost to build was about 35% more than the $1.35 billion "
        "councillors approved in 2017.",
        "Councillors approved $1.35 billion in 2017; it cost $1.82 billion to build.",
        "It cost 1.82 billion dollars to build.",
    ],
    "$2.11 billion": [
        "Add that and you get $2.11 billion.",
        "The council signed off $1.35 billion in 2017.",
        "With that added you get $2.11 billion, more than half as much again as the $1.35 "
        "billion the council signed off in 2017.",
        "In 2017 the council signed off $1.35 billion; add that and you get $2.11 billion.",
        "Add that and the total is $2.11 billion, over half as much again as the council's "
        "$1.35 billion of 2017.",
    ],
}


def _paraphrasing_writer(request: SynthesisRequest) -> Report:
    statements = []
    for marker, texts in PARAPHRASES.items():
        item = next(e for e in request.evidence if marker in e.excerpt)
        statements += [
            Statement(
                claim_id=f"p{len(statements) + n}", kind="finding", text=t, evidence_ids=[item.id]
            )
            for n, t in enumerate(texts, start=1)
        ]
    return Report(
        title=request.plan.objective[:300],
        sections=[ReportSection(id="all", title="Findings", statements=statements)],
        gaps=list(request.gaps),
        partial=request.partial,
    )


def test_correct_paraphrases_are_published_as_findings(owner, model, frozen):
    script(model, researcher(), synthesize=_paraphrasing_writer)
    run = _run(owner, model)

    statements = report_of(run).statements()
    kept = [s for s in statements if s.claim_id.startswith("p") and s.kind == "finding"]
    written = sum(len(texts) for texts in PARAPHRASES.values())
    assert len(kept) / written >= 0.95, [s.text for s in statements if s.kind == "caveat"]
