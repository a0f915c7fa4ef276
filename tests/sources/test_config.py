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
