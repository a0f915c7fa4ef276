"""The documents benchmark compares like with like: one report, five formats, same content."""

from __future__ import annotations

import pytest

from evals.bench.documents import (
    URL,
    _as_docx,
    _as_html,
    _as_markdown,
    _as_pdf,
    _as_text,
    _sections,
)
from research.sources.documents import DocumentLimits, parse_upload

pytestmark = pytest.mark.service_neutral


def test_every_format_of_the_generated_report_holds_the_same_sections() -> None:
    sections = _sections(20_000)
    files = {
        "report.txt": _as_text(sections),
        "report.md": _as_markdown(sections),
        "report.html": _as_html(sections),
        "report.docx": _as_docx(sections),
        "report.pdf": _as_pdf(sections),
    }

    documents = {
        name: parse_upload(name, data, url=URL, limits=DocumentLimits())
        for name, data in files.items()
    }

    last = sections[-1]["paragraphs"][-1]
    for name, document in documents.items():
        assert document.truncated is False, name
        assert " ".join(last.split()[:12]) in " ".join(document.text.split()), name
    headings = [section["heading"] for section in sections]
    assert [h.text for h in documents["report.md"].headings] == headings
    assert [h.text for h in documents["report.docx"].headings] == headings
    assert [h.text for h in documents["report.html"].headings] == ["Network review", *headings]
