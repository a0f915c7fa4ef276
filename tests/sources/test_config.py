"""SourcesConfig and the one place that reads Django settings."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from research.sources.config import SourcesConfig, parse_static_hosts, sources_config_from_settings


def test_settings_are_read_with_their_types() -> None:
    with override_settings(
        RESEARCH_FETCH_ALLOWED_HOSTS="127.0.0.1:8765, *.frozen.test:8765",
        RESEARCH_FETCH_STATIC_HOSTS=["*.frozen.test=127.0.0.1"],
        RESEARCH_SEARCH_PROVIDERS=["searxng", "wikipedia"],
        RESEARCH_SEARCH_MODE="fallback",
        RESEARCH_FETCH_TOTAL_TIMEOUT="12.5",
        RESEARCH_FETCH_MAX_BYTES=1_000_000,
        SEARXNG_URL="http://searxng:8080",
        BRAVE_API_KEY="brave-key",
    ):
        config = sources_config_from_settings()

    assert config.allowed_hosts == ("127.0.0.1:8765", "*.frozen.test:8765")
    assert config.static_hosts == {"*.frozen.test": "127.0.0.1"}
    assert config.search_providers == ("searxng", "wikipedia")
    assert config.search_mode == "fallback"
    assert config.total_timeout == 12.5
    assert config.max_page_bytes == 1_000_000
    assert config.searxng_url == "http://searxng:8080"
    assert config.brave_api_key == "brave-key"


@pytest.mark.parametrize(
    ("setting", "value", "clue"),
    [
        ("RESEARCH_SEARCH_PROVIDERS", "searxng,bing", "bing"),
        ("RESEARCH_SEARCH_MODE", "random", "ensemble"),
        ("RESEARCH_FETCH_READ_TIMEOUT", "soon", "soon"),
        ("RESEARCH_FETCH_ALLOWED_HOSTS", "127.0.0.1:http", "not a number"),
        ("RESEARCH_FETCH_STATIC_HOSTS", "wiki.corp", "name=address"),
        ("RESEARCH_FETCH_STATIC_HOSTS", "wiki.corp=intranet", "must map to an IP address"),
        ("RESEARCH_RETRY_MAX_ATTEMPTS", 0, "between 1 and 10"),
    ],
)
def test_bad_settings_name_the_setting(setting: str, value: object, clue: str) -> None:
    with override_settings(**{setting: value}), pytest.raises(ImproperlyConfigured) as error:
        sources_config_from_settings()
    assert setting in str(error.value)
    assert clue in str(error.value)


def test_defaults_describe_a_safe_public_deployment() -> None:
    config = SourcesConfig()

    assert config.allowed_hosts == ()
    assert config.max_redirects == 5
    assert config.max_attempts == 3
    assert config.user_agent.startswith("DeepResearchBot/0.1")


def test_static_hosts_accept_wildcards_and_idn_names() -> None:
    assert parse_static_hosts("*.test=127.0.0.1, Bücher.example=10.0.0.2") == {
        "*.test": "127.0.0.1",
        "xn--bcher-kva.example": "10.0.0.2",
    }


def test_scholarly_settings_are_read() -> None:
    with override_settings(
        RESEARCH_SEARCH_PROVIDERS="openalex,crossref,pubmed,semantic_scholar,arxiv",
        RESEARCH_SCHOLARLY_MAILTO="research@example.org",
        RESEARCH_OPENALEX_API_URL="https://openalex.internal.example/api",
        OPENALEX_API_KEY="oa",
        RESEARCH_CROSSREF_API_URL="https://crossref.internal.example",
        RESEARCH_PUBMED_API_URL="https://eutils.internal.example/entrez/eutils/",
        NCBI_API_KEY="ncbi",
        RESEARCH_NCBI_TOOL="acme-research",
        RESEARCH_SEMANTIC_SCHOLAR_API_URL="https://s2.internal.example/graph/v1",
        SEMANTIC_SCHOLAR_API_KEY="s2",
    ):
        config = sources_config_from_settings()

    assert config.search_providers == (
        "openalex",
        "crossref",
        "pubmed",
        "semantic_scholar",
        "arxiv",
    )
    assert config.scholarly_mailto == "research@example.org"
    assert config.openalex_api_url == "https://openalex.internal.example/api"
    assert (config.openalex_api_key, config.ncbi_api_key) == ("oa", "ncbi")
    assert config.semantic_scholar_api_key == "s2"
    assert config.ncbi_tool == "acme-research"


def test_scholarly_defaults_are_the_public_apis() -> None:
    config = SourcesConfig()

    assert config.openalex_api_url == "https://api.openalex.org"
    assert config.crossref_api_url == "https://api.crossref.org"
    assert config.pubmed_api_url == "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    assert config.semantic_scholar_api_url == "https://api.semanticscholar.org/graph/v1"
    assert config.scholarly_mailto == ""


@pytest.mark.parametrize(
    ("setting", "value", "clue"),
    [
        ("RESEARCH_OPENALEX_API_URL", "api.openalex.org", "absolute http"),
        ("RESEARCH_CROSSREF_API_URL", "ftp://api.crossref.org", "absolute http"),
        ("RESEARCH_PUBMED_API_URL", "https://eutils.example/?db=pubmed", "base URL"),
        ("RESEARCH_SEMANTIC_SCHOLAR_API_URL", "https://user:pw@s2.example", "password"),
        ("RESEARCH_SEMANTIC_SCHOLAR_API_URL", "https://s2.example:99999", "not a valid URL"),
        ("RESEARCH_ARXIV_API_URL", "export.arxiv.org/api/query", "absolute http"),
        ("SEARXNG_URL", "searxng:8080", "absolute http"),
        ("RESEARCH_SCHOLARLY_MAILTO", "not an address", "e-mail address"),
        ("RESEARCH_NCBI_TOOL", "deep research", "without spaces"),
    ],
)
def test_bad_scholarly_settings_name_the_setting(setting: str, value: str, clue: str) -> None:
    with override_settings(**{setting: value}), pytest.raises(ImproperlyConfigured) as error:
        sources_config_from_settings()
    assert setting in str(error.value)
    assert clue in str(error.value)
