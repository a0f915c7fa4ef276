"""The real documentation sets are served under their own host names and found by search."""

from __future__ import annotations

import pytest

from research.engine.contracts import SourcePolicy
from research.sources.adapter import WebSourceAdapter
from tests.fixtures.real_docs.catalogue import DOC_SETS, USED_PACKAGES

pytestmark = pytest.mark.service_neutral


def test_every_set_has_pages_and_reads_only_listed_packages(real_docs_web):
    assert len(real_docs_web.documents) >= 300
    hosts = {d.host for d in real_docs_web.documents}
    assert hosts == {s.host for s in DOC_SETS.values()}
    assert {s.package for s in DOC_SETS.values()} <= USED_PACKAGES


def test_a_real_page_is_found_by_search_and_fetched_under_its_host(real_docs_web):
    adapter = WebSourceAdapter(real_docs_web.sources_config())
    policy = SourcePolicy()
    candidates = adapter.discover("write-ahead log checkpoint", policy=policy, limit=5)
    urls = [c.url for c in candidates]
    wal = real_docs_web.url("/wal.html", host="sqlite.org")
    assert wal in urls
    document = adapter.acquire(wal, policy=policy, max_bytes=200_000)
    assert "checkpoint" in document.text.lower()
    assert document.final_url.startswith("http://sqlite.org:")


def test_site_operator_restricts_to_one_documentation_set(real_docs_web):
    hits = real_docs_web.corpus.search("session commit site:docs.sqlalchemy.org")
    assert hits and all(doc.host == "docs.sqlalchemy.org" for doc, _ in hits)
    outside = real_docs_web.corpus.search("session commit -site:docs.sqlalchemy.org")
    assert all(doc.host != "docs.sqlalchemy.org" for doc, _ in outside)
