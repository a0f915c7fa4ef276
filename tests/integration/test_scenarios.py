"""Research scenarios through Django, the frozen local web and a scripted model.

Each test runs the real actor, store, web adapter and safe fetcher against loopback servers;
only the model answers from a script. Assertions are on the durable record — run, steps,
sources, evidence, report — and on what the web servers saw.
"""

from __future__ import annotations

import socket
import time

import pytest
from django.test import override_settings

from research.engine.citations import number_citations, render_markdown
from research.engine.contracts import (
    Report,
    ResearchBrief,
    ResearchDecision,
    SearchAction,
    Statement,
    SynthesisRequest,
)
from research.engine.ledger import normalize_claim_key, normalize_for_matching
from research.engine.quality import FIRST_PARTY_NOTE_PREFIX
from research.engine.run.deciding import follow_up_query
from research.llm.scripted import ScriptedModelClient
from research.models import ResearchEvidence, ResearchSource
from research.worker.store import DjangoStore
from tests.engine.fakes import cite_everything
from tests.integration.scripted import (
    LabResult,
    QuoteTable,
    Researcher,
    advance,
    approved_run,
    confirm_every_finding,
    executed,
    make_plan,
    quote,
    read_urls,
    searched,
    serve_lab_web,
    source_at,
    source_summaries,
    steps,
)

pytestmark = pytest.mark.django_db(transaction=True)

OBJECTIVE = (
    "How many weekday boardings does the Harwick Metro Line 3 extension have, "
    "and what did it cost to build?"
)
Q1 = "How many boardings per weekday do the Line 3 extension's stations record?"
Q2 = "What did the Line 3 extension cost to build?"
PLAN = make_plan(OBJECTIVE, ("q1", Q1), ("q2", Q2))
Q1_QUERY = "Harwick Line 3 extension weekday boardings"
Q2_QUERY = "Line 3 extension cost to build"

TRANSIT = "harwick-transit.test"
COURIER = "harwick-courier.test"
DIGEST = "metro-digest.test"
TRANSIT_PAGE = "/projects/line-3-extension"
COURIER_PAGE = "/news/2024/02/line-3-extension-ridership"

BOARDINGS = "line 3 extension weekday boardings"
COST = "line 3 extension cost"
QUOTES = [
    quote(
        "In the fourth quarter of 2023 (October to December) the five new stations recorded "
        "an average of 48,200 boardings per weekday.",
        "q1",
        claim=BOARDINGS,
        value="48,200",
    ),
    quote(
        "Harwick's newest Metro stations handled an average of 48,200 boardings each weekday "
        "in the last three months of 2023",
        "q1",
        claim=BOARDINGS,
        value="48,200",
    ),
    quote(
        "It cost $1.82 billion to build, about 35 per cent more than the $1.35 billion "
        "councillors approved in 2017.",
        "q2",
        claim=COST,
        value="$1.82 billion",
        definition="outturn cost, financing excluded",
    ),
    quote(
        "Add that and you get $2.11 billion, more than half as much again as the $1.35 billion "
        "the council signed off in 2017.",
        "q2",
        claim=COST,
        value="$2.11 billion",
        definition="financing included",
    ),
]
WANTED = {
    "q1": ("Harwick Regional Transit Authority",),
    "q2": ("The Harwick Courier", "CityLines"),
}


def researcher(*, reads: int = 2) -> Researcher:
    return Researcher(queries={"q1": Q1_QUERY, "q2": Q2_QUERY}, wanted=WANTED, reads=reads)


@pytest.fixture(scope="session")
def lab_web(frozen_web):
    with serve_lab_web(frozen_web) as lab:
        yield lab


@pytest.fixture
def lab(lab_web, web):
    lab_web.reset()
    yield lab_web
    lab_web.reset()


def script(model: ScriptedModelClient, decider: Researcher, *, synthesize=cite_everything) -> None:
    model.rule("decider", decider)
    model.rule("extractor", QuoteTable(QUOTES))
    model.rule("synthesizer", synthesize)
    model.rule("verifier", confirm_every_finding)


def report_of(run) -> Report:
    return Report.model_validate(run.report)


def evidence_of(run) -> dict:
    return {item.id: item for item in DjangoStore().list_evidence(str(run.pk))}


def cited_ids(report: Report) -> list[str]:
    return [eid for statement in report.statements() for eid in statement.evidence_ids]


CLOSED_PORT = "a closed port"  # replaced, when the test runs, by a port nobody listens on


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


