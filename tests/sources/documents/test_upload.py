"""parse_upload end to end: real files in, the web pipeline's SourceDocument out, evidence
verifiable with page or heading locators; hostile and wrong files refused with a sentence."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from pathlib import Path

import pytest

from research.engine.contracts import EvidenceCandidate, PdfLocator, SourceDocument, TextLocator
from research.engine.ledger import verify_candidates
from research.sources.documents import (
    DocumentLimits,
    DocumentRefused,
    check_library_capacity,
    document_limits_from_settings,
    document_url,
    parse_document_url,
    parse_upload,
)
from research.sources.documents.addresses import DocumentAddress, is_document_url
from research.sources.documents.limits import MIB
from research.sources.extract_html import extract_html
from tests.sources.documents.files import (
    build_docx,
    nested_forms_pdf,
    paragraph,
    ratio_bomb_docx,
    report_docx,
    report_pdf,
)

URL = document_url("team-7", "3f2b9c1e8d7a4b6f9e0d1c2b3a4f5e6d")
LIMITS = DocumentLimits()
UPLOADED = datetime(2024, 7, 1, 12, 0, tzinfo=UTC)
CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "frozen_web" / "corpus"

MARKDOWN = b"""# Runbook

Restart the queue before the database.

## Recovery

```
systemctl stop queue
systemctl restart postgresql
```

