"""Uploaded documents: from a file a person uploads to the snapshot a web page would become.

``parse_upload(name, data, url=..., limits=...)`` sniffs the content (``sniff``), parses it
(``docx``, ``markdown``, ``pdf_reader`` in its own process, the web pipeline's HTML and
plain-text extractors), lays DOCX and Markdown out with the web's snapshot builder
(``structure``) and returns a ``SourceDocument`` addressed ``document://<library>/<document>``
(``addresses``). Every refusal is a ``DocumentRefused`` with a sentence. ``limits`` holds the
per-file and per-library limits and their settings. See docs/sources.md, "Uploaded documents".

Names are imported on first use, so the PDF reader process loads only what it needs.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research.sources.documents.addresses import (
        DocumentAddress,
        document_url,
        is_document_url,
        parse_document_url,
    )
    from research.sources.documents.errors import DocumentRefused
    from research.sources.documents.limits import (
        DocumentLimits,
        check_file_size,
        check_library_capacity,
        document_limits_from_settings,
    )
    from research.sources.documents.sniff import DocumentFormat, sniff
    from research.sources.documents.upload import parse_upload

_EXPORTS = {
    "DocumentAddress": "addresses",
    "document_url": "addresses",
    "is_document_url": "addresses",
    "parse_document_url": "addresses",
    "DocumentRefused": "errors",
    "DocumentLimits": "limits",
    "check_file_size": "limits",
    "check_library_capacity": "limits",
    "document_limits_from_settings": "limits",
    "DocumentFormat": "sniff",
    "sniff": "sniff",
    "parse_upload": "upload",
}

__all__ = [
    "DocumentAddress",
    "DocumentFormat",
    "DocumentLimits",
    "DocumentRefused",
    "check_file_size",
    "check_library_capacity",
    "document_limits_from_settings",
    "document_url",
    "is_document_url",
    "parse_document_url",
    "parse_upload",
    "sniff",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
