"""Logging helpers for the settings' LOGGING configuration."""

from __future__ import annotations

import json
import logging
from datetime import UTC, datetime

from research.engine import observe

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


class ResearchContext(logging.Filter):
    """Put the run and step this thread (or the pool task it runs) is working on into every
    record as ``run_id`` and ``step_id`` (empty when none); the engine sets them
    (``research.engine.observe``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.run_id = observe.current_run_id.get()
        record.step_id = observe.current_step_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line (``LOG_FORMAT=json``): time, level, logger, message, the run
    and step ids when there are, and the traceback as text when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, object] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key in ("run_id", "step_id"):
            value = getattr(record, key, "")
            if value:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
