"""Search providers behind one interface (``SearchProvider.search(SearchRequest)``).

``build_providers`` creates every known provider from a ``SourcesConfig``;
which of them a search uses is decided by ``research.sources.search``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from research.sources.config import PROVIDER_URL_FIELDS, SourcesConfig
from research.sources.providers.arxiv import ArxivProvider
from research.sources.providers.base import ProviderClient, SearchHit, SearchProvider, SearchRequest
from research.sources.providers.brave import BraveProvider
from research.sources.providers.crossref import CrossrefProvider
from research.sources.providers.duckduckgo import (
    DdgsFactory,
    DuckDuckGoProvider,
    default_ddgs_factory,
)
from research.sources.providers.openalex import OpenAlexProvider
from research.sources.providers.pubmed import PubMedProvider
from research.sources.providers.searxng import SearxngProvider
from research.sources.providers.semantic_scholar import SemanticScholarProvider
from research.sources.providers.tavily import TavilyProvider
from research.sources.providers.wikipedia import WikipediaProvider
from research.sources.safe_fetch import SafeFetcher

__all__ = [
    "ArxivProvider",
    "BraveProvider",
    "CrossrefProvider",
    "DuckDuckGoProvider",
    "OpenAlexProvider",
    "PubMedProvider",
    "SearchHit",
    "SearchProvider",
    "SearchRequest",
    "SearxngProvider",
    "SemanticScholarProvider",
    "TavilyProvider",
    "WikipediaProvider",
    "build_providers",
    "provider_endpoints",
]


def provider_endpoints(config: SourcesConfig) -> list[str]:
    """``host:port`` of every configured provider URL.

    The operator chose these endpoints, so provider calls may reach them even
    on a private network (a SearXNG container next to the app, for instance).
    Page fetches never get this exception.
    """
    entries = []
    for url in (getattr(config, name) for name in PROVIDER_URL_FIELDS):
        if not url:
            continue
        parts = urlsplit(url)
        if not parts.hostname:
            continue
        port = parts.port or (443 if parts.scheme == "https" else 80)
        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
        entries.append(f"{host}:{port}")
    return entries


def build_providers(
    config: SourcesConfig, fetcher: SafeFetcher, *, ddgs_factory: DdgsFactory | None = None
) -> dict[str, SearchProvider]:
    """Create every known provider, keyed by its setting name."""

    def client(label: str, key_setting: str | None = None) -> ProviderClient:
        return ProviderClient(
            fetcher, label=label, timeout=config.search_timeout, key_setting=key_setting
        )

    providers: list[SearchProvider] = [
        SearxngProvider(client("SearXNG", "SEARXNG_URL"), config.searxng_url),
        DuckDuckGoProvider(
            ddgs_factory or default_ddgs_factory(config.search_timeout), backend=config.ddgs_backend
        ),
        BraveProvider(
            client("Brave Search", "BRAVE_API_KEY"),
            api_url=config.brave_api_url,
            api_key=config.brave_api_key,
        ),
        TavilyProvider(
            client("Tavily", "TAVILY_API_KEY"),
            api_url=config.tavily_api_url,
            api_key=config.tavily_api_key,
        ),
        WikipediaProvider(client("Wikipedia"), api_url=config.wikipedia_api_url),
        ArxivProvider(client("arXiv"), api_url=config.arxiv_api_url),
        OpenAlexProvider(
            client("OpenAlex", "OPENALEX_API_KEY"),
            api_url=config.openalex_api_url,
            mailto=config.scholarly_mailto,
            api_key=config.openalex_api_key,
        ),
        CrossrefProvider(
            client("Crossref"), api_url=config.crossref_api_url, mailto=config.scholarly_mailto
        ),
        PubMedProvider(
            client("PubMed", "NCBI_API_KEY"),
            api_url=config.pubmed_api_url,
            tool=config.ncbi_tool,
            email=config.scholarly_mailto,
            api_key=config.ncbi_api_key,
        ),
        SemanticScholarProvider(
            client("Semantic Scholar", "SEMANTIC_SCHOLAR_API_KEY"),
            api_url=config.semantic_scholar_api_url,
            api_key=config.semantic_scholar_api_key,
        ),
    ]
    return {provider.name: provider for provider in providers}
