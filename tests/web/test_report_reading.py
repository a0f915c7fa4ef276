"""Reading a report: code findings as code blocks, a table of contents, both sides of a
contradiction quoted side by side, and two inline-SVG charts with their numbers as text."""

from __future__ import annotations

import re

from django.urls import reverse

from research.models import ResearchEvidence
from tests.web.factories import completed_run, make_evidence, make_source, report_data


def report_page(client, run) -> str:
    return client.get(reverse("research:run_report", args=[run.pk])).content.decode()


def test_code_contents_contradictions_and_charts(owner, client_for):
    run = completed_run(owner, sources=2)
    source = make_source(run, source_class="academic")
    code = make_evidence(
        run, source, excerpt="pip install heat-pump-model\nmodel.fit(data)", question_ids=["q1"]
    )
    code.locator = {**code.locator, "code": True}
    code.save()
    low = make_evidence(run, source, normalized_value="120000", excerpt="Sales were 120,000.")
    high = make_evidence(run, source, normalized_value="150000", excerpt="Sales were 150,000.")
    evidence = list(ResearchEvidence.objects.filter(run=run).exclude(pk__in=[low.pk, high.pk]))
    report = report_data(
        evidence,
        contradictions=[{"summary": "Sales differ.", "evidence_ids": [low.pk, high.pk]}],
    )
    for statement in report["sections"][0]["statements"]:
        if statement["evidence_ids"] == [code.pk]:
            statement["text"] = code.excerpt
    run.report = report
    run.save()
    page = report_page(client_for(owner), run)

    assert (
        '<pre class="code statement-code"><code>pip install heat-pump-model\nmodel.fit(data)</code></pre>'
        in page
    )
    toc = re.search(r'<nav class="toc".*?</nav>', page, re.S).group(0)
    for anchor in ("#summary", "#section-s1", "#contradictions", "#gaps", "#charts", "#sources"):
        assert f'href="{anchor}"' in toc
    sides = re.search(r'<div class="sides">.*?</div>\s*</div>', page, re.S).group(0)
    assert "Sales were 120,000." in sides and "Sales were 150,000." in sides

    classes = re.search(r'<figure class="chart" id="chart-source-classes">.*?</figure>', page, re.S)
    assert classes and 'role="img"' in classes.group(0) and "<rect" in classes.group(0)
    assert "3 sources read. Official: 2, Academic: 1." in classes.group(0)
    coverage = re.search(
        r'<figure class="chart" id="chart-evidence-per-question">.*?</figure>', page, re.S
    ).group(0)
    assert "1 of 3 sub-questions covered by evidence." in coverage
    assert coverage.count('class="bar bar-uncovered"') == 2
    assert "<script" not in coverage and "style=" not in coverage
