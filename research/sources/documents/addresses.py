"""The address of an uploaded document: ``document://<library>/<document>``.

A library document has no web address, yet the engine identifies every source by a URL (its
canonical hash, duplicate detection, the locators of its evidence). Library and document are
opaque identifiers chosen by the model layer (for example ``user-12`` or ``team-3`` and the
document's UUID); they are restricted to lower-case letters, digits, ``-`` and ``_``, so the
address needs no escaping, has one spelling, and is its own normal form. Where an excerpt
sits inside the document is the locator's job (page for a PDF, heading and offsets
otherwise), never part of the address.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from research.engine.urls import DOCUMENT_IDENTIFIER, document_address

DOCUMENT_SCHEME = "document"
_PREFIX = f"{DOCUMENT_SCHEME}://"
# Long enough for a UUID with hyphens or a prefixed database id, short enough to show.
_IDENTIFIER = re.compile(DOCUMENT_IDENTIFIER)


@dataclass(frozen=True)
class DocumentAddress:
    """Which library holds a document, and which document it is."""

    library: str
    document: str

    @property
    def url(self) -> str:
        return f"{_PREFIX}{self.library}/{self.document}"


def document_url(library: str, document: str) -> str:
    """The address of ``document`` in ``library``; raises ``ValueError`` for bad identifiers."""
    for label, value in (("library", library), ("document", document)):
        if not _IDENTIFIER.match(value):
            raise ValueError(
                f"A {label} identifier is 1-64 lower-case letters, digits, '-' or '_' "
                f"starting with a letter or digit, not {value[:80]!r}."
            )
    return DocumentAddress(library, document).url


def parse_document_url(url: str) -> DocumentAddress | None:
    """The library and document of a ``document://`` address, or ``None`` for anything else."""
    parts = document_address(url)
    return DocumentAddress(*parts) if parts else None


def is_document_url(url: str) -> bool:
    """Whether ``url`` is a well-formed ``document://`` address."""
    return parse_document_url(url) is not None


def document_url_hash(url: str) -> str:
    """SHA-256 of the address, as ``research.engine.urls.url_hash`` computes it for http(s)
    URLs (a document address is already in normal form)."""
    if not is_document_url(url):
        raise ValueError(f"{url[:80]!r} is not a document address.")
    return hashlib.sha256(url.encode("ascii")).hexdigest()
