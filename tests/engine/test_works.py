"""Work identity: copies of one paper collapse into one work; different papers never do."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from research.engine.contracts import ScholarlyMetadata, SearchCandidate
from research.engine.urls import normalize_url
from research.engine.works import (
    WorkIdentity,
    collapse_candidates,
    identity_from_url,
    merge_works,
    reference_text,
    work_identity,
)


def result(url: str, provider: str = "web", rank: int = 1, **metadata: Any) -> SearchCandidate:
    """A search result; keyword arguments become its scholarly metadata."""
    return SearchCandidate(
        url=url,
        title=str(metadata.get("title", "")),
        provider=provider,
        rank=rank,
        provider_ranks={provider: rank},
        scholarly=ScholarlyMetadata(**metadata) if metadata else None,
    )


TITLE = "Seasonal performance of ground-source heat pumps in cold climates"


# -- Identity -----------------------------------------------------------------------------


def test_identity_comes_from_metadata_then_from_urls() -> None:
    candidate = result(
        "https://journal.example/articles/1",
        doi="https://doi.org/10.5555/ABC",
        full_text_url="https://arxiv.org/pdf/2403.01234v2",
        title=TITLE,
        year=2021,
    )
    identity = work_identity(candidate)
    assert identity == WorkIdentity(
        doi="10.5555/abc", arxiv="2403.01234", title_key=f"{TITLE.lower()}|2021".replace("-", " ")
    )
    assert identity.key == "doi:10.5555/abc"
    assert identity.keys() == ["doi:10.5555/abc", "arxiv:2403.01234"]


def test_an_arxiv_doi_is_the_arxiv_id_not_a_competing_doi() -> None:
    preprint = work_identity(result("https://example.org/x", doi="10.48550/arXiv.2403.01234"))
    assert preprint == WorkIdentity(arxiv="2403.01234")


def test_metadata_wins_over_an_identifier_in_a_url() -> None:
    candidate = result("https://doi.org/10.5555/other", doi="10.5555/abc")
    assert work_identity(candidate).doi == "10.5555/abc"


def test_a_bare_web_result_has_identity_only_from_its_url() -> None:
    assert work_identity(result("https://arxiv.org/abs/2403.01234v3")) == WorkIdentity(
        arxiv="2403.01234"
    )
    assert work_identity(result("https://news.example/story")) == WorkIdentity()
    assert identity_from_url(None) == WorkIdentity()


def test_malformed_identifiers_are_refused_by_the_contract() -> None:
    with pytest.raises(ValidationError, match="not a DOI"):
        ScholarlyMetadata(doi="doi:11.2/x")
    with pytest.raises(ValidationError, match="not an arXiv id"):
        ScholarlyMetadata(arxiv_id="2413.01234")
    with pytest.raises(ValidationError, match="not an http"):
        ScholarlyMetadata(full_text_url="javascript:alert(1)")
    assert ScholarlyMetadata(arxiv_id="arXiv:2403.01234v2").arxiv_id == "2403.01234v2"


# -- Merging ------------------------------------------------------------------------------


def test_results_sharing_a_doi_are_one_work_with_every_address() -> None:
    works = merge_works(
        [
            result("https://journal.example/a", "openalex", doi="10.5555/abc"),
            result("https://doi.org/10.5555/ABC", "crossref", doi="10.5555/ABC"),
        ]
    )
    assert len(works) == 1
    assert works[0].variant_urls == ["https://journal.example/a", "https://doi.org/10.5555/ABC"]
    assert [v.providers for v in works[0].variants] == [["openalex"], ["crossref"]]


def test_abs_pdf_html_and_versions_of_an_arxiv_paper_are_one_work() -> None:
    works = merge_works(
        [
            result("https://arxiv.org/abs/2403.01234"),
            result("https://arxiv.org/pdf/2403.01234v2", rank=2),
            result("https://arxiv.org/html/2403.01234v1", rank=3),
            result("https://arxiv.org/abs/2403.01235", rank=4),
        ]
    )
    assert [len(w.members) for w in works] == [3, 1]
    assert works[0].key == "arxiv:2403.01234"
    # Versions are one work but stay distinct addresses.
    assert len(works[0].variants) == 3


def test_two_papers_with_equal_titles_and_different_dois_stay_two() -> None:
    works = merge_works(
        [
            result("https://a.example/1", "openalex", doi="10.5555/a", title=TITLE, year=2021),
            result("https://b.example/2", "openalex", doi="10.5555/b", title=TITLE, year=2021),
            result(
                "https://doi.org/10.5555/a", "crossref", doi="10.5555/a", title=TITLE, year=2021
            ),
        ]
    )
    assert [w.key for w in works] == ["doi:10.5555/a", "doi:10.5555/b"]
    assert [len(w.members) for w in works] == [2, 1]


def test_conflicting_arxiv_ids_never_merge_even_with_a_shared_doi_or_address() -> None:
    works = merge_works(
        [
            result("https://x.example/p.pdf", doi="10.5555/a", arxiv_id="2403.01234"),
            result("https://x.example/p.pdf", doi="10.5555/a", arxiv_id="2403.09999"),
        ]
    )
    assert len(works) == 2


def test_title_and_year_join_only_results_without_strong_identifiers() -> None:
    works = merge_works(
        [
            result("https://a.example/1", "semantic_scholar", title=TITLE, year=2021),
            result("https://b.example/2", "openalex", title=TITLE.upper() + ".", year=2021),
            result("https://c.example/3", "crossref", doi="10.5555/c", title=TITLE, year=2021),
            result("https://d.example/4", "openalex", title=TITLE, year=2022),
        ]
    )
    assert [len(w.members) for w in works] == [2, 1, 1]


def test_a_result_naming_both_identifiers_joins_two_partial_works() -> None:
    works = merge_works(
        [
            result("https://doi.org/10.5555/a", "crossref", doi="10.5555/a"),
            result("https://arxiv.org/abs/2403.01234", "arxiv", arxiv_id="2403.01234v1"),
            result(
                "https://www.semanticscholar.org/paper/x",
                "semantic_scholar",
                doi="10.5555/a",
                arxiv_id="2403.01234",
            ),
        ]
    )
    assert len(works) == 1
    assert works[0].identity.strong == {"doi": "10.5555/a", "arxiv": "2403.01234"}
    assert works[0].metadata is not None and works[0].metadata.arxiv_id == "2403.01234v1"


def test_a_bridge_between_conflicting_works_joins_only_the_one_it_agrees_with() -> None:
    works = merge_works(
        [
            result("https://doi.org/10.5555/a", "crossref", doi="10.5555/a"),
            result("https://b.example", "openalex", doi="10.5555/b", arxiv_id="2403.01234"),
            result("https://c.example", "semantic_scholar", doi="10.5555/a", arxiv_id="2403.01234"),
        ]
    )
    assert [w.key for w in works] == ["doi:10.5555/a", "doi:10.5555/b"]
    assert [len(w.members) for w in works] == [2, 1]


def test_a_bare_result_at_a_known_address_of_a_work_joins_it() -> None:
    works = merge_works(
        [
            result(
                "https://journal.example/a",
                "openalex",
                doi="10.5555/a",
                full_text_url="https://repository.example/a.pdf",
            ),
            result("https://repository.example/a.pdf", "searxng", rank=2),
        ]
    )
    assert len(works) == 1
    pdf = works[0].variants[1]
    assert (pdf.url, pdf.role, pdf.providers) == (
        "https://repository.example/a.pdf",
        "full_text",
        ["openalex", "searxng"],
    )


# -- Collapsing ---------------------------------------------------------------------------


def test_a_collapsed_work_reads_its_open_access_text_and_keeps_every_rank() -> None:
    collapsed = collapse_candidates(
        [
            result("https://news.example/story", "searxng"),
            result(
                "https://journal.example/a",
                "openalex",
                rank=2,
                doi="10.5555/a",
                title="A paper",
                authors=["Rosa Castellan"],
                abstract="Short.",
            ),
            result(
                "https://www.semanticscholar.org/paper/x",
                "semantic_scholar",
                rank=1,
                doi="10.5555/A",
                full_text_url="https://arxiv.org/pdf/2403.01234v1",
                abstract="A longer abstract.",
                year=2024,
            ),
        ]
    )
    assert [c.rank for c in collapsed] == [1, 2]
    plain, paper = collapsed
    assert plain.variants == [] and plain.scholarly is None
    assert paper.url == "https://arxiv.org/pdf/2403.01234v1"
    assert paper.provider == "semantic_scholar"
    assert paper.provider_ranks == {"openalex": 2, "semantic_scholar": 1}
    assert paper.scholarly is not None
    assert paper.scholarly.doi == "10.5555/a"
    assert paper.scholarly.arxiv_id == "2403.01234"
    assert paper.scholarly.authors == ["Rosa Castellan"]
    assert paper.scholarly.abstract == "A longer abstract."
    assert paper.scholarly.year == 2024
    assert len(paper.variants) == 3


def test_a_work_without_open_access_text_keeps_its_best_ranked_address() -> None:
    [paper] = collapse_candidates(
        [
            result("https://doi.org/10.5555/a", "crossref", rank=3, doi="10.5555/a"),
            result("https://journal.example/a", "openalex", rank=1, doi="10.5555/a"),
        ]
    )
    assert paper.url == "https://journal.example/a"
    assert paper.scholarly is not None and paper.scholarly.full_text_url is None


def test_collapsing_an_already_collapsed_list_changes_nothing() -> None:
    once = collapse_candidates(
        [
            result("https://journal.example/a", "openalex", doi="10.5555/a"),
            result("https://doi.org/10.5555/a", "crossref", rank=2, doi="10.5555/a"),
        ]
    )
    assert collapse_candidates(once) == once


def test_the_reference_lists_the_doi_and_other_identifiers() -> None:
    metadata = ScholarlyMetadata(
        doi="10.5555/NHJ.2024.0107",
        arxiv_id="2403.01234v1",
        title="Defrost losses in air-source heat pumps.",
        authors=["Rosa Castellan", "Magnus Ivers"],
        venue="Nordic Heat Journal",
        year=2024,
    )
    assert reference_text(metadata) == (
        "Rosa Castellan, Magnus Ivers (2024). Defrost losses in air-source heat pumps. "
        "Nordic Heat Journal. https://doi.org/10.5555/nhj.2024.0107 · arXiv:2403.01234v1"
    )
    many = ScholarlyMetadata(authors=[f"Author {i}" for i in range(8)], pmid="123")
    assert reference_text(many) == (
        "Author 0, Author 1, Author 2, Author 3, Author 4, Author 5 et al. PMID 123"
    )


# -- Properties ---------------------------------------------------------------------------

# Small pools so that generated results collide on identifiers, addresses and titles often.
DOIS = [f"10.5555/paper.{i}" for i in range(4)]
ARXIV = [f"2403.0123{i}" for i in range(4)]
PMIDS = [str(38712340 + i) for i in range(3)]
URLS = [f"https://site{i}.example/p" for i in range(4)]
TITLES = [TITLE, "Field performance of air-to-water heat pumps", "Defrost losses in heat pumps"]


@st.composite
def results(draw: st.DrawFn) -> SearchCandidate:
    metadata: dict[str, Any] = {}
    for name, pool in (("doi", DOIS), ("arxiv_id", ARXIV), ("pmid", PMIDS)):
        if draw(st.booleans()):
            metadata[name] = draw(st.sampled_from(pool))
    if draw(st.booleans()):
        metadata["title"] = draw(st.sampled_from(TITLES))
        metadata["year"] = draw(st.sampled_from([2021, 2022]))
    if draw(st.booleans()):
        metadata["full_text_url"] = draw(st.sampled_from(URLS))
    url = draw(
        st.sampled_from(
            URLS + ["https://arxiv.org/abs/2403.01230", "https://doi.org/10.5555/paper.1"]
        )
    )
    provider = draw(st.sampled_from(["openalex", "crossref", "semantic_scholar", "searxng"]))
    return result(url, provider, rank=draw(st.integers(1, 5)), **metadata)


@settings(max_examples=200, deadline=None)
@given(st.lists(results(), max_size=12))
def test_merge_never_joins_conflicting_strong_identifiers(
    candidates: list[SearchCandidate],
) -> None:
    works = merge_works(candidates)
    for work in works:
        for kind in ("doi", "arxiv", "pmid", "pmcid"):
            values = {getattr(work_identity(m), kind) for m in work.members} - {None}
            assert len(values) <= 1, (kind, values)
    # Every result lands in exactly one work, and no address is lost.
    assert sorted(id(m) for w in works for m in w.members) == sorted(id(c) for c in candidates)
    addresses = {normalize_url(c.url) for c in candidates}
    assert addresses <= {url for w in works for url in w.variant_urls}


@st.composite
def consistent_world(draw: st.DrawFn) -> list[tuple[int, SearchCandidate]]:
    """Partial views of a few papers, each paper with its own identifiers and title."""
    papers = [
        {
            "doi": DOIS[i],
            "arxiv_id": ARXIV[i],
            "pmid": f"{38712340 + i}",
            "title": TITLE,
            "year": 2021,
        }
        for i in range(3)
    ]
    views = []
    for _ in range(draw(st.integers(0, 10))):
        index = draw(st.integers(0, len(papers) - 1))
        kinds = draw(
            st.lists(st.sampled_from(["doi", "arxiv_id", "pmid"]), min_size=1, unique=True)
        )
        metadata = {kind: papers[index][kind] for kind in kinds}
        metadata |= {"title": TITLE, "year": 2021}
        url = f"https://view.example/{index}/{draw(st.integers(0, 99))}"
        views.append((index, result(url, "openalex", **metadata)))
    return views


@settings(max_examples=200, deadline=None)
@given(consistent_world())
def test_views_of_different_papers_with_one_title_never_share_a_work(
    views: list[tuple[int, SearchCandidate]],
) -> None:
    works = merge_works([candidate for _, candidate in views])
    paper_of = {id(candidate): index for index, candidate in views}
    for work in works:
        assert len({paper_of[id(member)] for member in work.members}) == 1
    # Views that name the same identifier of the same paper always end in one work.
    for index, candidate in views:
        for other_index, other in views:
            if index == other_index and work_identity(candidate).shares_strong_id(
                work_identity(other)
            ):
                assert _work_of(works, candidate) is _work_of(works, other)


def _work_of(works: list, candidate: SearchCandidate) -> object:
    return next(w for w in works if any(m is candidate for m in w.members))


def test_a_candidate_with_scholarly_metadata_survives_storage_as_json() -> None:
    [paper] = collapse_candidates(
        [
            result(
                "https://journal.example/a", "openalex", doi="10.5555/a", title=TITLE, year=2021
            ),
            result("https://doi.org/10.5555/a", "crossref", rank=2, doi="10.5555/a"),
        ]
    )
    assert SearchCandidate.model_validate_json(paper.model_dump_json()) == paper


def test_metadata_bounds_are_enforced() -> None:
    with pytest.raises(ValidationError, match="at most 100"):
        ScholarlyMetadata(authors=[f"Author {i}" for i in range(101)])
    with pytest.raises(ValidationError):
        ScholarlyMetadata(year=99)
    with pytest.raises(ValidationError):
        SearchCandidate(url="https://x.example", provider="p", rank=1, scholarly={"isbn": "1"})
