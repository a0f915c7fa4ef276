"""Scholarly works as run sources: one source per work with every address kept, conflicting
DOIs never merged, the abstract read when no open-access text is named, and the bibliography
listing DOIs. The indexes are the frozen web's fakes of OpenAlex, Crossref and Semantic
Scholar (their real JSON formats, rate-limit answers included)."""

from __future__ import annotations

import pytest
from django.test import override_settings

from research import services
from research.engine.contracts import SearchCandidate, SourcePolicy
from research.engine.quality import ABSTRACT_ONLY_NOTE, classify_source
from research.engine.works import collapse_candidates
from research.models import ResearchSource
from research.sources import WebSourceAdapter
from research.worker.actors import advance_run
from research.worker.store import DjangoStore
from tests.conftest import make_run
from tests.fixtures.frozen_web.server import FrozenWeb

THREE_INDEXES = ["openalex", "crossref", "semantic_scholar"]
ARXIV_PDF = "https://arxiv.org/pdf/2403.01234v1"
DEFROST_DOI = "10.5555/nhj.2024.0107"



def adapter(web: FrozenWeb, providers: list[str]) -> WebSourceAdapter:
    return WebSourceAdapter(web.sources_config(), providers=providers)


def record(run, candidates: list[SearchCandidate]) -> list[ResearchSource]:
    store = DjangoStore()
    step = store.begin_step(
        str(run.pk), kind="search", dedupe_key="search-1", rationale="", payload={}, iteration=1
    )
    store.record_candidates(str(run.pk), step_id=step.id, candidates=candidates)
    return list(ResearchSource.objects.filter(run=run))


def test_discovery_returns_each_work_once_with_its_addresses(web: FrozenWeb) -> None:
    found = adapter(web, THREE_INDEXES).discover(
        "defrost losses air-source heat pumps", policy=SourcePolicy(), limit=20
    )
    defrost = [c for c in found if c.scholarly and c.scholarly.doi == DEFROST_DOI]
    assert len(defrost) == 1
    assert defrost[0].url == ARXIV_PDF  # the open-access full text is what gets read
    assert len(defrost[0].variants) == 4


@pytest.mark.django_db
def test_a_paper_from_three_indexes_and_as_a_pdf_is_one_source_with_four_addresses(
    web: FrozenWeb, owner
) -> None:
    found = adapter(web, THREE_INDEXES).discover(
        "defrost losses air-source heat pumps", policy=SourcePolicy(), limit=20
    )
    # The same PDF, found by a web search with nothing but its address.
    web_hit = SearchCandidate(url=ARXIV_PDF, provider="searxng", rank=1)
    sources = record(make_run(owner, status="researching"), collapse_candidates([*found, web_hit]))

    [paper] = [s for s in sources if s.scholarly and s.scholarly.doi == DEFROST_DOI]
    assert len(paper.variant_urls) == 4
    assert ARXIV_PDF in paper.variant_urls
    assert "https://doi.org/10.5555/nhj.2024.0107" in paper.variant_urls
    assert set(paper.metadata["work_ids"]) >= {f"doi:{DEFROST_DOI}", "arxiv:2403.01234"}
    assert sum(1 for s in sources if s.url == ARXIV_PDF) == 1
    assert "https://doi.org/10.5555/nhj.2024.0107" in paper.reference
    assert "Rosa Castellan" in paper.reference and "(2024)" in paper.reference
    # Read back by the engine, the source carries the work's identity for clustering.
    record_ = DjangoStore().get_source(str(paper.run_id), str(paper.pk))
    assert f"doi:{DEFROST_DOI}" in record_.work_ids
    assert record_.scholarly is not None and record_.scholarly.venue == "Nordic Heat Journal"


@pytest.mark.django_db
def test_two_papers_with_one_title_and_different_dois_are_two_sources(web, owner) -> None:
    found = adapter(web, THREE_INDEXES).discover(
        "seasonal performance ground-source heat pumps cold", policy=SourcePolicy(), limit=30
    )
    sources = record(make_run(owner, status="researching"), found)
    title = "Seasonal performance of ground-source heat pumps in cold climates"
    same = [s for s in sources if s.scholarly and s.scholarly.title == title]
    assert sorted(s.scholarly.doi for s in same) == [
        "10.5555/bsr.2021.118",
        "10.5555/jgbs.2021.033",
    ]


