"""Which search results are kept and what fetches cost, through Django and the loopback webs.

The real actor, store, web adapter and safe fetcher run against the frozen web and lab webs
on 127.0.0.1 (and ::1); only the model answers from a script. The record checked is the
step log (summaries, outputs, usage), the sources and what the servers saw.
"""

from __future__ import annotations

import pytest
from django.test import override_settings

from research.engine.urls import normalize_url
from research.llm.scripted import ScriptedModelClient
from research.models import ResearchSource
from tests.engine.fakes import cite_everything
from tests.integration.scripted import (
    LabResult,
    LabWeb,
    QuoteTable,
    Researcher,
    advance,
    approved_run,
    executed,
    ipv6_loopback_unavailable,
    make_plan,
    quote,
    serve_lab_web,
    steps,
    use_scripted_model,
)

pytestmark = pytest.mark.django_db(transaction=True)

PRIVATE_RESULT = "http://10.0.0.7/intranet/payroll"


def intranet_page(title: str, text: str) -> str:
    return (
        f"<html><head><title>{title}</title></head><body><article><h1>{title}</h1>"
        f"<p>{text}</p><p>This page is served on the intranet at a literal address; it is "
        "reached only because the operator allowed that address.</p></article></body></html>"
    )


AUDIT = "The internal audit puts the outturn cost of the Line 3 extension at $1.82 billion."
SCHEDULE = "Track works on the Line 3 extension finished eleven weeks later than planned."
INTRANET_PLAN = make_plan(
    "What do the intranet audit and schedule pages say about the Line 3 extension?",
    ("q1", "What do the intranet audit and schedule pages say about the Line 3 extension?"),
)


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedModelClient:
    return use_scripted_model(monkeypatch)


@pytest.fixture
def lab(web):
    with serve_lab_web(web) as lab:
        yield lab


@pytest.fixture
def lab6(web):
    reason = ipv6_loopback_unavailable()
    if reason:
        pytest.skip(reason)
    with serve_lab_web(web, host="::1") as lab:
        yield lab


def test_allow_listed_literal_addresses_are_kept_and_read_and_a_private_one_is_dropped(
    owner, model, lab: LabWeb, lab6: LabWeb
):
    lab.pages["/intranet/audit"] = intranet_page("Intranet audit of Line 3", AUDIT)
    lab6.pages["/intranet/schedule"] = intranet_page("Intranet schedule of Line 3", SCHEDULE)
    v4, v6 = lab.literal_url("/intranet/audit"), lab6.literal_url("/intranet/schedule")
    lab.add_results(
        "intranet",
        LabResult(v4, "Intranet audit of Line 3"),
        LabResult(PRIVATE_RESULT, "Intranet payroll"),
        LabResult(v6, "Intranet schedule of Line 3"),
    )
    model.rule(
        "decider",
        Researcher(queries={"q1": "intranet Line 3 pages"}, wanted={"q1": ("Intranet",)}, reads=3),
    )
    model.rule("extractor", QuoteTable([quote(AUDIT, "q1"), quote(SCHEDULE, "q1")]))
    model.rule("synthesizer", cite_everything)
    allowed = [*lab.web.allowed_hosts, f"127.0.0.1:{lab.port}", f"[::1]:{lab6.port}"]
    with override_settings(**lab.django_settings(RESEARCH_FETCH_ALLOWED_HOSTS=allowed)):
        run = approved_run(owner, model, INTRANET_PLAN)
        run = advance(run)

    (search,) = executed(run, "search")
    results = search.output["results"]
    assert search.summary == f"{results} results; 1 dropped: private address not allowed"
    assert search.output == {
        "results": results,
        "kept": results - 1,
        "dropped": {"private address not allowed": 1},
    }
    # Both allow-listed literal addresses became candidates and were fetched and read.
    read = {s.input["payload"]["url"]: s for s in executed(run, "read")}
    assert read[v4].status == "succeeded" and read[v6].status == "succeeded"
    assert lab.fetched_paths() == ["/intranet/audit"]
    assert lab6.fetched_paths() == ["/intranet/schedule"]
    for url, text in ((v4, AUDIT), (v6, SCHEDULE)):
        source = ResearchSource.objects.get(run=run, url=url)
        assert source.status == "fetched" and text in source.snapshot_text
    # The address nobody allowed never became a source.
    assert not ResearchSource.objects.filter(run=run, url__contains="10.0.0.7").exists()
    assert run.status == "completed", run.last_error


