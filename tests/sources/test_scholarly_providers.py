"""The scholarly providers against frozen fakes of OpenAlex, Crossref, PubMed E-utilities,
Semantic Scholar and arXiv that answer in the real wire formats (JSON and XML)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from research.engine.contracts import SourcePolicy
from research.sources.errors import SourceError
from research.sources.providers import (
    SearchProvider,
    SearchRequest,
    build_providers,
    provider_endpoints,
)
from research.sources.providers.openalex import abstract_from_inverted_index
from research.sources.safe_fetch import SafeFetcher
from tests.fixtures.frozen_web.scholarly_fakes import SEMANTIC_SCHOLAR_KEY
from tests.fixtures.frozen_web.server import FrozenWeb
from tests.sources.test_search import RecordingSleep, service

MAILTO = "research@example.org"
NO_MATCH = "zebra xylophone quasar"


def provider(web: FrozenWeb, name: str, **overrides: Any) -> SearchProvider:
    config = web.sources_config(**overrides)
    fetcher = SafeFetcher(config, extra_allowed_hosts=provider_endpoints(config))
    return build_providers(config, fetcher)[name]


def params(web: FrozenWeb, path: str, index: int = 0) -> dict[str, list[str]]:
    return parse_qs(urlsplit(web.requests_to(path)[index].path).query)


# -- OpenAlex -----------------------------------------------------------------------------


def test_openalex_reads_identifiers_open_access_and_the_inverted_abstract(web: FrozenWeb) -> None:
    hits = provider(web, "openalex", scholarly_mailto=MAILTO).search(
        SearchRequest("defrost losses heat pumps", limit=3)
    )

    first = hits[0]
    assert first.url == web.url(
        "/articles/defrost-losses-humid-climates", host="nordic-heat-journal.test"
    )
    assert first.title.startswith("Defrost losses in air-source heat pumps")
    assert first.published_at == "2024-06-12"
    meta = first.scholarly
    assert meta is not None
    assert (meta.doi, meta.arxiv_id, meta.year) == ("10.5555/nhj.2024.0107", "2403.01234", 2024)
    assert meta.authors == ["Rosa Castellan", "Magnus Ivers"]
    assert meta.venue == "Nordic Heat Journal"
    assert meta.full_text_url == "https://arxiv.org/pdf/2403.01234v1"
    assert meta.abstract is not None and meta.abstract.startswith("Frost on the outdoor coil")
    assert meta.abstract.startswith(first.snippet.rstrip("…"))
    sent = params(web, "/openalex/works")
    assert sent["search"] == ["defrost losses heat pumps"]
    assert sent["mailto"] == [MAILTO]
    assert sent["per-page"] == ["3"]
    assert "abstract_inverted_index" in sent["select"][0]
    assert "api_key" not in sent


def test_openalex_names_pubmed_ids_and_the_pubmed_central_copy(web: FrozenWeb) -> None:
    hits = provider(web, "openalex", openalex_api_key="oa-key").search(
        SearchRequest("indoor air heat pump retrofits older adults", limit=5)
    )

    meta = next(h.scholarly for h in hits if h.scholarly and h.scholarly.pmid)
    assert (meta.pmid, meta.pmcid) == ("37954321", "PMC10654321")
    assert meta.full_text_url == "https://pmc.ncbi.nlm.nih.gov/articles/PMC10654321/"
    assert params(web, "/openalex/works")["api_key"] == ["oa-key"]
    assert "mailto" not in params(web, "/openalex/works")


def test_openalex_work_without_open_access_names_no_full_text(web: FrozenWeb) -> None:
    hits = provider(web, "openalex").search(SearchRequest("ground source borehole", limit=5))

    assert hits and all(h.scholarly and h.scholarly.full_text_url is None for h in hits)


def test_inverted_abstract_is_rebuilt_in_order_and_bounded() -> None:
    assert abstract_from_inverted_index({"world": [1], "Hello": [0], "again": [3], "!": [2]}) == (
        "Hello world ! again"
    )
    assert abstract_from_inverted_index({"bad": ["x", -1, True], "ok": [0]}) == "ok"
    assert abstract_from_inverted_index(None) is None
    huge = abstract_from_inverted_index({"word": list(range(100_000))})
    assert huge is not None and len(huge) <= 10_000


# -- Crossref -----------------------------------------------------------------------------


def test_crossref_reads_the_work_list_and_strips_jats(web: FrozenWeb) -> None:
    hits = provider(web, "crossref", scholarly_mailto=MAILTO).search(
        SearchRequest("field performance air-to-water heat pumps Solvik", limit=2)
    )

    first = hits[0]
    assert first.url == "https://doi.org/10.5555/NHJ.2022.0314"
    meta = first.scholarly
    assert meta is not None
    assert meta.doi == "10.5555/nhj.2022.0314"
    assert meta.authors == ["Eira Lindqvist", "Tomas Brenner", "Hana Okafor"]
    assert (meta.venue, meta.year) == ("Nordic Heat Journal", 2022)
    assert meta.landing_url == web.url(
        "/articles/field-performance-cold-climate", host="nordic-heat-journal.test"
    )
    assert meta.abstract is not None and meta.abstract.startswith("We monitored 112")
    assert "<" not in meta.abstract
    assert meta.full_text_url is None  # Crossref does not say what is open access
    assert first.published_at == "2022-09-15"
    sent = params(web, "/crossref/works")
    assert sent["query"] == ["field performance air-to-water heat pumps Solvik"]
    assert sent["mailto"] == [MAILTO] and sent["rows"] == ["2"]


def test_crossref_reads_the_preprint_relation_as_the_arxiv_id(web: FrozenWeb) -> None:
    hits = provider(web, "crossref").search(SearchRequest("defrost losses", limit=1))

    assert hits[0].scholarly is not None
    assert hits[0].scholarly.arxiv_id == "2403.01234"
    assert hits[0].scholarly.doi == "10.5555/nhj.2024.0107"


def test_crossref_structured_abstract_and_group_author(web: FrozenWeb) -> None:
    hits = provider(web, "crossref").search(SearchRequest("microcystin Lake Tessaly", limit=1))

    meta = hits[0].scholarly
    assert meta is not None
    assert meta.authors[-1] == "Tessaly Water Board Monitoring Group"
    assert meta.abstract is not None and meta.abstract.startswith("Background: Cyanobacterial")


# -- PubMed -------------------------------------------------------------------------------


def test_pubmed_searches_ids_then_fetches_records(web: FrozenWeb) -> None:
    pubmed = provider(web, "pubmed", scholarly_mailto=MAILTO, ncbi_api_key="ncbi-key")

    hits = pubmed.search(SearchRequest("microcystin drinking water intakes", limit=5))

    assert [h.url for h in hits] == ["https://pubmed.ncbi.nlm.nih.gov/38712345/"]
    meta = hits[0].scholarly
    assert meta is not None
    assert (meta.pmid, meta.doi, meta.pmcid) == ("38712345", "10.5555/jwhs.2024.0042", None)
    assert meta.authors == [
        "Sofia Marangoni",
        "Jonas Petrak",
        "Tessaly Water Board Monitoring Group",
    ]
    assert meta.venue == "Journal of Water and Health Surveillance"
    assert meta.abstract is not None
    assert meta.abstract.startswith("BACKGROUND: Cyanobacterial blooms")
    assert "METHODS: We analysed 1,284" in meta.abstract
    assert meta.full_text_url is None  # abstract only
    assert hits[0].published_at == "2024-02-27"
    for path in ("/eutils/esearch.fcgi", "/eutils/efetch.fcgi"):
        sent = params(web, path)
        assert sent["db"] == ["pubmed"] and sent["retmode"] == ["xml"]
        assert sent["tool"] == ["deep-research"]
        assert sent["email"] == [MAILTO] and sent["api_key"] == ["ncbi-key"]
    assert params(web, "/eutils/efetch.fcgi")["id"] == ["38712345"]


def test_pubmed_record_in_pubmed_central_names_its_full_text(web: FrozenWeb) -> None:
    hits = provider(web, "pubmed").search(SearchRequest("indoor air heat pump retrofits", limit=5))

    meta = hits[0].scholarly
    assert meta is not None and meta.pmcid == "PMC10654321"
    assert meta.full_text_url == "https://pmc.ncbi.nlm.nih.gov/articles/PMC10654321/"
    assert "email" not in params(web, "/eutils/esearch.fcgi")


def test_pubmed_without_matches_does_not_fetch(web: FrozenWeb) -> None:
    assert provider(web, "pubmed").search(SearchRequest(NO_MATCH, limit=5)) == []
    assert web.requests_to("/eutils/efetch.fcgi") == []


def test_pubmed_refusal_is_reported_in_its_own_words(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="PubMed refused the search: Empty term"):
        provider(web, "pubmed").search(SearchRequest("   ", limit=5))


@pytest.mark.parametrize(
    ("lab", "message"),
    [
        ("/_lab/malformed-xml", "PubMed answered with malformed XML"),
        ("/_lab/wrong-shape-xml", "not an eSearchResult"),
    ],
)
def test_pubmed_malformed_xml_is_a_clear_failure(web: FrozenWeb, lab: str, message: str) -> None:
    with pytest.raises(SourceError, match=message) as failure:
        provider(web, "pubmed", pubmed_api_url=web.url(lab)).search(SearchRequest("heat", limit=3))
    assert failure.value.kind == "failed" and not failure.value.retryable


# -- Semantic Scholar ---------------------------------------------------------------------


def test_semantic_scholar_reads_external_ids_and_the_open_access_pdf(web: FrozenWeb) -> None:
    hits = provider(web, "semantic_scholar", semantic_scholar_api_key=SEMANTIC_SCHOLAR_KEY).search(
        SearchRequest("air-source heat pumps defrost", limit=3)
    )

    first = hits[0]
    assert first.url.startswith("https://www.semanticscholar.org/paper/")
    meta = first.scholarly
    assert meta is not None
    assert (meta.doi, meta.arxiv_id) == ("10.5555/nhj.2024.0107", "2403.01234")
    assert meta.full_text_url == "https://arxiv.org/pdf/2403.01234v1"
    assert meta.landing_url == first.url
    request = web.requests_to("/s2/graph/v1/paper/search")[0]
    assert request.headers["x-api-key"] == SEMANTIC_SCHOLAR_KEY
    sent = params(web, "/s2/graph/v1/paper/search")
    # The API matches hyphenated words only when the hyphen is a space.
    assert sent["query"] == ["air source heat pumps defrost"]
    assert "openAccessPdf" in sent["fields"][0] and "externalIds" in sent["fields"][0]


def test_semantic_scholar_empty_pdf_url_means_no_full_text(web: FrozenWeb) -> None:
    hits = provider(web, "semantic_scholar").search(
        SearchRequest("borehole field designs", limit=3)
    )

    assert hits and hits[0].scholarly is not None
    assert hits[0].scholarly.full_text_url is None
    assert "x-api-key" not in web.requests_to("/s2/graph/v1/paper/search")[0].headers


def test_semantic_scholar_paper_without_doi_keeps_its_arxiv_id(web: FrozenWeb) -> None:
    hits = provider(web, "semantic_scholar").search(
        SearchRequest("internal phosphorus loading sediment diagenesis", limit=3)
    )

    meta = hits[0].scholarly
    assert meta is not None and meta.doi is None and meta.arxiv_id == "2311.04567"


def test_semantic_scholar_with_a_wrong_key_names_the_setting(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="check SEMANTIC_SCHOLAR_API_KEY"):
        provider(web, "semantic_scholar", semantic_scholar_api_key="wrong").search(
            SearchRequest("heat pumps", limit=3)
        )


# -- arXiv --------------------------------------------------------------------------------


def test_arxiv_hits_carry_the_id_pdf_and_published_version(web: FrozenWeb) -> None:
    hits = provider(web, "arxiv").search(SearchRequest("defrost losses heat pumps", limit=5))

    meta = hits[0].scholarly
    assert meta is not None
    assert meta.arxiv_id == "2403.01234v1"
    assert meta.doi == "10.5555/nhj.2024.0107"
    assert meta.venue == "Nordic Heat Journal 16 (2024)"
    assert meta.full_text_url == f"http://arxiv.test:{web.port}/pdf/2403.01234v1"
    assert meta.authors == ["Rosa Castellan", "Magnus Ivers"]


# -- What every scholarly provider must get right ------------------------------------------

# provider, the path its fake serves, a query with results
PROVIDERS = [
    ("openalex", "/openalex/works", "defrost losses heat pumps"),
    ("crossref", "/crossref/works", "defrost losses heat pumps"),
    ("pubmed", "/eutils/esearch.fcgi", "microcystin drinking water"),
    ("semantic_scholar", "/s2/graph/v1/paper/search", "defrost losses heat pumps"),
]
JSON_PROVIDERS = [p for p in PROVIDERS if p[0] != "pubmed"]
URL_SETTING = {
    "openalex": "openalex_api_url",
    "crossref": "crossref_api_url",
    "pubmed": "pubmed_api_url",
    "semantic_scholar": "semantic_scholar_api_url",
}


@pytest.mark.parametrize(("name", "path", "query"), PROVIDERS)
def test_no_match_is_an_empty_list(web: FrozenWeb, name: str, path: str, query: str) -> None:
    assert provider(web, name).search(SearchRequest(NO_MATCH, limit=5)) == []
    assert len(web.requests_to(path)) == 1


@pytest.mark.parametrize(("name", "path", "query"), JSON_PROVIDERS)
@pytest.mark.parametrize("lab", ["/_lab/malformed", "/_lab/wrong-shape"])
def test_malformed_json_is_a_clear_failure(
    web: FrozenWeb, name: str, path: str, query: str, lab: str
) -> None:
    broken = provider(web, name, **{URL_SETTING[name]: web.url(lab)})

    with pytest.raises(SourceError) as failure:
        broken.search(SearchRequest(query, limit=3))
    assert failure.value.kind == "failed" and not failure.value.retryable
    assert failure.value.reason.startswith(broken.label)
    assert "malformed JSON" in failure.value.reason or "JSON that is not a" in failure.value.reason


def frozen_search(web: FrozenWeb, name: str, sleep: RecordingSleep) -> Any:
    config = web.sources_config()
    fetcher = SafeFetcher(config, extra_allowed_hosts=provider_endpoints(config))
    return service(build_providers(config, fetcher), [name], sleep=sleep)


@pytest.mark.parametrize(("name", "path", "query"), PROVIDERS)
def test_rate_limit_answer_is_retried_after_its_retry_after(
    web: FrozenWeb, name: str, path: str, query: str
) -> None:
    web.rate_limit_next(path, retry_after="2")
    sleep = RecordingSleep()

    candidates = frozen_search(web, name, sleep).discover(query, policy=SourcePolicy())

    assert candidates and candidates[0].scholarly is not None
    assert len(web.requests_to(path)) == 2
    assert sleep.calls == [2.0]


@pytest.mark.parametrize(("name", "path", "query"), PROVIDERS)
def test_rate_limit_asking_too_long_a_wait_gives_up_at_once(
    web: FrozenWeb, name: str, path: str, query: str
) -> None:
    web.rate_limit_next(path, retry_after="3600")

    with pytest.raises(SourceError, match="longer than we wait") as failure:
        frozen_search(web, name, RecordingSleep()).discover(query, policy=SourcePolicy())
    assert failure.value.retryable
    assert len(web.requests_to(path)) == 1


@pytest.mark.parametrize(("name", "path", "query"), PROVIDERS)
def test_a_passing_server_error_is_retried(
    web: FrozenWeb, name: str, path: str, query: str
) -> None:
    web.fail_next(path, 503)
    sleep = RecordingSleep()

    assert frozen_search(web, name, sleep).discover(query, policy=SourcePolicy())
    assert len(web.requests_to(path)) == 2 and len(sleep.calls) == 1


@pytest.mark.parametrize(("name", "path", "query"), PROVIDERS)
def test_an_internal_server_error_fails_without_retrying(
    web: FrozenWeb, name: str, path: str, query: str
) -> None:
    web.fail_next(path, 500)

    with pytest.raises(SourceError, match="HTTP 500") as failure:
        frozen_search(web, name, RecordingSleep()).discover(query, policy=SourcePolicy())
    assert not failure.value.retryable
    assert len(web.requests_to(path)) == 1


def test_pubmed_rate_limited_on_efetch_retries_the_whole_search(web: FrozenWeb) -> None:
    web.rate_limit_next("/eutils/efetch.fcgi", retry_after="1")
    sleep = RecordingSleep()

    candidates = frozen_search(web, "pubmed", sleep).discover(
        "microcystin drinking water", policy=SourcePolicy()
    )

    assert [c.scholarly.pmid for c in candidates if c.scholarly] == ["38712345"]
    assert len(web.requests_to("/eutils/esearch.fcgi")) == 2
    assert len(web.requests_to("/eutils/efetch.fcgi")) == 2
    assert sleep.calls == [1.0]