# --------------------------------------------------------------------------------------------
# The ten-step scenario (reference design §20)
# --------------------------------------------------------------------------------------------


def _one_invented_citation(request: SynthesisRequest) -> Report:
    report = cite_everything(request)
    if request.problems:
        return report  # the repair round drops the citation nobody can check
    invented = Statement(
        claim_id="invented",
        kind="finding",
        text="The extension carries 90,000 people a day.",
        evidence_ids=["ev-invented"],
    )
    return report.model_copy(update={"executive_summary": [invented]})


def test_ten_step_scenario_from_plan_to_rendered_report(owner, model, frozen):
    decider = researcher()
    script(model, decider, synthesize=_one_invented_citation)

    # 1. The planner produces two required questions; planning touches no web page.
    run = approved_run(owner, model, PLAN)
    assert run.plan_version == 1
    assert PLAN.model_validate(run.plan).required_question_ids == ["q1", "q2"]
    (plan_call,) = model.calls_for("planner")
    assert plan_call.request.previous_plan is None
    assert frozen.requests == []

    run = advance(run)
    assert run.status == "completed", (run.status, run.last_error, run.terminal_reason)

    # 2. The first search discovers candidates; 3. the best candidate (the operator's own
    #    page) is read first.
    first_search = executed(run, "search")[0]
    assert first_search.input["payload"]["query"] == Q1_QUERY
    assert (
        ResearchSource.objects.filter(run=run, discovered_by_step_id=first_search.pk).count() >= 5
    )
    assert read_urls(run)[0] == frozen.url(TRANSIT_PAGE, host=TRANSIT)

    # 4. Evidence covers one question; 5. the gap triggers a new query.
    after_first_read = next(b for b in decider.briefs if b.coverage[0].covered)
    assert not after_first_read.coverage[1].covered
    assert searched(run)[1] == Q2_QUERY

    # 6. Two sources conflict about the cost; the decider learns that, not what they say.
    conflicted = next(b for b in decider.briefs if b.open_contradictions)
    (conflict,) = conflicted.open_contradictions
    assert conflict.question_ids == ["q2"]
    assert all(position.value is None for position in conflict.positions)
    assert COST not in conflict.claim_key

    # 7. The program runs a targeted follow-up search (the decider only asked to finish) and
    #    reads its best new result in the same round.
    key = f"claim:{normalize_claim_key(COST)}"
    follow_up = next(s for s in executed(run, "search") if s.input["payload"].get("program"))
    assert follow_up.input["payload"]["query"] == follow_up_query(Q2, [])
    assert follow_up.input["payload"]["follow_up"] == key
    follow_up_read = next(s for s in executed(run, "read") if s.input["payload"].get("follow_up"))
    assert follow_up_read.iteration == follow_up.iteration
    refused_finish = [s for s in steps(run, "decide") if s.input["payload"].get("refused")]
    assert refused_finish and "followed up" in refused_finish[0].summary

    # 8. The finish gate passes; the conflict counts as resolved (the definitions differ).
    state = run.working_state
    assert state["stop_reason"] == "finish_gate_passed"
    assert state["followed_up_contradictions"] == [key]
    assert state["resolved_contradictions"] == [key]

    # 9. Synthesis cites evidence ids only; the invented citation is repaired in one round.
    assert len(model.calls_for("synthesizer")) == 2
    report = report_of(run)
    evidence = evidence_of(run)
    assert not report.partial and report.mode == "model"
    assert cited_ids(report) and set(cited_ids(report)) <= set(evidence)
    assert "invented" not in {s.claim_id for s in report.statements()}
    (contradiction,) = report.contradictions
    assert {evidence[eid].normalized_value for eid in contradiction.evidence_ids} == {
        "$1.82 billion",
        "$2.11 billion",
    }

    # 10. The citation renderer produces a valid report with numbered, resolvable citations.
    sources = source_summaries(run)
    markdown = render_markdown(report, evidence=evidence, sources=sources)
    assert "[\\[1\\]]" in markdown and "## Sources" in markdown
    assert "partial report" not in markdown
    assert f"({frozen.url(TRANSIT_PAGE, host=TRANSIT)})" in markdown
    numbers = number_citations(report, evidence=evidence)
    for evidence_id in cited_ids(report):
        (number,) = numbers.numbers_for([evidence_id])
        assert f"[\\[{number}\\]](#evidence-" in markdown

    # The record is whole: every step finished once, every excerpt is in its snapshot.
    log = steps(run)
    assert not [s for s in log if s.status in ("pending", "running")]
    assert len({s.dedupe_key for s in log}) == len(log)
    for item in ResearchEvidence.objects.filter(run=run).select_related("source"):
        stored = item.source.snapshot_text[item.locator["start"] : item.locator["end"]]
        assert normalize_for_matching(stored) == normalize_for_matching(item.excerpt)
    assert run.usage["searches"] == 3
    assert run.usage["model_calls"] == len(model.calls)


