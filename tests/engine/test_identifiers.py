"""Scholarly identifiers: every written form of a DOI, arXiv id, PMID or title compares equal."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.engine.identifiers import (
    ArxivId,
    arxiv_id_from_path,
    doi_url,
    ids_from_url,
    normalize_doi,
    normalize_pmcid,
    normalize_pmid,
    normalize_title,
    parse_arxiv_id,
    title_key,
)

# -- DOIs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "written",
    [
        "10.5555/NHJ.2022.0314",
        "10.5555/nhj.2022.0314",
        "  doi:10.5555/NHJ.2022.0314 ",
        "DOI: 10.5555/nhj.2022.0314",
        "DOI 10.5555/nhj.2022.0314",
        "info:doi/10.5555/nhj.2022.0314",
        "urn:doi:10.5555/nhj.2022.0314",
        "https://doi.org/10.5555/NHJ.2022.0314",
        "http://dx.doi.org/10.5555/nhj.2022.0314",
        "https://www.doi.org/10.5555/nhj.2022.0314",
        "doi.org/10.5555/nhj.2022.0314",
        "https://doi.org/10.5555%2Fnhj.2022.0314",
    ],
)
def test_every_written_form_of_a_doi_is_one_doi(written: str) -> None:
    assert normalize_doi(written) == "10.5555/nhj.2022.0314"


@pytest.mark.parametrize(
    "value",
    [
        "",
        "10.5555",
        "10.55/abc",  # registrant codes have at least four digits
        "11.5555/abc",
        "10.5555/",
        "10.5555/with space",
        "https://example.org/10.5555/abc",  # not a resolver
        "10.5555/" + "x" * 400,
    ],
)
def test_malformed_dois_are_refused(value: str) -> None:
    assert normalize_doi(value) is None


def test_a_doi_keeps_slashes_and_punctuation_of_its_suffix() -> None:
    assert normalize_doi("10.1002/(SICI)1097-4571(199806)49:8<693::AID-ASI4>3.0.CO;2-O") == (
        "10.1002/(sici)1097-4571(199806)49:8<693::aid-asi4>3.0.co;2-o"
    )


def test_doi_url_encodes_what_a_url_cannot_carry() -> None:
    assert doi_url("10.5555/a<b>#c") == "https://doi.org/10.5555/a%3Cb%3E%23c"
    assert normalize_doi(doi_url("10.5555/a<b>#c")) == "10.5555/a<b>#c"


# -- arXiv ids ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "expected"),
    [
        ("2403.01234", ArxivId("2403.01234")),
        ("2403.01234v2", ArxivId("2403.01234", 2)),
        ("arXiv:2403.01234v2", ArxivId("2403.01234", 2)),
        ("ARXIV: 2403.01234", ArxivId("2403.01234")),
        ("0704.0001", ArxivId("0704.0001")),
        ("1412.9999v3", ArxivId("1412.9999", 3)),
        ("hep-th/9901001", ArxivId("hep-th/9901001")),
        ("hep-th/9901001v1", ArxivId("hep-th/9901001", 1)),
        ("math.GT/0309136", ArxivId("math/0309136")),
        ("cond-mat/0703001", ArxivId("cond-mat/0703001")),
        ("10.48550/arXiv.2403.01234", ArxivId("2403.01234")),
    ],
)
def test_arxiv_ids_are_parsed_in_their_old_and_new_styles(written: str, expected: ArxivId) -> None:
    assert parse_arxiv_id(written) == expected


@pytest.mark.parametrize(
    "value",
    [
        "2413.01234",  # month 13
        "0703.0001",  # new style started in April 2007
        "1501.1234",  # four-digit numbers ended in 2014
        "1412.12345",  # five-digit numbers began in 2015
        "2403.01234v0",
        "hep-th/0801001",  # old style ended in March 2007
        "hep-th/991301",
        "not an id",
    ],
)
def test_impossible_arxiv_ids_are_refused(value: str) -> None:
    assert parse_arxiv_id(value) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://arxiv.org/abs/2403.01234",
        "https://arxiv.org/abs/2403.01234v3",
        "http://arxiv.org/pdf/2403.01234v1",
        "https://arxiv.org/pdf/2403.01234v1.pdf",
        "https://arxiv.org/pdf/2403.01234",
        "https://arxiv.org/html/2403.01234v2",
        "https://arxiv.org/html/2403.01234v2/#S3",
        "https://export.arxiv.org/abs/2403.01234",
        "https://www.arxiv.org/format/2403.01234",
        "https://doi.org/10.48550/arXiv.2403.01234",
    ],
)
def test_abs_pdf_and_html_urls_of_one_paper_carry_one_arxiv_id(url: str) -> None:
    assert ids_from_url(url) == {"arxiv": "2403.01234"}


def test_old_style_ids_are_read_from_urls_with_their_archive() -> None:
    assert ids_from_url("https://arxiv.org/abs/hep-th/9901001v2") == {"arxiv": "hep-th/9901001"}
    assert ids_from_url("https://arxiv.org/pdf/math.GT/0309136") == {"arxiv": "math/0309136"}


def test_arxiv_paths_on_other_sites_are_not_arxiv_ids() -> None:
    assert ids_from_url("https://journal.example/abs/2403.01234") == {}
    assert arxiv_id_from_path("/abs/2403.01234v2") == ArxivId("2403.01234", 2)


# -- PubMed ids and other URLs -------------------------------------------------------------


def test_pmids_and_pmcids_are_normalised() -> None:
    assert normalize_pmid("PMID: 0038712345") == "38712345"
    assert normalize_pmid(38712345) == "38712345"
    assert normalize_pmid("0") is None
    assert normalize_pmid("3871234a") is None
    assert normalize_pmid("1234567890") is None
    assert normalize_pmcid("pmc0010654321") == "PMC10654321"
    assert normalize_pmcid("10654321") == "PMC10654321"
    assert normalize_pmcid("PMC") is None


@pytest.mark.parametrize(
    ("url", "ids"),
    [
        ("https://pubmed.ncbi.nlm.nih.gov/38712345/", {"pmid": "38712345"}),
        ("https://www.ncbi.nlm.nih.gov/pubmed/38712345", {"pmid": "38712345"}),
        ("https://pmc.ncbi.nlm.nih.gov/articles/PMC10654321/", {"pmcid": "PMC10654321"}),
        ("https://www.ncbi.nlm.nih.gov/pmc/articles/PMC10654321/", {"pmcid": "PMC10654321"}),
        ("https://www.ncbi.nlm.nih.gov/pmc/articles/10654321", {"pmcid": "PMC10654321"}),
        ("https://europepmc.org/article/MED/38712345", {"pmid": "38712345"}),
        ("https://europepmc.org/article/PMC/PMC10654321", {"pmcid": "PMC10654321"}),
        ("https://onlinelibrary.wiley.com/doi/full/10.1002/ABC.1", {"doi": "10.1002/abc.1"}),
        ("https://dl.acm.org/doi/pdf/10.1145/3442188.3445922", {"doi": "10.1145/3442188.3445922"}),
        ("https://pubmed.ncbi.nlm.nih.gov/?term=heat", {}),
        ("https://www.semanticscholar.org/paper/abc", {}),
        ("ftp://arxiv.org/abs/2403.01234", {}),
        ("not a url", {}),
    ],
)
def test_well_known_scholarly_urls_reveal_their_ids(url: str, ids: dict[str, str]) -> None:
    assert ids_from_url(url) == ids


# -- Titles -------------------------------------------------------------------------------


def test_titles_are_folded_for_comparison() -> None:
    assert normalize_title("Défrost  LOSSES—in “air-source” heat pumps!") == (
        "defrost losses in air source heat pumps"
    )
    assert normalize_title("Eﬃcient ﬁelds") == "efficient fields"
    assert normalize_title("Straße  \u00a0 und\tÖl") == "strasse und ol"
    assert normalize_title("CO₂ uptake") == "co2 uptake"


def test_title_key_needs_a_year_and_a_specific_title() -> None:
    assert title_key("Seasonal performance of heat pumps", 2021) == (
        "seasonal performance of heat pumps|2021"
    )
    assert title_key("Seasonal performance of heat pumps", None) is None
    assert title_key("Editorial", 2021) is None
    assert title_key("Reply to comment", 2021) is None


# -- Properties ---------------------------------------------------------------------------


@st.composite
def arxiv_ids(draw: st.DrawFn) -> str:
    yymm = draw(st.integers(704, 2912).filter(lambda n: 1 <= n % 100 <= 12))
    digits = 4 if yymm < 1501 else 5
    number = draw(st.integers(0, 10**digits - 1))
    version = draw(st.one_of(st.none(), st.integers(1, 30)))
    return f"{yymm:04d}.{number:0{digits}d}" + (f"v{version}" if version else "")


dois = st.builds(
    lambda registrant, suffix: f"10.{registrant}/{suffix}",
    st.integers(1000, 999999999),
    st.text(
        st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="%"),
        min_size=1,
        max_size=40,
    ),
)


@settings(max_examples=300, deadline=None)
@given(dois, st.sampled_from(["", "doi:", "DOI: ", "https://doi.org/", "http://dx.doi.org/"]))
def test_doi_normalisation_is_idempotent_and_ignores_form(doi: str, prefix: str) -> None:
    normalized = normalize_doi(doi)
    assert normalized is not None
    assert normalize_doi(normalized) == normalized
    assert normalize_doi(doi.upper()) == normalized
    if prefix.startswith("http"):
        assert normalize_doi(doi_url(doi).replace("https://doi.org/", prefix)) == normalized
    else:
        assert normalize_doi(prefix + doi) == normalized


@settings(max_examples=300, deadline=None)
@given(arxiv_ids(), st.sampled_from(["abs", "pdf", "html", "format"]))
def test_arxiv_urls_of_any_version_share_the_unversioned_id(arxiv: str, view: str) -> None:
    parsed = parse_arxiv_id(arxiv)
    assert parsed is not None
    assert parse_arxiv_id(str(parsed)) == parsed
    assert parse_arxiv_id(f"arXiv:{arxiv}") == parsed
    assert ids_from_url(f"https://arxiv.org/{view}/{arxiv}") == {"arxiv": parsed.base}
    assert ids_from_url(f"https://doi.org/10.48550/arXiv.{parsed.base}") == {"arxiv": parsed.base}


@settings(max_examples=500, deadline=None)
@given(st.text(max_size=120))
def test_title_normalisation_is_a_fixed_point(title: str) -> None:
    once = normalize_title(title)
    assert normalize_title(once) == once
    assert once == once.strip() and "  " not in once
    if title.isascii():
        assert normalize_title(title.upper()) == normalize_title(title.lower())
