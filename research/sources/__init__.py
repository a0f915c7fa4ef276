"""Source acquisition: from "the engine wants a search or a page" to a hashed snapshot.

``WebSourceAdapter`` implements the engine's ``SourceAdapter`` port. It is
built from a ``SourcesConfig`` (see ``sources_config_from_settings`` for the
Django settings) and uses ``SafeFetcher`` for every outbound request.

The names below are imported when first used, so that a process needing one module
(the PDF reader process of ``documents.pdf_reader``) does not load the whole web stack.
The ``safe_fetch`` function is imported from its module, whose name it shares.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research.sources.adapter import WebSourceAdapter
    from research.sources.config import SourcesConfig, sources_config_from_settings
    from research.sources.errors import SourceError
    from research.sources.responses import FetchResponse
    from research.sources.safe_fetch import SafeFetcher

_EXPORTS = {
    "FetchResponse": "research.sources.responses",
    "SafeFetcher": "research.sources.safe_fetch",
    "SourceError": "research.sources.errors",
    "SourcesConfig": "research.sources.config",
    "WebSourceAdapter": "research.sources.adapter",
    "sources_config_from_settings": "research.sources.config",
}

__all__ = [
    "FetchResponse",
    "SafeFetcher",
    "SourceError",
    "SourcesConfig",
    "WebSourceAdapter",
    "sources_config_from_settings",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