def test_a_rate_limited_index_is_waited_for_and_the_work_still_found(web: FrozenWeb) -> None:
    web.rate_limit_next("/openalex/works", retry_after="0")
    found = adapter(web, THREE_INDEXES).discover(
        "defrost losses air-source heat pumps", policy=SourcePolicy(), limit=20
    )
    [paper] = [c for c in found if c.scholarly and c.scholarly.doi == DEFROST_DOI]
    assert "openalex" in paper.provider_ranks


def test_a_work_without_open_access_text_is_read_from_its_abstract(web: FrozenWeb) -> None:
    source = adapter(web, ["pubmed"])
    [work] = collapse_candidates(
        source.discover("microcystin drinking water", policy=SourcePolicy(), limit=5)
    )
    assert work.scholarly is not None and work.scholarly.full_text_url is None

    document = source.acquire(
        work.url, policy=SourcePolicy(), max_bytes=200_000, work=work.scholarly
    )

    assert document.abstract_only
    assert work.scholarly.abstract and work.scholarly.abstract[:60] in document.text
    assert ABSTRACT_ONLY_NOTE in classify_source(document).notes


def test_an_unreadable_full_text_falls_back_to_the_abstract(web: FrozenWeb) -> None:
    found = adapter(web, THREE_INDEXES).discover(
        "defrost losses air-source heat pumps", policy=SourcePolicy(), limit=20
    )
    [paper] = [c for c in found if c.scholarly and c.scholarly.doi == DEFROST_DOI]
    broken = paper.scholarly.model_copy(
        update={"full_text_url": web.url("/missing.pdf", host="nordic-heat-journal.test")}
    )
    document = adapter(web, THREE_INDEXES).acquire(
        web.url("/missing.pdf", host="nordic-heat-journal.test"),
        policy=SourcePolicy(),
        max_bytes=200_000,
        work=broken,
    )
    assert document.abstract_only


@pytest.mark.django_db(transaction=True)
def test_a_run_on_scholarly_indexes_stores_each_work_once_and_reads_its_abstract(
    web: FrozenWeb, owner
) -> None:
    scholarly = {
        "RESEARCH_SEARCH_PROVIDERS": [*THREE_INDEXES, "searxng"],
        "RESEARCH_OPENALEX_API_URL": f"{web.base_url}/openalex",
        "RESEARCH_CROSSREF_API_URL": f"{web.base_url}/crossref",
        "RESEARCH_SEMANTIC_SCHOLAR_API_URL": f"{web.base_url}/s2/graph/v1",
    }
    with override_settings(**{**web.django_settings(), **scholarly}):
        run = services.run_create(
            owner=owner,
            question="How large are defrost losses of air-source heat pumps in humid climates?",
            depth="quick",
        )
        advance_run(str(run.pk))
        run.refresh_from_db()
        services.plan_approve(run=run, expected_version=run.plan_version)
        advance_run(str(run.pk))
        run.refresh_from_db()
    assert run.status in ("completed", "budget_exhausted"), (run.status, run.last_error)
    dois = [s.scholarly.doi for s in run.sources.all() if s.scholarly and s.scholarly.doi]
    assert dois and len(dois) == len(set(dois)), dois
    assert DEFROST_DOI in dois
    [defrost] = [s for s in run.sources.all() if s.scholarly and s.scholarly.doi == DEFROST_DOI]
    assert defrost.url == ARXIV_PDF and len(defrost.variant_urls) >= 4
    # The frozen web does not serve arxiv.org, so the open-access PDF cannot be fetched and
    # the index's record with its abstract is what was read, and says so.
    assert defrost.status == "fetched" and defrost.abstract_only
    assert ABSTRACT_ONLY_NOTE in defrost.quality["notes"]
    assert "frost" in defrost.snapshot_text
