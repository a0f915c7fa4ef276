"""PDFs are read in a separate process with a wall-time and a memory limit.

The two hostile files are small and valid, and each really makes pypdf explode when read in
the same process (measured, not asserted here; see docs/performance.md, "Uploaded documents"):
``nested_forms_pdf`` (22 KB) keeps pypdf busy for minutes on its one page, and
``inflating_string_pdf`` (68 KB) needs about 880 MB and over a minute. Through the reader they
are stopped at the limits the tests set.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from research.sources.documents.errors import DocumentRefused
from research.sources.documents.limits import MIB, DocumentLimits
from research.sources.documents.pdf_reader import read_pdf
from tests.sources.documents.files import (
    encrypted_pdf,
    inflating_string_pdf,
    nested_forms_pdf,
    report_pdf,
)


def refusal(data: bytes, limits: DocumentLimits) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        read_pdf(data, limits=limits)
    return caught.value


def test_pages_become_page_spans_and_the_outline_becomes_headings() -> None:
    extracted, truncated = read_pdf(report_pdf(), limits=DocumentLimits())

    assert [span.page for span in extracted.pages] == [1, 2, 3]
    for span, phrase in zip(
        extracted.pages, ("drifted 3 cm", "recalibrated the gauge", "second gauge"), strict=True
    ):
        assert phrase in extracted.text[span.start : span.end]
    assert [(h.text, h.offset) for h in extracted.headings] == [
        ("Summary", extracted.pages[0].start),
        ("Calibration", extracted.pages[1].start),
        ("Outlook", extracted.pages[2].start),
    ]
    assert (extracted.title, extracted.author, extracted.published_at) == (
        "Tide Gauge Review",
        "Port Authority",
        "2023-11-20",
    )
    assert truncated is False


def test_a_pdf_that_keeps_the_reader_busy_is_stopped_at_the_time_limit() -> None:
    error = refusal(nested_forms_pdf(), DocumentLimits(pdf_timeout_seconds=2))

    assert error.code == "timeout"
    assert error.reason == (
        "This PDF took longer than 2 seconds to read and was stopped; it may be damaged or "
        "built to stall PDF readers. Printing it to a new PDF often helps."
    )


def test_the_same_structure_at_a_harmless_size_reads_normally() -> None:
    # The refusal above is the time limit at work, not a parse failure of the construction.
    extracted, _ = read_pdf(nested_forms_pdf(depth=2, fan=3, leaf_lines=2), limits=DocumentLimits())

    assert extracted.text.count("hello world") == 6


def test_a_pdf_that_exhausts_memory_is_stopped_at_the_memory_limit() -> None:
    error = refusal(inflating_string_pdf(), DocumentLimits(pdf_memory_bytes=64 * MIB))

    assert error.code == "memory"
    assert error.reason == (
        "This PDF needed more than 64 MB of memory to read and was stopped; it may be "
        "damaged or built to exhaust PDF readers."
    )


def test_a_password_protected_pdf_is_refused_with_the_pipelines_sentence() -> None:
    error = refusal(encrypted_pdf(), DocumentLimits())

    assert error.reason == "This file is a password-protected PDF and cannot be read."


def test_a_damaged_pdf_is_refused_with_a_sentence() -> None:
    data = report_pdf()

    error = refusal(data[:200], DocumentLimits())

    assert error.code == "damaged"
    assert error.reason.startswith("This file ")
    assert "PDF" in error.reason


def test_long_text_is_cut_to_the_snapshot_limit_and_flagged() -> None:
    extracted, truncated = read_pdf(
        nested_forms_pdf(depth=2, fan=40, leaf_lines=20), limits=DocumentLimits(max_text_bytes=2048)
    )
    assert truncated is True
    assert len(extracted.text.encode("utf-8")) <= 2048
    assert all(span.end <= len(extracted.text) for span in extracted.pages)


def test_the_reader_process_loads_pypdf_and_not_the_web_stack() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys, research.sources.documents.pdf_reader, research.sources.extract_pdf; "
            "print(' '.join(sorted({m.split('.')[0] for m in sys.modules})))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()

    assert "pypdf" in loaded
    assert not {"django", "httpx", "trafilatura", "lxml", "markdown_it"} & set(loaded)