# --------------------------------------------------------------------------------------------
# Search providers that are missing or push back
# --------------------------------------------------------------------------------------------


def _always_a_new_search(brief: ResearchBrief) -> ResearchDecision:
    query = f"Line 3 extension weekday boardings round {brief.iteration + 1}"
    return ResearchDecision(
        actions=[SearchAction(query=query, question_ids=["q1"], rationale="Keep looking.")]
    )


@pytest.mark.parametrize(
    ("overrides", "reason"),
    [
        ({"SEARXNG_URL": CLOSED_PORT}, "Could not connect to http://127.0.0.1"),
        ({"SEARXNG_URL": ""}, "SearXNG is selected but SEARXNG_URL is not set."),
        ({"RESEARCH_SEARCH_PROVIDERS": []}, "No search provider is configured"),
    ],
    ids=["closed-port", "no-url", "no-provider"],
)
def test_missing_search_provider_stops_research_with_a_readable_reason(
    owner, model, web, overrides, reason
):
    script(model, researcher())
    model.rule("decider", _always_a_new_search)
    if overrides.get("SEARXNG_URL") == CLOSED_PORT:
        overrides = {"SEARXNG_URL": f"http://127.0.0.1:{closed_port()}"}
    with override_settings(**{**web.django_settings(), "RESEARCH_RETRY_MAX_ATTEMPTS": 1}):
        run = approved_run(owner, model, PLAN)
        with override_settings(**overrides):
            run = advance(run)

    # Three rounds of failed searches stop research; the run fails with the reason and a
    # retry, instead of crashing, researching on or offering more budget for an outage.
    assert run.status == "failed", (run.status, run.last_error)
    assert run.stop_reason == run.working_state["stop_reason"] == "provider_failures"
    assert run.resume_phase == "researching"
    assert run.last_error.startswith("Search or fetch providers kept failing. The last failure:")
    assert reason in run.last_error
    assert run.outcome.label == "Failed: provider outage"
    failed = steps(run, "search")
    assert [s.status for s in failed] == ["failed"] * 3
    for step in failed:
        assert reason in step.error
        assert "SearXNG: SearXNG: " not in step.error  # the provider is named once
    assert not steps(run, "read") and not ResearchSource.objects.filter(run=run).exists()
    assert run.report is None


def test_a_rate_limited_search_waits_for_retry_after_then_succeeds(owner, model, frozen):
    script(model, researcher())
    run = approved_run(owner, model, PLAN)
    frozen.fail_next("/search", 429, retry_after="1")

    started = time.monotonic()
    run = advance(run)

    assert run.status == "completed", (run.status, run.last_error)
    assert time.monotonic() - started >= 1.0  # the server's Retry-After was honoured
    first = executed(run, "search")[0]
    assert first.input["payload"]["query"] == Q1_QUERY
    assert (first.status, first.attempt, first.error) == ("succeeded", 1, "")
    asked = [r.path for r in frozen.requests_to("/search")]
    assert len(asked) == len(searched(run)) + 1  # the first search was sent twice
    assert asked[0] == asked[1]
    # A logical search counts once however often the provider was asked.
    assert run.usage["searches"] == len(searched(run)) == 3


def test_a_retry_after_longer_than_allowed_fails_the_search_at_once(owner, model, frozen):
    script(model, researcher())
    run = approved_run(owner, model, PLAN)
    frozen.fail_next("/search", 429, retry_after="120")

    started = time.monotonic()
    run = advance(run)

    assert time.monotonic() - started < 10
    first = executed(run, "search")[0]
    assert first.status == "failed"
    assert "rate limiting requests (HTTP 429)" in first.error
    assert "asked us to wait 120 seconds" in first.error
    # Research went on with the next question instead of waiting two minutes.
    assert searched(run)[1] == Q2_QUERY
    assert run.status in ("completed", "budget_exhausted")
    assert run.report is not None


