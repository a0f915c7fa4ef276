"""The report: numbered citations that open their exact excerpt, contradictions with both
sides, gaps, methodology and usage, exports — and nothing from a model or a page can inject
markup or a dangerous link."""

from __future__ import annotations

import contextlib
import http.server
import re
import threading
from collections.abc import Iterator

import pytest
from django.urls import reverse

from research.models import ResearchRun
from research.web import exports
from tests.web.factories import completed_run, make_evidence, make_run, make_source, report_data


def report_page(client, run: ResearchRun) -> str:
    response = client.get(reverse("research:run_report", args=[run.pk]))
    assert response.status_code == 200
    return response.content.decode()


def test_report_numbers_citations_and_lists_their_sources(owner, client_for):
    run = completed_run(owner, sources=3)
    page = report_page(client_for(owner), run)
    evidence = list(run.evidence.order_by("created_at"))
    assert "The European heat-pump market" in page
    for number, item in enumerate(evidence, start=1):
        url = reverse("research:evidence_detail", args=[run.pk, item.pk]) + f"?n={number}"
        assert f'href="{url}" hx-get="{url}" hx-target="#citation-panel"' in page
        assert f">[{number}]</a>" in page
        assert item.excerpt in page
    assert 'rel="noopener noreferrer nofollow"' in page
    assert "under “Market overview”" in page  # locator heading
    assert "No source gave regional figures." in page  # gap
    assert "Searched official statistics and trade press." in page  # methodology
    assert "12,000 in · 3,000 out" in page and "1 min 15 s" in page  # usage


