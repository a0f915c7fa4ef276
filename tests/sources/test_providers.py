"""Each search provider against a loopback fake that speaks its real wire format."""

from __future__ import annotations

from typing import Any

import pytest

from research.sources.errors import SourceError
from research.sources.providers import (
    SearchProvider,
    SearchRequest,
    build_providers,
    provider_endpoints,
)
from research.sources.providers.arxiv import _https_for_arxiv
from research.sources.providers.duckduckgo import DuckDuckGoProvider, default_ddgs_factory
from research.sources.safe_fetch import SafeFetcher
from tests.fixtures.frozen_web.server import FrozenWeb


def providers_for(web: FrozenWeb, **overrides: Any) -> dict[str, SearchProvider]:
    config = web.sources_config(**overrides)
    fetcher = SafeFetcher(config, extra_allowed_hosts=provider_endpoints(config))
    return build_providers(config, fetcher)


def hosts(hits: list) -> list[str]:
    return [hit.url.split("/")[2].split(":")[0] for hit in hits]


# -- SearXNG ------------------------------------------------------------------------------


def test_searxng_returns_ranked_hits_from_its_json_api(web: FrozenWeb) -> None:
    hits = providers_for(web)["searxng"].search(
        SearchRequest("Line 3 extension ridership", limit=5)
    )

    assert len(hits) == 5
    assert hits[0].url == web.url("/projects/line-3-extension", host="harwick-transit.test")
    assert hits[0].title.startswith("Line 3 Eastgate–Corran Fields extension")
    assert hits[0].published_at == "2024-01-22"
    assert all(hit.snippet for hit in hits)
    request = web.requests_to("/search")[0]
    assert "format=json" in request.path


def test_searxng_site_restriction_uses_the_site_operator(web: FrozenWeb) -> None:
    hits = providers_for(web)["searxng"].search(
        SearchRequest("heat pump", limit=10, site="energy-agency.test")
    )

    assert hits and set(hosts(hits)) == {"energy-agency.test"}
    assert "site%3Aenergy-agency.test" in web.requests_to("/search")[0].path


def test_searxng_without_a_url_explains_the_setting(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="SEARXNG_URL is not set"):
        providers_for(web, searxng_url="")["searxng"].search(SearchRequest("anything", limit=3))


def test_searxng_malformed_json_is_a_clear_failure(web: FrozenWeb) -> None:
    provider = providers_for(web, searxng_url=web.url("/_lab/malformed"))["searxng"]

    with pytest.raises(SourceError, match="SearXNG answered with malformed JSON") as failure:
        provider.search(SearchRequest("anything", limit=3))
    assert failure.value.kind == "failed"


@pytest.mark.parametrize("name", ["searxng", "brave", "tavily"])
def test_json_of_the_wrong_shape_is_a_clear_failure(name: str, web: FrozenWeb) -> None:
    provider = providers_for(
        web,
        searxng_url=web.url("/_lab/wrong-shape"),
        brave_api_url=web.url("/_lab/wrong-shape/brave"),
        tavily_api_url=web.url("/_lab/wrong-shape/tavily"),
    )[name]

    with pytest.raises(SourceError, match="not a search result list"):
        provider.search(SearchRequest("anything", limit=3))


# -- Brave --------------------------------------------------------------------------------


def test_brave_sends_the_subscription_token_and_reads_web_results(web: FrozenWeb) -> None:
    hits = providers_for(web)["brave"].search(SearchRequest("Solvik heat pump grants", limit=3))

    assert len(hits) == 3
    assert "energy-agency.test" in hosts(hits)
    assert all(hit.published_at for hit in hits)
    request = web.requests_to("/brave/")[0]
    assert request.headers["x-subscription-token"] == "frozen-brave-key"
    assert "count=3" in request.path


def test_brave_with_a_wrong_key_names_the_setting(web: FrozenWeb) -> None:
    with pytest.raises(
        SourceError, match=r"rejected the request \(HTTP 401\); check BRAVE_API_KEY"
    ) as failure:
        providers_for(web, brave_api_key="wrong")["brave"].search(
            SearchRequest("heat pump", limit=3)
        )
    assert failure.value.retryable is False


def test_brave_without_a_key_is_not_called(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="BRAVE_API_KEY is not set"):
        providers_for(web, brave_api_key="")["brave"].search(SearchRequest("heat pump", limit=3))
    assert web.requests_to("/brave/") == []


# -- Tavily -------------------------------------------------------------------------------


def test_tavily_posts_json_with_a_bearer_key(web: FrozenWeb) -> None:
    hits = providers_for(web)["tavily"].search(SearchRequest("Lake Tessaly phosphorus", limit=4))

    assert 0 < len(hits) <= 4
    assert "tessaly-water.test" in hosts(hits)
    request = web.requests_to("/tavily/")[0]
    assert request.method == "POST"
    assert request.headers["authorization"] == "Bearer frozen-tavily-key"
    assert request.headers["content-type"] == "application/json"


def test_tavily_restricts_to_a_site_with_include_domains(web: FrozenWeb) -> None:
    hits = providers_for(web)["tavily"].search(
        SearchRequest("Lake Tessaly phosphorus", limit=10, site="kellmoor-university.test")
    )

    assert hits and set(hosts(hits)) == {"kellmoor-university.test"}


