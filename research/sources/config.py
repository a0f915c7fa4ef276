"""Configuration of source acquisition as one plain, immutable value.

``sources_config_from_settings`` is the only place in ``research.sources``
that reads Django settings; everything else receives a ``SourcesConfig`` so
tests can build one directly.
"""

from __future__ import annotations

import ipaddress
import os
import re
import ssl
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from research.sources.addresses import normalize_host, parse_allowed_host

KNOWN_PROVIDERS: tuple[str, ...] = (
    "searxng",
    "duckduckgo",
    "brave",
    "tavily",
    "wikipedia",
    "arxiv",
    "openalex",
    "crossref",
    "pubmed",
    "semantic_scholar",
)

SearchMode = Literal["ensemble", "fallback"]

DEFAULT_USER_AGENT = (
    "DeepResearchBot/0.1 (+self-hosted research assistant; reads public pages once)"
)


@dataclass(frozen=True)
class SourcesConfig:
    """Everything ``research.sources`` needs to know about its environment.

    Times are seconds, sizes are bytes. Defaults suit a public deployment;
    tests shorten the timeouts and add the loopback test web to
    ``allowed_hosts``.
    """

    allowed_hosts: tuple[str, ...] = ()
    static_hosts: Mapping[str, str] = field(default_factory=dict)
    user_agent: str = DEFAULT_USER_AGENT
    connect_timeout: float = 5.0
    read_timeout: float = 10.0
    total_timeout: float = 30.0
    # A response must bring this many bytes in every read_timeout window, or it is cut as
    # stalled. The read timeout alone is defeated by a server that drips one byte just before
    # it fires; 1 KB per 10 s (about 100 bytes a second) is far below any real link (2G GPRS
    # carries several kilobytes a second), so only a trickling or stuck server trips it. It
    # also lets bursty servers pause (a page rendered slowly, then sent at once). 0 turns the
    # check off, leaving the per-read and total limits.
    min_progress_bytes: int = 1024
    max_page_bytes: int = 2 * 1024 * 1024
    max_pdf_bytes: int = 10 * 1024 * 1024
    max_redirects: int = 5
    ca_bundle: str = ""
    domain_interval: float = 1.0
    search_providers: tuple[str, ...] = ("duckduckgo",)
    search_mode: SearchMode = "ensemble"
    search_timeout: float = 15.0
    provider_interval: float = 1.0
    max_attempts: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 8.0
    max_retry_after: float = 30.0
    searxng_url: str = ""
    brave_api_key: str = ""
    brave_api_url: str = "https://api.search.brave.com/res/v1/web/search"
    tavily_api_key: str = ""
    tavily_api_url: str = "https://api.tavily.com/search"
    wikipedia_api_url: str = "https://en.wikipedia.org/w/api.php"
    arxiv_api_url: str = "https://export.arxiv.org/api/query"
    ddgs_backend: str = "duckduckgo"
    scholarly_mailto: str = ""
    openalex_api_url: str = "https://api.openalex.org"
    openalex_api_key: str = ""
    crossref_api_url: str = "https://api.crossref.org"
    pubmed_api_url: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    ncbi_api_key: str = ""
    ncbi_tool: str = "deep-research"
    semantic_scholar_api_url: str = "https://api.semanticscholar.org/graph/v1"
    semantic_scholar_api_key: str = ""

    def __post_init__(self) -> None:
        if self.ca_bundle:
            check_ca_bundle(self.ca_bundle)
        for entry in self.allowed_hosts:
            parse_allowed_host(entry)
        for host, address in self.static_hosts.items():
            if not host or not address:
                raise ValueError("Every static host entry must look like name=address.")
            try:
                ipaddress.ip_address(address)
            except ValueError:
                raise ValueError(
                    f"Static host {host!r} must map to an IP address, not {address!r}."
                ) from None
        unknown = [p for p in self.search_providers if p not in KNOWN_PROVIDERS]
        if unknown:
            raise ValueError(
                f"Unknown search provider {unknown[0]!r}; choose from {', '.join(KNOWN_PROVIDERS)}."
            )
        if self.search_mode not in ("ensemble", "fallback"):
            raise ValueError(
                f"Search mode must be 'ensemble' or 'fallback', not {self.search_mode!r}."
            )
        for name in ("connect_timeout", "read_timeout", "total_timeout", "search_timeout"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be a positive number of seconds.")
        for name in ("domain_interval", "provider_interval"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must be zero or more seconds.")
        if self.min_progress_bytes < 0:
            raise ValueError("min_progress_bytes must be 0 (off) or a positive number of bytes.")
        if self.max_page_bytes < 1024 or self.max_pdf_bytes < 1024:
            raise ValueError("Download limits must be at least 1024 bytes.")
        if not 0 <= self.max_redirects <= 20:
            raise ValueError("max_redirects must be between 0 and 20.")
        if not 1 <= self.max_attempts <= 10:
            raise ValueError("max_attempts must be between 1 and 10.")
        for name in PROVIDER_URL_FIELDS:
            value = getattr(self, name)
            if value:
                check_provider_url(value, base=name in _BASE_URL_FIELDS)
        if self.scholarly_mailto and not _EMAIL.match(self.scholarly_mailto):
            raise ValueError(
                f"{self.scholarly_mailto!r} is not an e-mail address (write it like "
                "research@example.org)."
            )
        if not _NCBI_TOOL.match(self.ncbi_tool):
            raise ValueError(
                "The NCBI tool name must be letters, digits, dots, dashes or underscores "
                "without spaces."
            )


# Provider endpoints the operator configures; each must be an absolute http(s) URL.
PROVIDER_URL_FIELDS: tuple[str, ...] = (
    "searxng_url",
    "brave_api_url",
    "tavily_api_url",
    "wikipedia_api_url",
    "arxiv_api_url",
    "openalex_api_url",
    "crossref_api_url",
    "pubmed_api_url",
    "semantic_scholar_api_url",
)
# Base URLs the providers append their API paths to (/works, /esearch.fcgi, /paper/search),
# so they cannot carry a query or a fragment.
_BASE_URL_FIELDS = frozenset(
    {"openalex_api_url", "crossref_api_url", "pubmed_api_url", "semantic_scholar_api_url"}
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
# NCBI asks for a tool name "with no internal spaces".
_NCBI_TOOL = re.compile(r"^[A-Za-z0-9._-]{1,64}$")


def check_provider_url(value: str, *, base: bool = False) -> None:
    """Raise ``ValueError`` with a sentence unless ``value`` is an absolute http(s) URL with a
    host and no credentials (and, for a ``base`` URL, no query or fragment)."""
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 - an invalid port raises here
    except ValueError:
        raise ValueError(f"{value!r} is not a valid URL.") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"{value!r} must be an absolute http:// or https:// URL.")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"{value!r} must not contain a user name or password.")
    if base and (parts.query or parts.fragment):
        raise ValueError(f"{value!r} is a base URL; it cannot have a query or a fragment.")


def check_ca_bundle(path: str) -> None:
    """Raise ``ValueError`` unless ``path`` is a readable PEM file of CA certificates."""
    if not os.path.isfile(path):
        raise ValueError(f"{path} does not exist or is not a file; give a PEM file of CAs.")
    try:
        ssl.create_default_context(cafile=path)
    except (OSError, ssl.SSLError) as exc:
        raise ValueError(
            f"{path} cannot be read as PEM certificates ({exc.strerror or exc}); give a PEM "
            "file of CAs."
        ) from None


# setting name -> (SourcesConfig field, parser)
_SETTINGS: dict[str, tuple[str, str]] = {
    "RESEARCH_FETCH_ALLOWED_HOSTS": ("allowed_hosts", "list"),
    "RESEARCH_FETCH_STATIC_HOSTS": ("static_hosts", "mapping"),
    "RESEARCH_FETCH_USER_AGENT": ("user_agent", "str"),
    "RESEARCH_FETCH_CONNECT_TIMEOUT": ("connect_timeout", "float"),
    "RESEARCH_FETCH_READ_TIMEOUT": ("read_timeout", "float"),
    "RESEARCH_FETCH_TOTAL_TIMEOUT": ("total_timeout", "float"),
    "RESEARCH_FETCH_MIN_PROGRESS_BYTES": ("min_progress_bytes", "int"),
    "RESEARCH_FETCH_MAX_BYTES": ("max_page_bytes", "int"),
    "RESEARCH_FETCH_MAX_PDF_BYTES": ("max_pdf_bytes", "int"),
    "RESEARCH_FETCH_MAX_REDIRECTS": ("max_redirects", "int"),
    "RESEARCH_FETCH_CA_BUNDLE": ("ca_bundle", "str"),
    "RESEARCH_FETCH_DOMAIN_INTERVAL": ("domain_interval", "float"),
    "RESEARCH_SEARCH_PROVIDERS": ("search_providers", "list"),
    "RESEARCH_SEARCH_MODE": ("search_mode", "str"),
    "RESEARCH_SEARCH_TIMEOUT": ("search_timeout", "float"),
    "RESEARCH_SEARCH_PROVIDER_INTERVAL": ("provider_interval", "float"),
    "RESEARCH_RETRY_MAX_ATTEMPTS": ("max_attempts", "int"),
    "SEARXNG_URL": ("searxng_url", "str"),
    "BRAVE_API_KEY": ("brave_api_key", "str"),
    "BRAVE_API_URL": ("brave_api_url", "str"),
    "TAVILY_API_KEY": ("tavily_api_key", "str"),
    "TAVILY_API_URL": ("tavily_api_url", "str"),
    "RESEARCH_WIKIPEDIA_API_URL": ("wikipedia_api_url", "str"),
    "RESEARCH_ARXIV_API_URL": ("arxiv_api_url", "str"),
    "RESEARCH_DDGS_BACKEND": ("ddgs_backend", "str"),
    "RESEARCH_SCHOLARLY_MAILTO": ("scholarly_mailto", "str"),
    "RESEARCH_OPENALEX_API_URL": ("openalex_api_url", "str"),
    "OPENALEX_API_KEY": ("openalex_api_key", "str"),
    "RESEARCH_CROSSREF_API_URL": ("crossref_api_url", "str"),
    "RESEARCH_PUBMED_API_URL": ("pubmed_api_url", "str"),
    "NCBI_API_KEY": ("ncbi_api_key", "str"),
    "RESEARCH_NCBI_TOOL": ("ncbi_tool", "str"),
    "RESEARCH_SEMANTIC_SCHOLAR_API_URL": ("semantic_scholar_api_url", "str"),
    "SEMANTIC_SCHOLAR_API_KEY": ("semantic_scholar_api_key", "str"),
}


def sources_config_from_settings() -> SourcesConfig:
    """Build a ``SourcesConfig`` from Django settings, using the defaults for unset names.

    List settings may be Python lists or comma-separated strings; the static
    host map may be a dict or ``name=address`` items. A value we cannot use
    raises ``ImproperlyConfigured`` naming the setting.
    """
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    values: dict[str, Any] = {}
    for setting, (field_name, kind) in _SETTINGS.items():
        raw = getattr(settings, setting, None)
        if raw is None:
            continue
        try:
            values[field_name] = _parse(kind, raw)
            # Validating each value on its own lets the error name the setting.
            SourcesConfig(**{field_name: values[field_name]})
        except (TypeError, ValueError) as exc:
            raise ImproperlyConfigured(f"{setting} is invalid: {exc}") from None
    return SourcesConfig(**values)


def _parse(kind: str, raw: Any) -> Any:
    if kind == "list":
        return tuple(_items(raw))
    if kind == "mapping":
        return parse_static_hosts(raw)
    if kind == "float":
        return float(raw)
    if kind == "int":
        return int(raw)
    return str(raw).strip()


def _items(raw: Any) -> Iterable[str]:
    if isinstance(raw, str):
        raw = raw.split(",")
    return [str(item).strip() for item in raw if str(item).strip()]


def parse_static_hosts(raw: Mapping[str, str] | Iterable[str] | str) -> dict[str, str]:
    """Parse ``name=address`` pairs (``*.suffix=address`` allowed) into a dict.

    Static hosts replace DNS for the listed names only; the addresses still
    pass the private-address rules unless the host is also allow-listed.
    """
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    else:
        pairs = []
        for item in _items(raw):
            name, sep, address = item.partition("=")
            if not sep or not name.strip() or not address.strip():
                raise ValueError(f"static host {item!r} must look like name=address.")
            pairs.append((name, address))
    result: dict[str, str] = {}
    for name, address in pairs:
        name = name.strip().lower()
        if not name.startswith("*."):
            name = normalize_host(name)
        result[name] = str(address).strip()
    return result