def test_literal_private_results_are_dropped_with_their_reason_when_not_allow_listed(
    owner, model, lab: LabWeb
):
    unlisted = lab.literal_url("/intranet/audit")  # 127.0.0.1 on a port nobody allowed
    lab.pages["/intranet/audit"] = intranet_page("Intranet audit of Line 3", AUDIT)
    lab.add_results(
        "intranet",
        LabResult(unlisted, "Intranet audit of Line 3"),
        LabResult(PRIVATE_RESULT, "Intranet payroll"),
        LabResult("http://169.254.169.254/latest/meta-data/", "Intranet metadata"),
    )
    model.rule(
        "decider",
        Researcher(queries={"q1": "intranet Line 3 pages"}, wanted={"q1": ("Intranet",)}, reads=3),
    )
    model.rule("extractor", QuoteTable([quote(AUDIT, "q1")]))
    model.rule("synthesizer", cite_everything)
    with override_settings(**lab.django_settings()):
        run = approved_run(owner, model, INTRANET_PLAN)
        run = advance(run)

    # The decider's search; the run's gap search for the uncovered question comes after it.
    search, *gap_searches = executed(run, "search")
    assert search.input["payload"]["query"] == "intranet Line 3 pages"
    assert len(gap_searches) <= 1
    assert search.output["dropped"] == {
        "private address not allowed": 2,
        "cloud metadata address": 1,
    }
    assert search.summary.endswith(
        "; 3 dropped: 2 private address not allowed, 1 cloud metadata address"
    )
    assert lab.fetched_paths() == []
    assert not ResearchSource.objects.filter(run=run, url__contains="/intranet/").exists()


# --------------------------------------------------------------------------------------------
# What fetches cost
# --------------------------------------------------------------------------------------------

TRANSIT = "Harwick Regional Transit Authority"
BOARDINGS = (
    "In the fourth quarter of 2023 (October to December) the five new stations recorded an "
    "average of 48,200 boardings per weekday."
)
COURIER_BOARDINGS = (
    "Harwick's newest Metro stations handled an average of 48,200 boardings each weekday in "
    "the last three months of 2023"
)
BOARDINGS_PLAN = make_plan(
    "How many weekday boardings does the Harwick Metro Line 3 extension have?",
    ("q1", "How many boardings per weekday do the Line 3 extension's stations record?"),
)


def test_refused_pages_cost_no_fetch_and_a_failing_page_costs_exactly_one(
    owner, model, lab: LabWeb
):
    web = lab.web
    refused = {
        # blocked by our address rules (a redirect to a private address)
        lab.frozen_url("/_lab/redirect?to=http://10.20.30.40/internal", host="moved.test"): (
            "blocked"
        ),
        # blocked by the site (HTTP 403) and by a paywall page
        lab.frozen_url("/_lab/status/403", host="forbidden.test"): "blocked",
        lab.frozen_url("/premium/fare-policy-analysis", host="harwick-courier.test"): "blocked",
        # a CAPTCHA page and an image refused on its Content-Type before the body is read
        lab.frozen_url("/harwick-line-3", host="quickfacts.test"): "unsupported",
        lab.frozen_url("/_lab/photo.png", host="images.test"): "unsupported",
    }
    # Search results are stored under their normalised URL (query parameters sorted).
    failing = normalize_url(
        lab.frozen_url("/_lab/flaky?key=cost-once&failures=9&status=503", host="down.test")
    )
    lab.add_results(
        "weekday boardings",
        *(LabResult(url, f"Line 3 page {n} | {TRANSIT}") for n, url in enumerate(refused)),
        LabResult(failing, f"Line 3 live figures | {TRANSIT}"),
    )
    model.rule(
        "decider",
        Researcher(
            queries={"q1": "Harwick Line 3 extension weekday boardings"},
            wanted={"q1": (TRANSIT, "weekday trips")},
            reads=3,
        ),
    )
    model.rule("extractor", QuoteTable([quote(BOARDINGS, "q1"), quote(COURIER_BOARDINGS, "q1")]))
    model.rule("synthesizer", cite_everything)
    with override_settings(**lab.django_settings()):
        run = approved_run(owner, model, BOARDINGS_PLAN)
        run = advance(run)

    reads = {s.input["payload"]["url"]: s for s in executed(run, "read")}
    for url, kind in refused.items():
        source = ResearchSource.objects.get(run=run, url=url)
        assert source.status == kind, (url, source.last_error)
        assert reads[url].usage["fetched_sources"] == 0, url
    # The failing page was tried three times (the adapter's retries) and cost one fetch.
    assert len(web.requests_to("/_lab/flaky")) == 3
    assert ResearchSource.objects.get(run=run, url=failing).status == "failed"
    assert reads[failing].usage["fetched_sources"] == 1
    # The run's count is exactly the reads that went to the network and came back.
    sources = ResearchSource.objects.filter(run=run)
    networked = sources.filter(status__in=("fetched", "duplicate", "failed")).count()
    assert run.usage["fetched_sources"] == networked
    assert run.usage["fetched_sources"] == sum(
        s.usage.get("fetched_sources", 0) for s in steps(run, "read")
    )
    assert len(reads) > networked  # the refused reads happened and were free
