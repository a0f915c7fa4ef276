"""The run document lets an outside scorer check citations and excerpts without the database."""

from __future__ import annotations

from evals.bench.report_page import build_run
from evals.matching import citation_problem, excerpt_verified
from research.cli.run_document import build_run_document
from research.engine.contracts import Report, ReportSection, Statement
from research.models import ResearchRun, ResearchSource


def test_every_cited_excerpt_comes_with_the_text_its_locator_points_at(owner):
    run = build_run(owner, 10)

    document = build_run_document(run)

    assert document["schema"] == "deep-research/run-document" and document["status"] == "completed"
    assert len(document["citations"]) == 10
    sources = {source["id"]: source for source in document["sources"]}
    for number, citation in enumerate(document["citations"], start=1):
        assert citation["number"] == number and citation_problem(citation, str(run.pk)) is None
        assert excerpt_verified(citation["evidence"], sources)
        assert citation["source"]["independence_cluster"] == "domain:example.org"
    assert document["report_markdown"].startswith("# Benchmark report")


def test_a_changed_snapshot_is_reported_as_no_longer_intact(owner):
    run = build_run(owner, 10)
    ResearchSource.objects.filter(run=run).update(snapshot_text="Something else entirely.")

    document = build_run_document(run)

    assert [source["snapshot_intact"] for source in document["sources"]] == [False]
    sources = {source["id"]: source for source in document["sources"]}
    assert not any(excerpt_verified(item, sources) for item in document["evidence"])


def test_citations_to_missing_or_foreign_evidence_are_shown_as_such(owner):
    other = build_run(owner, 10)
    foreign_id = other.evidence.order_by("pk").values_list("pk", flat=True).first()
    report = Report(
        title="Borrowed citations",
        sections=[
            ReportSection(
                id="s1",
                title="s1",
                statements=[
                    Statement(claim_id="a", kind="finding", text="x", evidence_ids=[foreign_id]),
                    Statement(claim_id="b", kind="finding", text="y", evidence_ids=["ev-nothing"]),
                ],
            )
        ],
    )
    run = ResearchRun.objects.create(
        owner=owner, question="q", status="completed", report=report.model_dump(mode="json")
    )

    document = build_run_document(run)

    problems = [citation_problem(c, document["run_id"]) for c in document["citations"]]
    assert problems == [f"{foreign_id} belongs to another run", "ev-nothing does not exist"]