# --------------------------------------------------------------------------------------------
# Pages that are slow, blocked, huge, repeated or mirrored
# --------------------------------------------------------------------------------------------

TRANSIT_TITLE = "Line 3 ridership | Harwick Regional Transit Authority"


def test_a_fetch_timeout_is_recorded_and_another_source_is_read(owner, model, lab):
    slow = lab.frozen_url("/_lab/slow?seconds=3", host="live.harwick-transit.test")
    lab.add_results("weekday boardings", LabResult(slow, TRANSIT_TITLE))
    script(model, researcher(reads=1))
    settings = lab.django_settings(
        RESEARCH_FETCH_READ_TIMEOUT=0.5,
        RESEARCH_FETCH_TOTAL_TIMEOUT=1.0,
        RESEARCH_RETRY_MAX_ATTEMPTS=1,
    )
    with override_settings(**settings):
        run = approved_run(owner, model, PLAN)
        started = time.monotonic()
        run = advance(run)
    assert time.monotonic() - started < 15

    timed_out = source_at(run, "live.harwick-transit.test")
    assert timed_out.status == "failed"
    assert "did not answer within the time limit" in timed_out.last_error
    failed_read = next(s for s in executed(run, "read") if s.input["payload"]["url"] == slow)
    assert failed_read.status == "failed" and "time limit" in failed_read.error
    # The program chose an alternative from another site in the same round.
    substitute = next(s for s in executed(run, "read") if s.input["payload"].get("substitute_for"))
    assert substitute.input["payload"]["substitute_for"] == str(timed_out.pk)
    assert substitute.iteration == failed_read.iteration
    assert substitute.status == "succeeded"
    replacement = ResearchSource.objects.get(pk=substitute.input["payload"]["source_id"])
    assert replacement.status == "fetched" and replacement.domain != timed_out.domain
    # The decider hears about the failure in its next brief.
    later = model.calls_for("decider")[failed_read.iteration + 1].request
    assert [(f.source_id, f.status) for f in later.failed_sources] == [
        (str(timed_out.pk), "failed")
    ]


def test_blocked_and_unreadable_pages_are_recorded_with_their_reason(owner, model, lab):
    redirect = lab.frozen_url(
        "/_lab/redirect?to=http://10.20.30.40/internal", host="moved.harwick-transit.test"
    )
    paywall = lab.frozen_url("/premium/fare-policy-analysis", host=COURIER)
    captcha = lab.frozen_url("/harwick-line-3", host="quickfacts.test")
    lab.add_results(
        "weekday boardings",
        LabResult(redirect, TRANSIT_TITLE),
        LabResult(paywall, "Who pays for Line 3? | Harwick Regional Transit Authority figures"),
        LabResult(captcha, "Line 3 quick facts | Harwick Regional Transit Authority data"),
    )
    script(model, researcher(reads=3))
    with override_settings(**lab.django_settings()):
        run = approved_run(owner, model, PLAN)
        run = advance(run)

    # A redirect to a private address is refused before any connection is made to it.
    moved = source_at(run, "moved.harwick-transit.test")
    assert moved.status == "blocked"
    assert "redirected to http://10.20.30.40/internal, which was refused" in moved.last_error
    assert "private" in moved.last_error and "only public addresses" in moved.last_error
    gated = source_at(run, COURIER, "/premium/")
    assert gated.status == "blocked"
    assert "paywall" in gated.last_error
    challenged = source_at(run, "quickfacts.test")
    assert challenged.status == "unsupported"
    assert "access challenge (CAPTCHA or bot check)" in challenged.last_error
    failed_reads = {
        s.input["payload"]["url"]: s.error for s in executed(run, "read") if s.status == "failed"
    }
    assert set(failed_reads) == {redirect, paywall, captcha}
    assert "10.20.30.40" in failed_reads[redirect] and "paywall" in failed_reads[paywall]
    # They hold no snapshot and no evidence, and the run still reached a report.
    for source in (moved, gated, challenged):
        assert source.snapshot_text == "" and not source.evidence.exists()
    assert run.status in ("completed", "budget_exhausted") and run.report is not None


