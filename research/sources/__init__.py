"""Source acquisition: from "the engine wants a search or a page" to a hashed snapshot.

``WebSourceAdapter`` implements the engine's ``SourceAdapter`` port. It is
built from a ``SourcesConfig`` (see ``sources_config_from_settings`` for the
Django settings) and uses ``SafeFetcher`` for every outbound request.
"""

from research.sources.adapter import WebSourceAdapter
from research.sources.config import SourcesConfig, sources_config_from_settings
from research.sources.errors import SourceError
from research.sources.safe_fetch import FetchResponse, SafeFetcher, safe_fetch

__all__ = [
    "FetchResponse",
    "SafeFetcher",
    "SourceError",
    "SourcesConfig",
    "WebSourceAdapter",
    "safe_fetch",
    "sources_config_from_settings",
]
