"""The report page: server time and SQL queries for runs with 10, 100 and 1,000 evidence rows.

Runs are written straight into the (throwaway) database: sources with snapshots, evidence
with locators into them, and a validated report citing every evidence item. The page is then
requested through Django's test client as the run's owner, so middleware, the view, the
citation numbering and the template all count. Time should grow no worse than linearly with
the evidence and the query count should not grow at all.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse

from research.engine.contracts import Report, ReportSection, Statement
from research.engine.ledger import evidence_hash, evidence_id_for, snapshot_content_hash
from research.engine.urls import url_hash

SIZES = (10, 100, 1000)
EVIDENCE_PER_SOURCE = 10
FINDINGS_PER_SECTION = 25
_SENTENCE = (
    "In {year} the network recorded {value:,} boardings on line {line}, according to the "
    "operator's quarterly figures published for station group {group}. "
)


def _snapshot(source_number: int) -> str:
    return "".join(
        _SENTENCE.format(year=2000 + i, value=1000 * (source_number + 1) + i, line=i % 7, group=i)
        for i in range(EVIDENCE_PER_SOURCE)
    )


def build_run(owner: Any, evidence_rows: int) -> Any:
    """A completed run whose report cites ``evidence_rows`` verified excerpts."""
    from research.models import ResearchEvidence, ResearchRun, ResearchSource

    run = ResearchRun.objects.create(
        owner=owner,
        question=f"Benchmark report with {evidence_rows} evidence rows",
        status="completed",
        plan_version=1,
    )
    items: list[ResearchEvidence] = []
    for number in range((evidence_rows + EVIDENCE_PER_SOURCE - 1) // EVIDENCE_PER_SOURCE):
        text = _snapshot(number)
        url = f"https://stats{number}.example.org/ridership/{number}"
        source = ResearchSource.objects.create(
            run=run,
            status="fetched",
            url=url,
            canonical_url=url,
            canonical_url_hash=url_hash(url),
            domain=f"stats{number}.example.org",
            title=f"Ridership statistics {number}",
            publisher=f"Statistics office {number}",
            source_class="official",
            snapshot_text=text,
            content_hash=snapshot_content_hash(text),
            content_bytes=len(text),
        )
        sentences = [s + "." for s in text.split(". ") if s]
        offset = 0
        for sentence in sentences[:EVIDENCE_PER_SOURCE]:
            excerpt = sentence.strip()
            start = text.index(excerpt, offset)
            offset = start + len(excerpt)
            digest = evidence_hash(str(run.pk), str(source.pk), excerpt, None)
            items.append(
                ResearchEvidence(
                    id=evidence_id_for(digest),
                    run=run,
                    source=source,
                    question_ids=["q1"],
                    excerpt=excerpt,
                    locator={
                        "kind": "html",
                        "start": start,
                        "end": start + len(excerpt),
                        "heading": None,
                        "snapshot_hash": source.content_hash,
                    },
                    stance="supports",
                    relevance_bp=8000,
                    confidence_bp=7000,
                    evidence_hash=digest,
                )
            )
    items = items[:evidence_rows]
    ResearchEvidence.objects.bulk_create(items)
    sections = [
        ReportSection(
            id=f"s{index}",
            title=f"Section {index}",
            statements=[
                Statement(
                    claim_id=f"s{index}-{n}",
                    kind="finding",
                    text=item.excerpt,
                    evidence_ids=[item.pk],
                )
                for n, item in enumerate(items[start : start + FINDINGS_PER_SECTION])
            ],
        )
        for index, start in enumerate(range(0, len(items), FINDINGS_PER_SECTION))
    ]
    report = Report(title=run.question, sections=sections, mode="extractive")
    ResearchRun.objects.filter(pk=run.pk).update(report=report.model_dump(mode="json"))
    run.refresh_from_db()
    return run


def _page_url(run: Any) -> tuple[str, str]:
    try:
        return reverse("research:run_report", args=[run.pk]), "report page view"
    except NoReverseMatch:
        return "", "no report view"


def _time_page(client: Client, url: str, repeats: int) -> tuple[float, int, int]:
    client.get(url)  # warm-up: templates, URL resolver, statements cache
    durations = []
    queries = 0
    status = 0
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            response = client.get(url)
            durations.append(time.perf_counter() - started)
        queries = len(captured.captured_queries)
        status = response.status_code
    return statistics.median(durations), queries, status


def _time_render(run: Any, repeats: int) -> tuple[float, int, int]:
    """Without a report view: loading the run's evidence and sources and rendering HTML."""
    from research.cli.run_document import source_summaries
    from research.engine.citations import render_html
    from research.models import ResearchEvidence, ResearchRun, ResearchSource
    from research.worker.store import evidence_from_row

    def once() -> None:
        fresh = ResearchRun.objects.get(pk=run.pk)
        evidence = {
            row.pk: evidence_from_row(row) for row in ResearchEvidence.objects.filter(run=fresh)
        }
        sources = source_summaries(ResearchSource.objects.filter(run=fresh).defer("snapshot_text"))
        render_html(Report.model_validate(fresh.report), evidence=evidence, sources=sources)

    once()
    durations = []
    queries = 0
    for _ in range(repeats):
        with CaptureQueriesContext(connection) as captured:
            started = time.perf_counter()
            once()
            durations.append(time.perf_counter() - started)
        queries = len(captured.captured_queries)
    return statistics.median(durations), queries, 200


def measure(*, repeats: int = 5) -> dict[str, Any]:
    """Server time and query count of the report page at each size."""
    from accounts.models import User

    owner, _ = User.objects.get_or_create(username="bench-reader")
    # A host the default ALLOWED_HOSTS accepts (the test client's "testserver" is not one).
    client = Client(HTTP_HOST="127.0.0.1")
    client.force_login(owner)
    rows = []
    method = ""
    for size in SIZES:
        run = build_run(owner, size)
        url, method = _page_url(run)
        if url:
            seconds, queries, status = _time_page(client, url, repeats)
            if status != 200:
                raise RuntimeError(f"The report page answered HTTP {status} for {url}.")
        else:
            seconds, queries, status = _time_render(run, repeats)
        rows.append(
            {
                "evidence_rows": size,
                "server_ms": round(seconds * 1000, 2),
                "sql_queries": queries,
                "http_status": status,
            }
        )
    first, last = rows[0], rows[-1]
    growth = (last["server_ms"] / first["server_ms"]) if first["server_ms"] else None
    return {
        "method": method
        if method == "report page view"
        else "render_html plus loading the run, evidence and sources (no report view yet)",
        "sizes": rows,
        "queries_flat": len({row["sql_queries"] for row in rows}) == 1,
        "time_growth_10_to_1000": round(growth, 2) if growth else None,
        "linear_growth_would_be": SIZES[-1] / SIZES[0],
    }
