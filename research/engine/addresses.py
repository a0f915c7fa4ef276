"""Addresses of uploaded documents: ``document://<library>/<document>``.

A library document has no web address, yet the engine identifies every source by a URL. The
identifiers are opaque lower-case names chosen by the model layer (``research.sources.
documents.addresses`` builds them), so an address has one spelling and is its own normal form.
Whether a run may read one is its source policy's choice of documents (``document_policy``).
"""

import re
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from research.engine.contracts import SourcePolicy

DOCUMENT_IDENTIFIER = r"^[a-z0-9][a-z0-9_-]{0,63}$"
_DOCUMENT_ADDRESS = re.compile(
    r"^document://([a-z0-9][a-z0-9_-]{0,63})/([a-z0-9][a-z0-9_-]{0,63})$"
)
DocumentRefusal = Literal["not a web address", "document not chosen for this run"]


def document_address(url: str) -> tuple[str, str] | None:
    """``(library, document)`` of a ``document://`` address, or ``None`` for anything else."""
    match = _DOCUMENT_ADDRESS.match(url) if isinstance(url, str) else None
    return (match.group(1), match.group(2)) if match else None


def is_document_url(url: str) -> bool:
    """Whether ``url`` is a well-formed ``document://`` address of an uploaded document."""
    return document_address(url) is not None


def document_policy(
    url: str, policy: "SourcePolicy"
) -> tuple[bool, str, DocumentRefusal | None] | None:
    """``(allowed, reason, refusal)`` for a ``document:`` address under ``policy``: allowed
    when the policy chose its library or the document itself. ``None`` for other addresses."""
    address = document_address(url)
    if address is None:
        if isinstance(url, str) and url.startswith("document:"):
            return False, "This is not a valid document address.", "not a web address"
        return None
    library, document = address
    chosen = (policy.documents == "library" and library == policy.library_id) or (
        policy.documents == "selected" and document in policy.document_ids
    )
    if not chosen:
        return (
            False,
            "This document is not one of the documents chosen for this run.",
            "document not chosen for this run",
        )
    return True, "The document was chosen for this run.", None