def test_tavily_honours_excluded_domains(web: FrozenWeb) -> None:
    hits = providers_for(web)["tavily"].search(
        SearchRequest("Lake Tessaly bloom", limit=10, exclude_domains=("lakeside-forum.test",))
    )

    assert hits and "lakeside-forum.test" not in hosts(hits)


def test_tavily_with_a_wrong_key_names_the_setting(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="check TAVILY_API_KEY"):
        providers_for(web, tavily_api_key="nope")["tavily"].search(
            SearchRequest("heat pump", limit=3)
        )


# -- Wikipedia ----------------------------------------------------------------------------


def test_wikipedia_builds_article_urls_and_strips_highlighting(web: FrozenWeb) -> None:
    hits = providers_for(web)["wikipedia"].search(
        SearchRequest("seasonal performance factor", limit=5)
    )

    assert hits[0].url == web.url("/wiki/Heat_pump", host="wiki.test")
    assert hits[0].title == "Heat pump"
    assert "<span" not in hits[0].snippet and "searchmatch" not in hits[0].snippet
    request = web.requests_to("/w/api.php")[0]
    assert "list=search" in request.path and "formatversion=2" in request.path


# -- arXiv --------------------------------------------------------------------------------


def test_arxiv_parses_the_atom_feed(web: FrozenWeb) -> None:
    hits = providers_for(web)["arxiv"].search(SearchRequest("defrost losses heat pumps", limit=5))

    assert [hit.url for hit in hits] == [f"http://arxiv.test:{web.port}/abs/2403.01234v1"]
    assert (
        hits[0].title
        == "Defrost losses in air-source heat pumps: frost growth at high humidity near freezing"
    )
    assert hits[0].published_at == "2024-03-02"
    assert hits[0].snippet.startswith("Frost on the outdoor coil")
    assert "search_query=all%3Adefrost+AND+all%3Alosses" in web.requests_to("/arxiv/")[0].path


def test_arxiv_links_are_upgraded_to_https() -> None:
    assert (
        _https_for_arxiv("http://arxiv.org/abs/2403.01234v1")
        == "https://arxiv.org/abs/2403.01234v1"
    )
    assert _https_for_arxiv("http://example.org/abs/1") == "http://example.org/abs/1"


# -- DuckDuckGo through ddgs --------------------------------------------------------------


class FakeDdgs:
    """Stands in for ``ddgs.DDGS``: same ``text()`` signature, canned result dicts."""

    def __init__(self, results: list[dict[str, str]] | Exception) -> None:
        self.results = results
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def text(self, query: str, **kwargs: Any) -> list[dict[str, str]]:
        self.calls.append((query, kwargs))
        if isinstance(self.results, Exception):
            raise self.results
        return self.results


class RatelimitException(Exception):  # noqa: N818 - named like ddgs's own exception
    pass


class DDGSException(Exception):  # noqa: N818
    pass


def test_duckduckgo_wrapper_passes_the_query_and_cleans_results() -> None:
    client = FakeDdgs(
        [
            {
                "title": "Heat pump grants",
                "href": "https://energy.example/grants",
                "body": "The <b>grant</b> pays 25%",
            },
            {"title": "Evil", "href": "javascript:alert(1)", "body": "x"},
            {"title": "Data", "href": "data:text/html,hi", "body": "x"},
            {"title": "Second", "href": "https://journal.example/a", "body": "Field study"},
        ]
    )
    provider = DuckDuckGoProvider(lambda: client, backend="duckduckgo")

    hits = provider.search(SearchRequest("heat pump grants", limit=5, site="example"))

    assert [hit.url for hit in hits] == [
        "https://energy.example/grants",
        "https://journal.example/a",
    ]
    assert hits[0].snippet == "The grant pays 25%"
    query, kwargs = client.calls[0]
    assert query == "heat pump grants site:example"
    assert kwargs["max_results"] == 5 and kwargs["backend"] == "duckduckgo"


def test_duckduckgo_rate_limit_is_retryable() -> None:
    provider = DuckDuckGoProvider(lambda: FakeDdgs(RatelimitException("202 Ratelimit")))

    with pytest.raises(SourceError, match="rate limiting") as failure:
        provider.search(SearchRequest("q", limit=3))
    assert failure.value.retryable is True


def test_duckduckgo_empty_result_page_is_not_an_error() -> None:
    provider = DuckDuckGoProvider(lambda: FakeDdgs(DDGSException("No results found.")))

    assert provider.search(SearchRequest("q", limit=3)) == []


def test_default_ddgs_factory_builds_a_real_client_without_searching() -> None:
    ddgs = pytest.importorskip("ddgs")

    client = default_ddgs_factory(7.0)()

    assert isinstance(client, ddgs.DDGS)


# -- The shared HTTP path -----------------------------------------------------------------


def test_provider_endpoints_are_allowed_only_for_provider_calls(web: FrozenWeb) -> None:
    config = web.sources_config(allowed_hosts=())
    assert f"127.0.0.1:{web.port}" in provider_endpoints(config)

    with pytest.raises(SourceError, match="loopback"):
        SafeFetcher(config).fetch(web.url("/_lab/chain/0"))


def test_provider_redirects_are_not_followed(web: FrozenWeb) -> None:
    provider = providers_for(web, searxng_url=web.url("/_lab/redirect?to=/search&x="))["searxng"]

    with pytest.raises(SourceError, match="SearXNG: .*redirect"):
        provider.search(SearchRequest("heat pump", limit=3))
