"""Work identity over real adapter outputs: the frozen indexes' answers, merged by
``SearchService`` and collapsed into works by ``research.engine.works``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from research.engine.contracts import SearchCandidate, SourcePolicy
from research.engine.ledger import verify_excerpt
from research.engine.works import collapse_candidates, merge_works
from research.sources.abstracts import abstract_document
from research.sources.errors import SourceError
from research.sources.providers import build_providers, provider_endpoints
from research.sources.safe_fetch import SafeFetcher
from tests.fixtures.frozen_web.server import FrozenWeb
from tests.sources.test_search import service

THREE_INDEXES = ["openalex", "crossref", "semantic_scholar"]
ARXIV_PDF = "https://arxiv.org/pdf/2403.01234v1"


def discover(web: FrozenWeb, providers: Sequence[str], query: str) -> list[SearchCandidate]:
    config = web.sources_config()
    fetcher = SafeFetcher(config, extra_allowed_hosts=provider_endpoints(config))
    search = service(build_providers(config, fetcher), providers)
    return search.discover(query, policy=SourcePolicy(), limit=20)


def test_a_paper_found_through_three_indexes_and_as_a_pdf_is_one_work(web: FrozenWeb) -> None:
    found = discover(web, THREE_INDEXES, "defrost losses air-source heat pumps")
    # The same PDF, found by a web search with nothing but its address.
    web_hit = SearchCandidate(url=ARXIV_PDF, provider="searxng", rank=1)

    works = merge_works([*found, web_hit])

    [defrost] = [w for w in works if w.key == "doi:10.5555/nhj.2024.0107"]
    assert defrost.identity.arxiv == "2403.01234"
    assert {m.provider for m in defrost.members} == {*THREE_INDEXES, "searxng"}
    assert len(defrost.variants) == 4
    by_url = {v.url: v for v in defrost.variants}
    publisher = web.url("/articles/defrost-losses-humid-climates", host="nordic-heat-journal.test")
    assert set(by_url) == {
        publisher,
        "https://doi.org/10.5555/nhj.2024.0107",
        next(u for u in by_url if u.startswith("https://www.semanticscholar.org/paper/")),
        ARXIV_PDF,
    }
    assert by_url[ARXIV_PDF].role == "full_text"
    assert set(by_url[ARXIV_PDF].providers) == {"openalex", "semantic_scholar", "searxng"}
    assert set(by_url[publisher].providers) == {"openalex", "crossref"}
    # No other result of the search joined it.
    assert all(
        m.scholarly is None or m.scholarly.doi == "10.5555/nhj.2024.0107" for m in defrost.members
    )


def test_the_collapsed_work_is_one_candidate_that_reads_the_open_access_pdf(
    web: FrozenWeb,
) -> None:
    found = discover(web, THREE_INDEXES, "defrost losses air-source heat pumps")

    collapsed = collapse_candidates(found)

    [paper] = [c for c in collapsed if c.scholarly and c.scholarly.doi == "10.5555/nhj.2024.0107"]
    assert len(collapsed) < len(found)
    assert paper.url == ARXIV_PDF
    assert set(paper.provider_ranks) == set(THREE_INDEXES)
    assert len(paper.variants) == 4
    assert paper.scholarly is not None
    assert paper.scholarly.authors == ["Rosa Castellan", "Magnus Ivers"]
    assert (paper.scholarly.venue, paper.scholarly.year) == ("Nordic Heat Journal", 2024)
    assert paper.scholarly.arxiv_id == "2403.01234"
    assert [c.rank for c in collapsed] == list(range(1, len(collapsed) + 1))


def test_the_arxiv_preprint_joins_its_published_version(web: FrozenWeb) -> None:
    found = discover(web, [*THREE_INDEXES, "arxiv"], "defrost losses heat pumps")

    [defrost] = [w for w in merge_works(found) if w.identity.arxiv == "2403.01234"]

    assert "arxiv" in {m.provider for m in defrost.members}
    assert f"http://arxiv.test:{web.port}/abs/2403.01234v1" in defrost.variant_urls
    assert f"http://arxiv.test:{web.port}/pdf/2403.01234v1" in defrost.variant_urls
    assert defrost.key == "doi:10.5555/nhj.2024.0107"


def test_two_papers_with_one_title_and_different_dois_stay_two(web: FrozenWeb) -> None:
    found = discover(web, THREE_INDEXES, "seasonal performance ground-source heat pumps cold")
    same_title = [
        c
        for c in found
        if c.scholarly
        and c.scholarly.title == "Seasonal performance of ground-source heat pumps in cold climates"
    ]
    assert len(same_title) == 6  # each paper from each of the three indexes

    works = merge_works(same_title)

    assert sorted(w.key for w in works) == ["doi:10.5555/bsr.2021.118", "doi:10.5555/jgbs.2021.033"]
    for work in works:
        assert len(work.members) == 3
        assert {m.scholarly.doi for m in work.members if m.scholarly} == {work.identity.doi}


def test_a_pubmed_record_joins_the_same_paper_from_other_indexes(web: FrozenWeb) -> None:
    found = discover(
        web, ["pubmed", "openalex", "semantic_scholar"], "indoor air heat pump retrofits"
    )

    [work] = [w for w in merge_works(found) if w.identity.pmid == "37954321"]

    assert {m.provider for m in work.members} == {"pubmed", "openalex", "semantic_scholar"}
    assert "https://pubmed.ncbi.nlm.nih.gov/37954321/" in work.variant_urls
    assert work.full_text_url == "https://pmc.ncbi.nlm.nih.gov/articles/PMC10654321/"


# -- The abstract as the snapshot ----------------------------------------------------------


def test_a_work_without_full_text_is_read_from_its_abstract(web: FrozenWeb) -> None:
    [candidate] = collapse_candidates(discover(web, ["pubmed"], "microcystin drinking water"))
    assert candidate.scholarly is not None and candidate.scholarly.full_text_url is None

    document = abstract_document(
        candidate, max_bytes=200_000, retrieved_at=datetime(2024, 7, 1, tzinfo=UTC)
    )

    assert document.kind == "text" and document.mime_type == "text/plain"
    assert document.final_url == "https://pubmed.ncbi.nlm.nih.gov/38712345/"
    assert document.text.startswith("Microcystin at drinking-water intakes of Lake Tessaly")
    assert "https://doi.org/10.5555/jwhs.2024.0042" in document.text
    assert [h.text for h in document.headings] == [document.title, "Abstract"]
    assert document.author == "Sofia Marangoni, Jonas Petrak, Tessaly Water Board Monitoring Group"
    assert document.publisher == "Journal of Water and Health Surveillance"
    found = verify_excerpt(
        "Microcystin exceeded 1 µg/L in 6.2 per cent of samples",
        document.text,
        headings=document.headings,
    )
    assert found.verified and found.heading == "Abstract"


def test_the_abstract_snapshot_is_bounded_like_any_page(web: FrozenWeb) -> None:
    [candidate] = collapse_candidates(discover(web, ["pubmed"], "microcystin drinking water"))

    document = abstract_document(candidate, max_bytes=300)

    assert document.truncated and document.content_bytes <= 300


def test_a_record_without_abstract_cannot_be_read() -> None:
    bare = SearchCandidate(url="https://doi.org/10.5555/x", provider="crossref", rank=1)

    with pytest.raises(SourceError, match="no abstract") as failure:
        abstract_document(bare, max_bytes=1000)
    assert failure.value.kind == "unsupported"
