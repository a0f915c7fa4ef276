"""Pages cost a fixed number of SQL queries however many steps, sources and evidence a run
has (checked on a run with 200 sources and 1,000 evidence rows)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from research.models import ResearchEvidence, ResearchSource, ResearchStep
from research.web.workspace import live_fragments
from tests.web.factories import evidence_row, make_run, plan_data, report_data, sha

SOURCES = 200
EVIDENCE = 1000
STEPS = 120


@pytest.fixture
def big_run(owner, team):
    run = make_run(
        owner, status="completed", team=team, visibility="link", plan=plan_data(), plan_version=1
    )
    sources = ResearchSource.objects.bulk_create(
        ResearchSource(
            run=run,
            status="fetched" if n % 5 else "failed",
            url=f"https://site{n}.example.org/page",
            canonical_url=f"https://site{n}.example.org/page",
            canonical_url_hash=sha(f"big-{n}"),
            domain=f"site{n}.example.org",
            title=f"Big source {n}",
            source_class="official",
            quality={"source_class": "official", "authority": "high"},
        )
        for n in range(SOURCES)
    )
    evidence = ResearchEvidence.objects.bulk_create(
        evidence_row(run, sources[n % SOURCES], excerpt=f"Excerpt number {n} of the big run.")
        for n in range(EVIDENCE)
    )
    ResearchStep.objects.bulk_create(
        ResearchStep(
            run=run,
            kind=["search", "read", "decide"][n % 3],
            status="succeeded",
            dedupe_key=f"big-step-{n}",
            input={
                "payload": {
                    "query": f"query {n}",
                    "source_id": str(sources[n % SOURCES].pk),
                    "url": sources[n % SOURCES].url,
                }
            },
            summary=f"step {n}",
        )
        for n in range(STEPS)
    )
    run.report = report_data(evidence[:150])
    run.save(update_fields=["report"])
    return run


MAX_QUERIES = 15


def test_run_page_queries_are_bounded(big_run, client_for, django_assert_max_num_queries):
    client = client_for(big_run.owner)
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse("research:run_detail", args=[big_run.pk]))
    page = response.content.decode()
    assert page.count('class="source source-') == SOURCES
    assert page.count('class="step step-') == STEPS
    assert f"<strong>{EVIDENCE}</strong> verified excerpts" in page


def test_report_page_queries_are_bounded(big_run, client_for, django_assert_max_num_queries):
    client = client_for(big_run.owner)
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse("research:run_report", args=[big_run.pk]))
    assert response.content.decode().count('<li id="citation-') == 150


def test_shared_report_and_exports_are_bounded(big_run, client_for, django_assert_max_num_queries):
    client = client_for(None)
    for url in (
        reverse("research:run_shared", args=[big_run.share_token]),
        reverse("research:shared_markdown", args=[big_run.share_token]),
    ):
        with django_assert_max_num_queries(MAX_QUERIES):
            assert client.get(url).status_code == 200


@pytest.mark.parametrize("section", ["sources", "timeline", "progress", "header", "controls"])
def test_partials_are_bounded(
    section, big_run, client_for, htmx_headers, django_assert_max_num_queries
):
    client = client_for(big_run.owner)
    with django_assert_max_num_queries(MAX_QUERIES):
        response = client.get(reverse(f"research:run_{section}", args=[big_run.pk]), **htmx_headers)
    assert response.status_code == 200


def test_live_fragments_are_bounded(big_run, django_assert_max_num_queries):
    with django_assert_max_num_queries(10):
        html = live_fragments(big_run, big_run.owner, {"header", "progress", "timeline", "sources"})
    assert html.count('class="source source-') == SOURCES


def test_dashboard_queries_are_bounded(big_run, owner, client_for, django_assert_max_num_queries):
    for n in range(40):
        make_run(owner, question=f"Another run {n}")
    client = client_for(owner)
    with django_assert_max_num_queries(MAX_QUERIES):
        assert "Another run 39" in client.get(reverse("research:dashboard")).content.decode()


def _run_with_evidence(owner, rows: int):
    run = make_run(owner, status="completed", plan=plan_data(), plan_version=1)
    sources = ResearchSource.objects.bulk_create(
        ResearchSource(
            run=run,
            status="fetched",
            url=f"https://flat{n}.example.org/{run.pk}",
            canonical_url=f"https://flat{n}.example.org/{run.pk}",
            canonical_url_hash=sha(f"flat-{run.pk}-{n}"),
            domain=f"flat{n}.example.org",
            title=f"Flat source {n}",
            source_class="official",
        )
        for n in range(min(rows, 50))
    )
    ResearchEvidence.objects.bulk_create(
        evidence_row(run, sources[n % len(sources)], excerpt=f"Geothermal excerpt {n} here.")
        for n in range(rows)
    )
    # The report cites the evidence under other words, so the search finds the excerpts.
    cited = [evidence_row(run, sources[0], excerpt=f"Cited finding {n}.") for n in range(3)]
    run.report = report_data(ResearchEvidence.objects.bulk_create(cited))
    run.save(update_fields=["report"])
    return run


def test_dashboard_search_and_report_page_stay_flat_from_10_to_1000_evidence_rows(
    owner, outsider, client_for
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    counts = {}
    for user, rows in ((owner, 10), (outsider, 1000)):
        run = _run_with_evidence(user, rows)
        client = client_for(user)
        client.get(reverse("research:dashboard"))  # the session and user are loaded once
        with CaptureQueriesContext(connection) as search:
            page = client.get(reverse("research:dashboard"), {"q": "geothermal"}).content.decode()
        assert "Found in the evidence:" in page and "Geothermal excerpt" in page
        with CaptureQueriesContext(connection) as report:
            client.get(reverse("research:run_report", args=[run.pk]))
        counts[rows] = (len(search), len(report))
    print("queries (dashboard search, report page):", counts)
    assert counts[10] == counts[1000]
    assert counts[1000][0] <= MAX_QUERIES and counts[1000][1] <= MAX_QUERIES
