"""How much an upload may be: per file, per library, and what the PDF reader may spend.

``DocumentLimits`` is a plain value so tests and the benchmark build their own;
``document_limits_from_settings`` reads the deployment's (see docs/configuration.md). The two
``check_*`` functions refuse with a sentence *before* anything is parsed or stored.
"""

from __future__ import annotations

from dataclasses import dataclass

from research.sources.documents.errors import DocumentRefused

MIB = 1024 * 1024

# One document of 20 MB is a 1,000-page text-heavy PDF or a long report full of figures; more
# than that is almost always a scan or a media file, which gives no text to cite anyway.
DEFAULT_MAX_FILE_BYTES = 20 * MIB
# Fifty documents at the per-file limit: a working library for a team, small enough that one
# member cannot fill a small server's disk.
DEFAULT_MAX_LIBRARY_BYTES = 1024 * MIB
# pypdf reads a normal page in a few milliseconds (docs/performance.md), so even a 500-page
# report takes seconds; a minute is reached only by a file built to stall the reader.
DEFAULT_PDF_TIMEOUT_SECONDS = 60.0
# Beyond what the reader process already maps: pypdf holds the file, its object table and one
# page's decoded content streams (at most 75 MB each, pypdf's own cap), well under this.
DEFAULT_PDF_MEMORY_BYTES = 512 * MIB
# The snapshot text kept of one document (UTF-8): about 5,000 pages of prose, more than any
# book. A longer text is kept up to here and flagged truncated, as web pages are.
DEFAULT_MAX_TEXT_BYTES = 10 * MIB

# Below these the limits stop making sense (a settings typo such as "20" meaning megabytes).
_MIN_FILE_BYTES = 1024
_MIN_PDF_MEMORY_BYTES = 64 * MIB


@dataclass(frozen=True)
class DocumentLimits:
    """Limits of one deployment's uploads. Sizes are bytes, times seconds."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_library_bytes: int = DEFAULT_MAX_LIBRARY_BYTES
    pdf_timeout_seconds: float = DEFAULT_PDF_TIMEOUT_SECONDS
    pdf_memory_bytes: int = DEFAULT_PDF_MEMORY_BYTES
    max_text_bytes: int = DEFAULT_MAX_TEXT_BYTES

    def __post_init__(self) -> None:
        if self.max_file_bytes < _MIN_FILE_BYTES:
            raise ValueError(f"the per-file limit must be at least {_MIN_FILE_BYTES} bytes.")
        if self.max_library_bytes < self.max_file_bytes:
            raise ValueError("the library limit must be at least the per-file limit.")
        if self.pdf_timeout_seconds <= 0:
            raise ValueError("the PDF time limit must be a positive number of seconds.")
        if self.pdf_memory_bytes < _MIN_PDF_MEMORY_BYTES:
            raise ValueError(
                f"the PDF memory limit must be at least {_MIN_PDF_MEMORY_BYTES // MIB} MB."
            )
        if self.max_text_bytes < _MIN_FILE_BYTES:
            raise ValueError(f"the text limit must be at least {_MIN_FILE_BYTES} bytes.")


# setting name -> DocumentLimits field (config/settings.py parses and checks the values at
# start-up, naming the variable; docs/configuration.md lists them)
_SETTINGS: dict[str, str] = {
    "RESEARCH_DOCUMENT_MAX_BYTES": "max_file_bytes",
    "RESEARCH_LIBRARY_MAX_BYTES": "max_library_bytes",
    "RESEARCH_DOCUMENT_PDF_TIMEOUT_SECONDS": "pdf_timeout_seconds",
    "RESEARCH_DOCUMENT_PDF_MEMORY_BYTES": "pdf_memory_bytes",
}


def document_limits_from_settings() -> DocumentLimits:
    """The deployment's limits from Django settings (defaults for unset names).

    Values that cannot be used together raise ``ImproperlyConfigured`` naming the settings.
    """
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    values = {
        field_name: getattr(settings, setting)
        for setting, field_name in _SETTINGS.items()
        if getattr(settings, setting, None) is not None
    }
    file_limit = values.get("max_file_bytes", DEFAULT_MAX_FILE_BYTES)
    library_limit = values.get("max_library_bytes", DEFAULT_MAX_LIBRARY_BYTES)
    if library_limit < file_limit:
        raise ImproperlyConfigured(
            f"RESEARCH_LIBRARY_MAX_BYTES ({library_limit}) must be at least "
            f"RESEARCH_DOCUMENT_MAX_BYTES ({file_limit}): a library must hold one document."
        )
    try:
        return DocumentLimits(**values)
    except (TypeError, ValueError) as exc:
        raise ImproperlyConfigured(
            f"Document upload limits ({', '.join(_SETTINGS)}): {exc}"
        ) from None


def format_size(size: int) -> str:
    """A size for a sentence: ``512 bytes``, ``48 KB``, ``20 MB``, ``1.5 GB`` (binary units)."""
    if size < 1024:
        return f"{size} bytes"
    for unit, scale in (("GB", 1024**3), ("MB", MIB), ("KB", 1024)):
        if size >= scale:
            value = size / scale
            text = f"{value:.1f}".removesuffix(".0") if value < 100 else f"{value:.0f}"
            return f"{text} {unit}"
    raise AssertionError("unreachable")  # pragma: no cover


def check_file_size(size: int, limits: DocumentLimits) -> None:
    """Refuse an empty file or one over the per-file limit, before reading it."""
    if size <= 0:
        raise DocumentRefused("empty", "This file is empty (0 bytes); there is nothing to read.")
    if size > limits.max_file_bytes:
        raise DocumentRefused(
            "too_large",
            f"This file is {format_size(size)}, over the {format_size(limits.max_file_bytes)} "
            "limit for one document; upload a smaller file or split it.",
        )


def check_library_capacity(used_bytes: int, incoming_bytes: int, limits: DocumentLimits) -> None:
    """Refuse a file that would take a library over its limit.

    ``used_bytes`` is what the library's stored files already take (the caller sums them
    inside the transaction that stores the new one, so two uploads cannot both squeeze in).
    """
    if used_bytes + incoming_bytes > limits.max_library_bytes:
        free = max(limits.max_library_bytes - used_bytes, 0)
        raise DocumentRefused(
            "library_full",
            f"This file ({format_size(incoming_bytes)}) does not fit in the library: "
            f"{format_size(free)} of its {format_size(limits.max_library_bytes)} are free; "
            "delete documents or ask an administrator to raise the limit.",
        )
