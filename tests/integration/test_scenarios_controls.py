"""Research scenarios through Django, the frozen local web and a scripted model: decisions that
fail, budgets that run out, a failed synthesis, pause, refine, resume and cancel, and findings
their excerpts do not bear out.

Each test runs the real actor, store, web adapter and safe fetcher against loopback servers;
only the model answers from a script. Assertions are on the durable record — run, steps,
sources, evidence, report — and on what the web servers saw.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from django.urls import reverse

from research import services
from research.engine.citations import render_markdown
from research.engine.contracts import (
    Report,
    ReportSection,
    ResearchBrief,
    ResearchDecision,
    SearchAction,
    Statement,
    SynthesisRequest,
)
from research.engine.ports import ModelError
from research.models import ResearchEvidence, ResearchRun
from tests.integration.scripted import (
    QuoteTable,
    Researcher,
    advance,
    approved_run,
    make_plan,
    quote,
    read_urls,
    searched,
    source_summaries,
    steps,
)
from tests.integration.test_scenarios import (
    OBJECTIVE,
    PLAN,
    Q1,
    Q1_QUERY,
    Q2_QUERY,
    QUOTES,
    TRANSIT,
    TRANSIT_PAGE,
    WANTED,
    cited_ids,
    evidence_of,
    report_of,
    researcher,
    script,
)

pytestmark = pytest.mark.django_db(transaction=True)


NOT_JSON = 'Sure! Here is my decision: {"actions": [{"type": "search", "query": '


def test_an_invalid_decision_is_asked_again_once_and_research_goes_on(owner, model, frozen):
    decider = researcher()
    script(model, decider)
    model.queue("decider", NOT_JSON)
    run = approved_run(owner, model, PLAN)
    run = advance(run)

    # The orchestrator asks the decider once more; the second answer is used and the run
    # completes. The failed answer leaves no step behind: only decisions that were used are
    # recorded, one per iteration.
    assert run.status == "completed", (run.status, run.last_error)
    decisions = [s for s in steps(run, "decide") if not s.input["payload"].get("refused")]
    assert [s.iteration for s in decisions] == list(range(len(decisions)))
    assert len(model.calls_for("decider")) == len(decisions) + 1
    assert len(decider.briefs) == len(decisions)  # the rule answered all but the first call
    assert run.working_state["invalid_decisions"] == 0
    assert searched(run)[0] == Q1_QUERY
    # The invalid answer was a model call too, and the budget must count it.
    assert run.usage["model_calls"] == len(model.calls)


def test_a_decider_answering_nonsense_twice_ends_research_with_a_partial_report(
    owner, model, frozen
):
    script(model, researcher())
    model.queue("decider", NOT_JSON, "[]")
    run = approved_run(owner, model, PLAN)
    run = advance(run)

    assert run.status == "budget_exhausted", (run.status, run.last_error)
    assert run.working_state["stop_reason"] == "invalid_decisions"
    assert run.working_state["invalid_decisions"] == 1
    assert len(model.calls_for("decider")) == 2
    assert not steps(run, "search") and frozen.requests == []
    report = report_of(run)
    assert report.partial
    assert any("could not be used" in line for line in report.methodology)
    assert "twice returned decisions that could not be used" in run.terminal_reason


def test_a_decision_that_failed_is_a_failed_step_in_the_timeline(owner, model, frozen, client):
    script(model, researcher())
    model.queue("decider", NOT_JSON, "[]")
    run = approved_run(owner, model, PLAN)
    run = advance(run)

    (failed,) = [s for s in steps(run, "decide") if s.status == "failed"]
    assert failed.iteration == 0
    assert failed.error.startswith(
        "The decision model twice returned decisions that could not be used: "
        "The scripted decider answer is invalid:"
    )
    assert failed.usage["model_calls"] == 2
    client.force_login(owner)
    html = client.get(reverse("research:run_timeline", args=[run.pk]), HTTP_HX_REQUEST="true")
    row = re.search(
        rf'<li class="step step-failed" id="step-{failed.pk}">.*?</li>', html.text, re.S
    )
    assert row is not None
    assert "Choosing what to search and read next" in row.group(0)
    assert "twice returned decisions that could not be used" in row.group(0)
    assert run.outcome.label == "Partial: unusable decisions"


def test_budget_exhaustion_gives_a_clearly_partial_report(owner, model, frozen):
    script(model, researcher())
    run = approved_run(owner, model, PLAN, budget={"searches": 1, "fetched_sources": 1})
    run = advance(run)

    assert run.status == "budget_exhausted", (run.status, run.last_error)
    assert run.usage["searches"] == 1 and run.usage["fetched_sources"] == 1
    assert run.terminal_reason == "A partial report was written: The research budget is used up."
    report = report_of(run)
    assert report.partial
    assert [gap.question_id for gap in report.gaps if gap.question_id] == ["q2"]
    evidence = evidence_of(run)
    markdown = render_markdown(report, evidence=evidence, sources=source_summaries(run))
    assert "This is a partial report" in markdown
    assert cited_ids(report) and set(cited_ids(report)) <= set(evidence)
    # Research stopped before asking the decider for actions it could not afford.
    assert run.working_state["stop_reason"] == "budget_exhausted"
    assert len(model.calls_for("decider")) == 2


def test_more_budget_lets_an_exhausted_run_research_on(owner, model, frozen):
    script(model, researcher())
    run = approved_run(owner, model, PLAN, budget={"searches": 1, "fetched_sources": 1})
    run = advance(run)
    assert run.status == "budget_exhausted"

    run = services.budget_increase(run=run, factor=2)
    assert run.status == "queued"
    run = advance(run)

    assert run.usage["searches"] > 1, run.budget
    assert Q2_QUERY in searched(run)


def test_a_failed_synthesis_is_retried_from_stored_evidence(owner, model, frozen):
    script(model, researcher())
    model.queue("synthesizer", ModelError("The model endpoint timed out.", retryable=True))
    run = approved_run(owner, model, PLAN)
    run = advance(run)

    assert run.status == "failed"
    assert run.resume_phase == "synthesizing"
    assert run.last_error == "The report could not be written: The model endpoint timed out."
    assert run.report is None
    record = (
        len(frozen.requests),
        len(steps(run)),
        ResearchEvidence.objects.filter(run=run).count(),
    )

    run = services.run_retry(run=run)
    assert run.status == "synthesizing"
    run = advance(run)

    assert run.status == "completed", (run.status, run.last_error)
    assert record == (
        len(frozen.requests),
        len(steps(run)),
        ResearchEvidence.objects.filter(run=run).count(),
    )
    (synthesis,) = steps(run, "synthesize")
    assert (synthesis.status, synthesis.attempt) == ("succeeded", 2)
    assert len(model.calls_for("synthesizer")) == 2
    assert set(cited_ids(report_of(run))) <= set(evidence_of(run))


def _press(control: Callable[..., object], run_id: object) -> Callable[[], None]:
    """A person pressing ``control`` on the run (from inside a model call, so mid-work)."""

    def press() -> None:
        control(run=ResearchRun.objects.get(pk=run_id))

    return press


def test_pause_then_resume_continues_without_repeating_work(owner, model, frozen):
    decider = researcher()
    script(model, decider)
    run = approved_run(owner, model, PLAN)
    decider.hooks[1] = _press(services.run_pause, run.pk)
    run = advance(run)

    # The read decided in that iteration finishes; then the worker pauses at a boundary.
    assert run.status == "paused", (run.status, run.last_error)
    assert run.resume_phase == "researching" and not run.pause_requested
    assert read_urls(run) == [frozen.url(TRANSIT_PAGE, host=TRANSIT)]
    assert not [s for s in steps(run) if s.status in ("pending", "running")]
    before = {s.dedupe_key for s in steps(run)}

    run = services.run_resume(run=run)
    run = advance(run)

    assert run.status == "completed", (run.status, run.last_error)
    assert before <= {s.dedupe_key for s in steps(run)}
    assert searched(run).count(Q1_QUERY) == 1
    assert read_urls(run).count(frozen.url(TRANSIT_PAGE, host=TRANSIT)) == 1
    assert min(s.iteration for s in steps(run) if s.dedupe_key not in before) >= 2


def test_pause_refine_approve_resume(owner, model, frozen):
    decider = Researcher(
        queries={"q1": Q1_QUERY, "q2": Q2_QUERY, "q3": "Line 3 extension opening date passengers"},
        wanted={**WANTED, "q3": ("HRTA Annual Report", "Frozenpedia")},
    )
    opening = "When did the Line 3 extension open to passengers?"
    script(model, decider)
    model.rule(
        "extractor",
        QuoteTable(
            [
                *QUOTES,
                quote(
                    "Trains began carrying passengers between Eastgate and Corran Fields on "
                    "14 September 2023",
                    "q3",
                ),
                quote(
                    "The Line 3 extension from Eastgate to Corran Fields opened on "
                    "14 September 2023",
                    "q3",
                ),
            ]
        ),
    )
    run = approved_run(owner, model, PLAN)
    # Pause while the iteration reading the cost sources is being decided.
    decider.hooks[3] = _press(services.run_pause, run.pk)
    run = advance(run)
    assert run.status == "paused", (run.status, run.last_error)
    cost_evidence = {
        item.pk for item in ResearchEvidence.objects.filter(run=run) if "q2" in item.question_ids
    }
    assert cost_evidence

    # Refine: the planner revises the plan (cost out, opening date in); back to approval.
    revised = make_plan(OBJECTIVE, ("q1", Q1), ("q3", opening))
    model.queue("planner", revised)
    run = services.run_refine(run=run, instruction="Drop the cost; when did it open?", user=owner)
    run = advance(run)
    assert run.status == "awaiting_approval", (run.status, run.last_error)
    assert run.plan_version == 2 and run.refinement_instruction == ""
    revision = model.calls_for("planner")[-1].request
    assert revision.refinement == "Drop the cost; when did it open?"
    assert revision.previous_plan is not None and revision.previous_plan.question_ids == [
        "q1",
        "q2",
    ]
    # Evidence outside the new scope is kept for audit but marked out of scope.
    for item in ResearchEvidence.objects.filter(pk__in=cost_evidence):
        assert item.out_of_scope

    # Approving the version the user saw resumes research; a stale approval is refused.
    with pytest.raises(services.PlanVersionConflict):
        services.plan_approve(run=run, expected_version=1)
    run = services.plan_approve(run=run, expected_version=2)
    run = advance(run)

    assert run.status == "completed", (run.status, run.last_error, run.terminal_reason)
    assert searched(run).count(Q1_QUERY) == 1  # earlier work is not redone
    report = report_of(run)
    assert [section.id for section in report.sections] == ["q1", "q3"]
    assert not set(cited_ids(report)) & cost_evidence
    assert len([s for s in steps(run, "plan") if s.status == "succeeded"]) == 2


def test_cancel_stops_at_a_boundary_cancels_pending_steps_and_writes_no_report(
    owner, model, frozen
):
    run_ids: list[object] = []

    def three_searches_then_cancel(brief: ResearchBrief) -> ResearchDecision:
        _press(services.run_cancel, run_ids[0])()
        return ResearchDecision(
            actions=[
                SearchAction(query=query, question_ids=["q1"], rationale="Look around.")
                for query in (Q1_QUERY, Q2_QUERY, "Harwick Metro annual report 2023")
            ]
        )

    script(model, researcher())
    model.rule("decider", three_searches_then_cancel)
    run = approved_run(owner, model, PLAN)
    run_ids.append(run.pk)
    run = advance(run)

    assert run.status == "cancelled", (run.status, run.last_error)
    assert run.report is None and not steps(run, "synthesize")
    # Two searches ran in the first round; the third was still pending and is cancelled.
    searches = steps(run, "search")
    assert [s.status for s in searches] == ["succeeded", "succeeded", "cancelled"]
    assert len(frozen.requests_to("/search")) == 2
    assert not [s for s in steps(run) if s.status in ("pending", "running")]
    assert len(model.calls_for("decider")) == 1 and not model.calls_for("synthesizer")
    assert not run.lease_owner


# Each mutation of a real excerpt the run verified: (kind, question, old text, new text).
MUTATIONS = [
    ("wrong number", "q1", "48,200", "84,200"),
    ("wrong year", "q1", "2023", "2022"),
    ("flipped negation", "q1", "recorded", "never recorded"),
    ("swapped entity", "q1", "Harwick's", "Brantford's"),
    ("wrong unit", "q2", "$1.82 billion", "€1.82 billion"),
    ("flipped comparison", "q2", "35 per cent more", "35 per cent less"),
]


def _stubborn_writer(request: SynthesisRequest) -> Report:
    """A model that states mutated versions of the excerpts, an unrelated citation and a
    statement with an address and a citation marker of its own; asked to repair, it sends
    the same report again."""
    by_question = {
        question.id: [e for e in request.evidence if question.id in e.question_ids]
        for question in request.plan.questions
    }
    statements = []
    for kind, question_id, old, new in MUTATIONS:
        item = next(e for e in by_question[question_id] if old in e.excerpt)
        statements.append(
            Statement(
                claim_id=kind.replace(" ", "-"),
                kind="finding",
                text=item.excerpt.replace(old, new),
                evidence_ids=[item.id],
            )
        )
    boardings, cost = by_question["q1"][0], by_question["q2"][0]
    statements += [
        Statement(
            claim_id="unrelated-excerpt",
            kind="finding",
            text=boardings.excerpt,
            evidence_ids=[cost.id],
        ),
        Statement(
            claim_id="address-and-marker",
            kind="finding",
            text=f"{cost.excerpt} See http://evil.example/x for more [3].",
            evidence_ids=[cost.id],
        ),
        Statement(
            claim_id="faithful",
            kind="finding",
            text=boardings.excerpt,
            evidence_ids=[boardings.id],
        ),
    ]
    return Report(
        title=request.plan.objective[:300],
        sections=[ReportSection(id="all", title="Findings", statements=statements)],
        gaps=list(request.gaps),
        partial=request.partial,
    )


def test_findings_their_excerpts_do_not_bear_out_are_never_published(owner, model, frozen):
    script(model, researcher(), synthesize=_stubborn_writer)
    run = advance(approved_run(owner, model, PLAN))
    assert run.status == "completed", (run.status, run.last_error)

    report = report_of(run)
    findings = {s.claim_id: s for s in report.statements() if s.kind == "finding"}
    assert sorted(findings) == ["address-and-marker", "faithful"]
    assert "http" not in findings["address-and-marker"].text
    assert "[3]" not in findings["address-and-marker"].text
    for statement in findings.values():
        assert {c.name for c in statement.checks} == {
            "numbers",
            "negation",
            "comparison",
            "names",
            "overlap",
        }
        assert all(c.passed for c in statement.checks)

    caveats = {s.claim_id: s for s in report.statements() if s.kind == "caveat"}
    for kind, *_ in [*MUTATIONS, ("unrelated excerpt",)]:
        caveat = caveats[kind.replace(" ", "-")]
        assert caveat.text.startswith("Not borne out by its cited excerpts:")
        assert caveat.confidence == "low"
        assert caveat.evidence_ids  # kept, so the mismatch can be audited
        assert [c.detail for c in caveat.checks if not c.passed]

    # One repair round was asked for, naming each mismatch.
    first, repair = model.calls_for("synthesizer")
    assert not first.request.problems
    problems = "\n".join(repair.request.problems)
    for kind, *_ in [*MUTATIONS, ("unrelated excerpt",)]:
        assert f"Finding {kind.replace(' ', '-')} says what its cited excerpts do not" in problems
    (synthesis,) = steps(run, "synthesize")
    assert "7 not borne out by their excerpts" in synthesis.summary
    assert "2 addresses, markers or markup removed" in synthesis.summary


def test_the_report_page_shows_what_was_checked_and_what_did_not_match(
    owner, model, frozen, client
):
    script(model, researcher(), synthesize=_stubborn_writer)
    run = advance(approved_run(owner, model, PLAN))
    client.force_login(owner)
    page = client.get(reverse("research:run_report", args=[run.pk])).content.decode()

    assert "Checked against its excerpts: numbers, negation, comparison, names, overlap" in page
    assert "numbers: “84,200 boardings” is in no cited excerpt" in page
    assert "names: “Brantford” is in no cited excerpt" in page
