"""Logging helpers for the settings' LOGGING configuration."""

from __future__ import annotations

import logging

# Libraries that log below WARNING far more than an operator wants to read, and why:
# bm25s sets its own logger to DEBUG when imported (one "Building index" line per excerpt
# selection), so a logger level set in LOGGING does not hold; httpx and httpcore log every
# request; ddgs logs each search engine it tries; trafilatura, htmldate and courlan log per
# extracted page; weasyprint and fontTools log per PDF export; charset_normalizer per guess.
NOISY_LIBRARIES = (
    "bm25s",
    "httpx",
    "httpcore",
    "ddgs",
    "trafilatura",
    "htmldate",
    "courlan",
    "weasyprint",
    "fontTools",
    "charset_normalizer",
)


class QuietLibraries(logging.Filter):
    """Drop records under WARNING from ``NOISY_LIBRARIES`` at the handler, whatever level
    the library gave its own logger. Used unless ``LOG_LEVEL`` is DEBUG."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            return True
        library = record.name.split(".", 1)[0]
        return library not in NOISY_LIBRARIES