After recovery, check the *lag* dashboard.
"""


def upload(name: str, data: bytes, limits: DocumentLimits = LIMITS) -> SourceDocument:
    return parse_upload(name, data, url=URL, limits=limits, uploaded_at=UPLOADED)


def refusal(name: str, data: bytes, limits: DocumentLimits = LIMITS) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        upload(name, data, limits)
    return caught.value


def evidence_for(document: SourceDocument, excerpt: str):
    outcome = verify_candidates(
        [EvidenceCandidate(excerpt=excerpt, question_ids=["q1"], relevance=0.9, confidence=0.8)],
        run_id="run-1",
        source_id="src-1",
        document=document,
    )
    assert outcome.rejected == []
    return outcome.evidence[0]


def test_a_multi_page_pdf_becomes_a_pdf_source_with_page_locators() -> None:
    document = upload("tide-gauge.pdf", report_pdf())

    assert (document.kind, document.mime_type) == ("pdf", "application/pdf")
    assert document.canonical_url == document.final_url == document.requested_url == URL
    assert document.canonical_url_hash == hashlib.sha256(URL.encode()).hexdigest()
    assert document.title == "Tide Gauge Review"
    assert document.retrieved_at == UPLOADED
    assert [span.page for span in document.pages] == [1, 2, 3]

    evidence = evidence_for(document, "Engineers recalibrated the gauge on 14 August.")

    assert isinstance(evidence.locator, PdfLocator)
    assert (evidence.locator.page, evidence.locator.heading) == (2, "Calibration")
    assert evidence.locator.snapshot_hash == document.content_hash


def test_a_docx_with_headings_and_a_table_gives_heading_locators() -> None:
    document = upload("harbour-survey.docx", report_docx())

    assert document.kind == "text"
    assert document.mime_type == (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    )
    assert (document.title, document.author, document.published_at, document.language) == (
        "Harbour Survey",
        "Ines Duarte",
        "2024-06-03",
        "en-gb",
    )
    assert [h.text for h in document.headings] == [
        "Harbour Survey 2024",
        "Method",
        "Sites",
        "Results",
    ]

    evidence = evidence_for(document, "Ferry slip\t120\t96")

    assert isinstance(evidence.locator, TextLocator)
    assert (evidence.locator.kind, evidence.locator.heading) == ("text", "Results")
    assert document.text[evidence.locator.start : evidence.locator.end] == "Ferry slip\t120\t96"


def test_markdown_keeps_headings_and_code_lines() -> None:
    document = upload("runbook.md", MARKDOWN)

    assert (document.kind, document.mime_type, document.title) == (
        "text",
        "text/markdown",
        "Runbook",
    )
    assert [(h.level, h.text) for h in document.headings] == [(1, "Runbook"), (2, "Recovery")]

    evidence = evidence_for(document, "systemctl stop queue\nsystemctl restart postgresql")

    assert evidence.locator.heading == "Recovery"
    assert "systemctl stop queue\nsystemctl restart postgresql" in document.text


def test_html_goes_through_the_web_pipelines_html_builder() -> None:
    page = (CORPUS / "harwick-transit.test" / "line-3-extension.html").read_bytes()

    document = upload("line-3.html", page)
    web = extract_html(page, url=URL)

    assert document.kind == "html"
    assert len(document.headings) == 6
    assert document.text == web.text
    assert document.headings == web.headings
    assert document.title == web.title


def test_a_saved_web_page_keeps_its_canonical_link_as_a_sign_of_copying() -> None:
    page = b"""<!DOCTYPE html><html lang="en"><head><title>Tariffs 2024</title>
    <link rel="canonical" href="https://energy-agency.test/tariffs?utm_source=x"></head>
    <body><article><h1>Tariffs 2024</h1><p>Network charges rose by 4 percent in 2024, the
    agency said in its annual tariff statement, citing grid reinforcement.</p></article>
    </body></html>"""

    document = upload("tariffs.html", page)

    assert document.canonical_url == URL
    assert document.declared_canonical_url == "https://energy-agency.test/tariffs"


def test_a_saved_captcha_page_is_not_accepted_as_a_document() -> None:
    page = (CORPUS / "quickfacts.test" / "harwick-line-3.html").read_bytes()

    error = refusal("facts.html", page)

    assert (error.code, error.reason) == (
        "not_content",
        "This HTML file is a saved page showing an access check (CAPTCHA) instead of the "
        "document's text; save the page again once its content is visible.",
    )


def test_plain_text_is_kept_as_is_with_normalised_line_endings() -> None:
    document = upload(
        "minutes.txt", "Minutes\r\n\r\nItem 1: budget\r\nItem 2: café\r\n".encode("utf-16")
    )

    assert (document.kind, document.mime_type) == ("text", "text/plain")
    assert document.text == "Minutes\n\nItem 1: budget\nItem 2: café"
    assert document.title == "Minutes"


def test_text_beyond_the_snapshot_limit_is_kept_up_to_it_and_flagged() -> None:
    document = upload("log.txt", b"line of the log\n" * 1000, DocumentLimits(max_text_bytes=4096))

    assert document.truncated is True
    assert document.content_bytes <= 4096


def test_a_zip_bomb_docx_is_refused() -> None:
    error = refusal("survey.docx", ratio_bomb_docx())

    assert error.code == "archive_bomb"
    assert error.reason.endswith("it looks like a zip bomb and was not read.")


def test_a_pdf_that_loops_the_parser_is_refused() -> None:
    error = refusal("report.pdf", nested_forms_pdf(), DocumentLimits(pdf_timeout_seconds=2))

    assert error.reason.startswith("This PDF took longer than 2 seconds to read and was stopped")


def test_a_wrong_extension_is_refused() -> None:
    error = refusal("tide-gauge.docx", report_pdf())

    assert error.reason == (
        "This file says .docx but is a PDF document; rename it to .pdf or upload the file you "
        "meant."
    )


def test_an_empty_file_is_refused() -> None:
    error = refusal("empty.pdf", b"")

    assert (error.code, error.reason) == (
        "empty",
        "This file is empty (0 bytes); there is nothing to read.",
    )


def test_a_file_over_the_limit_is_refused_before_it_is_read() -> None:
    # Over the limit and not even a PDF: the size is checked first, nothing is parsed.
    error = refusal("big.pdf", b"x" * (2 * MIB + 1), DocumentLimits(max_file_bytes=2 * MIB))

    assert (error.code, error.reason) == (
        "too_large",
        "This file is 2 MB, over the 2 MB limit for one document; upload a smaller file or "
        "split it.",
    )


def test_a_document_without_text_is_refused() -> None:
    error = refusal("blank.docx", build_docx(paragraph("   ") + "<w:p/>"))

    assert (error.code, error.reason) == ("no_text", "This document has no readable text.")


def test_the_library_limit_is_checked_with_a_sentence() -> None:
    limits = DocumentLimits(max_file_bytes=10 * MIB, max_library_bytes=100 * MIB)
    check_library_capacity(90 * MIB, 10 * MIB, limits)

    with pytest.raises(DocumentRefused) as caught:
        check_library_capacity(95 * MIB, 10 * MIB, limits)

    assert (caught.value.code, caught.value.reason) == (
        "library_full",
        "This file (10 MB) does not fit in the library: 5 MB of its 100 MB are free; delete "
        "documents or ask an administrator to raise the limit.",
    )


def test_limits_come_from_the_settings(settings) -> None:
    settings.RESEARCH_DOCUMENT_MAX_BYTES = 5 * MIB
    settings.RESEARCH_LIBRARY_MAX_BYTES = 50 * MIB
    settings.RESEARCH_DOCUMENT_PDF_TIMEOUT_SECONDS = 20
    settings.RESEARCH_DOCUMENT_PDF_MEMORY_BYTES = 256 * MIB

    assert document_limits_from_settings() == DocumentLimits(
        max_file_bytes=5 * MIB,
        max_library_bytes=50 * MIB,
        pdf_timeout_seconds=20,
        pdf_memory_bytes=256 * MIB,
    )


def test_limits_that_contradict_each_other_name_the_settings(settings) -> None:
    from django.core.exceptions import ImproperlyConfigured

    settings.RESEARCH_DOCUMENT_MAX_BYTES = 50 * MIB
    settings.RESEARCH_LIBRARY_MAX_BYTES = 10 * MIB

    with pytest.raises(ImproperlyConfigured, match="RESEARCH_LIBRARY_MAX_BYTES"):
        document_limits_from_settings()


def test_document_addresses_have_one_spelling() -> None:
    assert URL == "document://team-7/3f2b9c1e8d7a4b6f9e0d1c2b3a4f5e6d"
    assert parse_document_url(URL) == DocumentAddress("team-7", "3f2b9c1e8d7a4b6f9e0d1c2b3a4f5e6d")
    for bad in ("Team-7", "team/7", "", "-lead", "x" * 65):
        with pytest.raises(ValueError):
            document_url(bad, "d1")
    for other in (
        "https://example.org/a",
        "document://team-7/",
        "document://a/b/c",
        "DOCUMENT://a/b",
    ):
        assert not is_document_url(other)


def test_parse_upload_needs_a_document_address() -> None:
    with pytest.raises(ValueError, match="not a document address"):
        parse_upload("a.txt", b"text", url="https://example.org/a", limits=LIMITS)
