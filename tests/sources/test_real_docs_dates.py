"""The dates table of docs/dates-on-real-pages.md is what the pipeline stores for those pages."""

from __future__ import annotations

from pathlib import Path

import pytest

from research.sources.extract import extract_document
from research.sources.safe_fetch import SafeFetcher
from tests.fixtures.real_docs.catalogue import DOC_SETS
from tests.fixtures.real_docs.measure import BUDGET

pytestmark = pytest.mark.service_neutral

TABLE = Path(__file__).resolve().parents[2] / "docs" / "dates-on-real-pages.md"


def _rows() -> list[tuple[str, str]]:
    rows = []
    for line in TABLE.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("page", "---") and not cells[0].startswith("-"):
            rows.append((cells[0], cells[1]))
    return rows


def test_the_table_has_thirty_real_pages_from_every_set():
    rows = _rows()
    assert len(rows) == 30
    assert {page.split("/")[0] for page, _ in rows} == {s.host for s in DOC_SETS.values()}


def test_the_stored_dates_of_the_table_are_what_the_pipeline_stores(real_docs_web):
    fetcher = SafeFetcher(real_docs_web.sources_config())
    stored = {}
    for page, _ in _rows():
        host, path = page.split("/", 1)
        document = extract_document(
            fetcher.fetch(real_docs_web.url("/" + path, host=host)), max_bytes=BUDGET
        )
        stored[page] = (
            f"{document.published_at} ({document.date_source})"
            if document.published_at
            else "unknown"
        )
    assert stored == dict(_rows())