def test_clicking_a_citation_shows_its_excerpt_and_source(owner, client_for, htmx_headers):
    run = completed_run(owner, sources=1)
    item = run.evidence.get()
    response = client_for(owner).get(
        reverse("research:evidence_detail", args=[run.pk, item.pk]) + "?n=1", **htmx_headers
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "<html" not in page  # the partial only
    assert "Citation [1]" in page
    assert item.excerpt in page
    assert "under “Market overview”" in page
    source = item.source
    for text in (source.title, source.publisher, source.published_at, "Official"):
        assert text in page
    assert f'href="{source.url}" rel="noopener noreferrer nofollow"' in page


def test_pdf_evidence_shows_its_page(owner, client_for, htmx_headers):
    run = completed_run(owner, sources=1)
    item = run.evidence.get()
    item.locator = {**item.locator, "kind": "pdf", "page": 7, "heading": None}
    item.save()
    page = (
        client_for(owner)
        .get(reverse("research:evidence_detail", args=[run.pk, item.pk]), **htmx_headers)
        .content.decode()
    )
    assert "page 7" in page


def test_extractive_report_is_labelled(owner, client_for):
    run = completed_run(owner)
    run.report = {**run.report, "mode": "extractive"}
    run.save()
    page = report_page(client_for(owner), run)
    assert "Extractive report." in page and "No language model was used" in page
    markdown = client_for(owner).get(reverse("research:report_markdown", args=[run.pk]))
    assert "Extractive report: written without a language model." in markdown.content.decode()


def test_partial_report_says_why(owner, client_for):
    run = completed_run(
        owner,
        status="budget_exhausted",
        terminal_reason="A partial report was written: the search budget ran out.",
    )
    run.report = {**run.report, "partial": True}
    run.save()
    page = report_page(client_for(owner), run)
    assert "Partial report." in page and "the search budget ran out" in page


def test_contradictions_show_both_sides_with_citations(owner, client_for):
    run = make_run(owner, status="completed")
    first = make_evidence(
        run,
        make_source(run),
        normalized_value="41%",
        excerpt="Fares cover 41 per cent of running costs.",
    )
    second = make_evidence(
        run,
        make_source(run),
        normalized_value="35%",
        excerpt="Fares cover only 35 per cent of running costs.",
    )
    run.report = report_data(
        [first],
        contradictions=[
            {
                "summary": "Sources disagree on how much fares cover.",
                "evidence_ids": [first.pk, second.pk],
            }
        ],
    )
    run.save()
    page = report_page(client_for(owner), run)
    section = re.search(r'<section class="report-section contradictions".*?</section>', page, re.S)
    html = section.group(0)
    assert "Sources disagree on how much fares cover." in html
    assert "41%" in html and "35%" in html
    assert ">[1]</a>" in html and ">[2]</a>" in html


def test_sections_the_template_requires_but_the_report_lacks_are_named(owner, client_for):
    run = completed_run(owner, report_template="technical_evaluation")
    page = report_page(client_for(owner), run)
    assert "The plan asked for sections the report does not contain" in page
    assert "Validation plan" in page


def test_model_text_and_source_metadata_cannot_inject_markup(owner, client_for, htmx_headers):
    run = make_run(owner, status="completed")
    source = make_source(
        run,
        title='<script>alert("title")</script>Evil <b>title</b>',
        publisher="<img src=x onerror=alert(1)>Publisher",
        url="https://evil.example/page",
    )
    item = make_evidence(
        run, source, excerpt='Quote <iframe src="https://evil.example"></iframe> end'
    )
    run.report = report_data(
        [item],
        title="Report \u202eevil\u202c title",
        executive_summary=[
            {
                "claim_id": "c1",
                "kind": "finding",
                "evidence_ids": [item.pk],
                "text": 'Statement <img src="https://evil.example/x.png"> with [link](javascript:alert(1))',
            }
        ],
        sections=[
            {
                "id": "s1",
                "title": "Section",
                "statements": [
                    {
                        "claim_id": "c2",
                        "kind": "finding",
                        "evidence_ids": [item.pk],
                        "text": "A finding.",
                        "label": "<img src=x onerror=alert(2)>Side",
                    }
                ],
            }
        ],
    )
    run.save()
    client = client_for(owner)
    pages = [
        report_page(client, run),
        client.get(
            reverse("research:evidence_detail", args=[run.pk, item.pk]), **htmx_headers
        ).content.decode(),
        client.get(reverse("research:run_detail", args=[run.pk])).content.decode(),
    ]
    for page in pages:
        assert "<script>alert" not in page
        assert "<img src=x" not in page and "<img src=" not in page
        assert "<iframe" not in page
        assert not re.search(r"<[a-z][^>]*\sonerror=", page)  # no element has the handler
        assert "\u202e" not in page
        assert not re.search(r"<script(?![^>]*\bsrc=)", page)  # no inline scripts
        assert " style=" not in page  # no inline styles (the CSP forbids them anyway)
    # The markup is shown as the text it is: escaped, not stripped.
    assert (
        "&lt;script&gt;alert(&quot;title&quot;)&lt;/script&gt;Evil &lt;b&gt;title&lt;/b&gt;"
        in pages[0]
    )
    assert "&lt;img src=x onerror=alert(1)&gt;Publisher" in pages[0]
    assert "&lt;img src=x onerror=alert(2)&gt;Side</h3>" in pages[0]  # a statement's label
    assert (
        "Statement &lt;img src=&quot;https://evil.example/x.png&quot;&gt; with "
        "[link](javascript:alert(1))" in pages[0]
    )
    assert 'href="javascript:' not in "".join(pages)


def test_only_http_sources_are_linked(owner, client_for, htmx_headers):
    run = make_run(owner, status="completed")
    source = make_source(run, url="ftp://files.example.org/report.txt", title="FTP file")
    item = make_evidence(run, source)
    run.report = report_data([item])
    run.save()
    client = client_for(owner)
    page = report_page(client, run)
    detail = client.get(
        reverse("research:evidence_detail", args=[run.pk, item.pk]), **htmx_headers
    ).content.decode()
    assert "ftp://" not in page and "ftp://" not in detail
    assert "FTP file" in page
    assert "no web address that can be linked" in detail


def test_pages_carry_a_strict_content_security_policy(owner, client_for):
    run = completed_run(owner)
    response = client_for(owner).get(reverse("research:run_report", args=[run.pk]))
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy and "style-src 'self'" in policy
    assert "unsafe-inline" not in policy and "unsafe-eval" not in policy


def test_markdown_export(owner, client_for):
    run = completed_run(owner, sources=2)
    response = client_for(owner).get(reverse("research:report_markdown", args=[run.pk]))
    text = response.content.decode()
    assert response["Content-Type"] == "text/markdown; charset=utf-8"
    assert response["Content-Disposition"] == (
        'attachment; filename="how-large-is-the-european-heat-pump-market.md"'
    )
    assert text.startswith("# The European heat-pump market")
    assert "*Question:* How large is the European heat-pump market?" in text
    assert "[\\[1\\]](#evidence-" in text and "## Sources" in text
    assert "*Usage:* 4 searches, 2 sources read, 2 verified excerpts" in text


def test_answer_blocks_and_code_show_on_the_page_and_in_the_export(owner, client_for):
    run = completed_run(owner, sources=1)
    source = run.sources.first()
    prose = run.evidence.first()
    code = make_evidence(run, source, excerpt="if x < 1:\n    run('<b>')")
    code.locator = {**code.locator, "code": True}
    code.save(update_fields=["locator"])
    statements = [
        {"claim_id": "c1", "kind": "finding", "text": prose.excerpt, "evidence_ids": [prose.pk]},
        {
            "claim_id": "c2",
            "kind": "finding",
            "text": code.excerpt,
            "evidence_ids": [code.pk],
            "label": "Supporting",
        },
    ]
    statements[0]["label"] = "Answer"
    run.report = report_data(
        [], sections=[{"id": "s1", "title": "Market size", "statements": statements}]
    )
    run.save(update_fields=["report"])
    client = client_for(owner)

    page = report_page(client, run)
    markdown = client.get(reverse("research:report_markdown", args=[run.pk])).content.decode()

    assert page.index('<h3 class="statement-block">Answer</h3>') < page.index(
        '<h3 class="statement-block">Supporting</h3>'
    )
    # The code keeps its line breaks and is escaped, never markup.
    assert "<code>if x &lt; 1:\n    run(&#x27;&lt;b&gt;&#x27;)</code>" in page
    assert "### Answer" in markdown and "### Supporting" in markdown
    assert "\n  ```\n  if x < 1:\n      run('<b>')\n  ```" in markdown


@pytest.mark.skipif(
    exports.pdf_unavailable_reason() is not None, reason="WeasyPrint cannot run on this host"
)
def test_pdf_export(owner, client_for):
    run = completed_run(owner)
    response = client_for(owner).get(reverse("research:report_pdf", args=[run.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert response.content.startswith(b"%PDF")


def test_pdf_button_explains_when_pdf_cannot_be_made(owner, client_for, monkeypatch):
    reason = "PDF export needs the Pango text-layout library, which is missing on this server."
    monkeypatch.setattr("research.web.reports.pdf_unavailable_reason", lambda: reason)
    monkeypatch.setattr("research.web.exports.pdf_unavailable_reason", lambda: reason)
    run = completed_run(owner)
    client = client_for(owner)
    page = report_page(client, run)
    assert 'disabled aria-describedby="pdf-why">Export PDF</button>' in page
    assert reason in page
    response = client.get(reverse("research:report_pdf", args=[run.pk]))
    assert response.status_code == 503
    assert reason in response.content.decode()


@contextlib.contextmanager
def counting_server() -> Iterator[tuple[str, list[str]]]:
    """A real loopback HTTP server that records every path requested of it."""
    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            seen.append(self.path)
            body = b"body { color: red }" if self.path.endswith(".css") else b"\x89PNG\r\n"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.skipif(
    exports.pdf_unavailable_reason() is not None, reason="WeasyPrint cannot run on this host"
)
def test_pdf_of_a_report_pointing_at_remote_resources_fetches_nothing(owner, client_for):
    with counting_server() as (base, seen):
        hostile = (
            f'<img src="{base}/x.png"> <link rel="stylesheet" href="{base}/x.css">'
            f'<style>@import url("{base}/i.css");</style>'
        )
        run = make_run(owner, status=ResearchRun.Status.COMPLETED, question=f"Why? {hostile}")
        source = make_source(run, url=f"{base}/page.html", domain="127.0.0.1", title=hostile)
        evidence = [make_evidence(run, source, excerpt=f"Sales rose. {hostile}") for _ in "ab"]
        run.report = report_data(evidence, title=f"Report {hostile}")
        run.save(update_fields=["report"])

        response = client_for(owner).get(reverse("research:report_pdf", args=[run.pk]))

        assert response.status_code == 200
        assert response.content.startswith(b"%PDF")
        assert seen == [], f"PDF rendering fetched {seen}"


def test_the_pdf_url_fetcher_refuses_every_address():
    # The second layer, for markup that escaping ever lets through.
    with pytest.raises(ValueError, match="fetches no resources"):
        exports._refuse_fetch("http://169.254.169.254/latest/meta-data/")


def test_run_without_report(owner, client_for):
    run = make_run(owner, status="researching")
    client = client_for(owner)
    assert "There is no report yet." in report_page(client, run)
    assert client.get(reverse("research:report_markdown", args=[run.pk])).status_code == 404
    assert client.get(reverse("research:report_pdf", args=[run.pk])).status_code == 404


def test_workspace_links_to_the_report_when_there_is_one(owner, client_for):
    run = completed_run(owner)
    page = client_for(owner).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert f'href="{reverse("research:run_report", args=[run.pk])}"' in page


def test_first_party_sources_are_labelled_as_a_heuristic(owner, client_for, htmx_headers):
    from research.engine.quality import FIRST_PARTY_NOTE_PREFIX

    run = completed_run(owner, sources=2)
    source = run.sources.order_by("created_at").first()
    source.source_class = "primary"
    source.quality = {
        "source_class": "primary",
        "authority": "high",
        "notes": [f"{FIRST_PARTY_NOTE_PREFIX} the site's own address names 'example'."],
    }
    source.save(update_fields=["source_class", "quality"])
    client = client_for(owner)
    detail = client.get(reverse("research:source_detail", args=[run.pk, source.pk]))
    assert "First-party (heuristic)" in detail.content.decode()
    markdown = client.get(reverse("research:report_markdown", args=[run.pk])).content.decode()
    assert "· first-party (heuristic)" in markdown
    assert markdown.count("first-party (heuristic)") == 1  # the other source is official