def test_an_oversized_page_is_truncated_to_the_per_source_limit(owner, model, lab):
    huge = lab.frozen_url("/_lab/huge?mb=3", host="archive.harwick-transit.test")
    lab.add_results("weekday boardings", LabResult(huge, TRANSIT_TITLE))
    script(model, researcher(reads=1))
    with override_settings(**lab.django_settings(RESEARCH_FETCH_MAX_BYTES=400_000)):
        run = approved_run(owner, model, PLAN)
        run = advance(run)

    budget = run.budget
    page = source_at(run, "archive.harwick-transit.test")
    assert page.status == "fetched" and page.truncated
    assert 0 < page.content_bytes <= budget["bytes_per_source"]
    assert len(page.snapshot_text.encode()) == page.content_bytes
    assert "Only the first part of the page was kept (size limit)." in page.quality["notes"]
    read = next(s for s in executed(run, "read") if s.input["payload"]["url"] == huge)
    assert read.status == "succeeded"
    assert read.usage["bytes_fetched"] == page.content_bytes
    assert run.usage["bytes_fetched"] <= budget["bytes_per_run"]


def test_duplicate_urls_and_mirrored_pages_are_kept_but_never_independent(owner, model, lab):
    courier = lab.frozen_url(COURIER_PAGE, host=COURIER)
    print_copy = lab.frozen_url("/print/line-3-extension-ridership", host=COURIER)
    mirror = lab.frozen_url("/stories/harwick-line-3-ridership", host=DIGEST)
    title = "Line 3 ridership copy"
    lab.add_results(
        "weekday boardings",
        LabResult(courier + "?utm_source=newsletter&utm_medium=email", title),
        LabResult(courier + "#comments", title),
        LabResult(print_copy, title),
        LabResult(mirror, title),
    )
    decider = Researcher(queries={"q1": Q1_QUERY}, wanted={"q1": (title,)}, reads=3)
    script(model, decider)
    plan = make_plan(OBJECTIVE, ("q1", Q1))
    with override_settings(**lab.django_settings()):
        run = approved_run(owner, model, plan)
        run = advance(run)

    # The same article under three addresses (tracking parameters, a fragment, and the
    # frozen search's own tagged link) is one source.
    original = ResearchSource.objects.get(run=run, url=courier)
    assert ResearchSource.objects.filter(run=run, domain=COURIER).count() == 2  # + print copy
    printed = ResearchSource.objects.get(run=run, url=print_copy)
    mirrored = ResearchSource.objects.get(run=run, url=mirror)
    assert original.status == "fetched"
    # The print edition names the article as canonical; the syndicated copy has its text.
    assert (printed.status, printed.duplicate_of_id) == ("duplicate", original.pk)
    assert (mirrored.status, mirrored.duplicate_of_id) == ("duplicate", original.pk)
    summaries = {s.input["payload"]["url"]: s.summary for s in executed(run, "read")}
    assert "the same address" in summaries[print_copy]
    assert "the same text" in summaries[mirror]
    clusters = {s.quality["independence_cluster"] for s in (original, printed, mirrored)}
    assert clusters == {f"domain:{COURIER}"}
    # Copies are not extracted and do not corroborate: q1 rests on one independent source.
    # (The program's gap search reads one more page of another site before the report.)
    extracted = {call.request.source_id for call in model.calls_for("extractor")}
    assert str(original.pk) in extracted
    assert extracted.isdisjoint({str(printed.pk), str(mirrored.pk)})
    evidence_sources = {e.source_id for e in ResearchEvidence.objects.filter(run=run)}
    assert original.pk in evidence_sources
    assert evidence_sources.isdisjoint({printed.pk, mirrored.pk})
    assert run.working_state["coverage"]["q1"]["clusters"] == [f"domain:{COURIER}"]
    # One independent site, and a news site: "Harwick" is a name in the question and the first
    # part of the Courier's host, but "Courier" is a word of a newspaper's kind, not of the
    # subject's own site, so the first-party heuristic leaves it unclassified (issue 14).
    assert not any(note.startswith(FIRST_PARTY_NOTE_PREFIX) for note in original.quality["notes"])
    assert original.quality["source_class"] == "unknown"
    # With one independent, unclassified source the finish gate is not met; research stops when
    # further rounds add nothing, and the report is partial for that reason.
    assert run.working_state["coverage"]["q1"]["has_primary"] is False
    assert run.working_state["stop_reason"] == "diminishing_returns"
    assert run.status == "budget_exhausted"
    assert run.terminal_reason.startswith("A partial report was written")


# --------------------------------------------------------------------------------------------
# Model output that cannot be used
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Budgets and synthesis
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Controls while the worker is busy
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# What findings say: checked against their excerpts before the report is published
# --------------------------------------------------------------------------------------------
