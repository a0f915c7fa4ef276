"""A throwaway world for the benchmark: Django on a temporary SQLite file, the frozen web.

Nothing here touches the user's data: ``DATA_DIR`` points at a fresh temporary directory
(the database, the generated secret key), ``DATABASE_URL`` and ``REDIS_URL`` are ignored, no
background worker starts, and every search and fetch goes to the frozen local web.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tests.fixtures.frozen_web.server import FrozenWeb, serve_frozen_web

_CLEARED = ("DATABASE_URL", "REDIS_URL")


def setting_as_env(value: Any) -> str:
    """A Django setting value as the environment variable the settings module parses."""
    if isinstance(value, list | tuple):
        return ",".join(str(item) for item in value)
    return str(value)


def web_environment(web: FrozenWeb) -> dict[str, str]:
    """Environment variables that point search and fetching at ``web``."""
    return {name: setting_as_env(value) for name, value in web.django_settings().items()}


@contextmanager
def patched_environ(values: Mapping[str, str], *, cleared: tuple[str, ...] = ()) -> Iterator[None]:
    """Set (and unset) environment variables for the duration of the block."""
    saved = {name: os.environ.get(name) for name in [*values, *cleared]}
    for name in cleared:
        os.environ.pop(name, None)
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


# A benchmark starts every task's run under one account within minutes; the per-person quota
# on new runs (RESEARCH_MAX_RUNS_PER_USER_PER_HOUR) bounds people, not the benchmark.
BENCHMARK_RUNS_PER_HOUR = 100_000


def isolated_environment(data_dir: Path, web: FrozenWeb, **extra: str) -> dict[str, str]:
    """The variables a benchmark process runs with: a private data directory, no services,
    the frozen web, quiet logs, no per-person run quota. ``extra`` adds or overrides
    settings."""
    return {
        "DJANGO_SETTINGS_MODULE": "config.settings",
        "DATA_DIR": str(data_dir),
        "EMBEDDED_WORKER": "false",
        "LOG_LEVEL": "WARNING",
        "RESEARCH_MAX_RUNS_PER_USER_PER_HOUR": str(BENCHMARK_RUNS_PER_HOUR),
        **web_environment(web),
        **extra,
    }


def migrate_quietly() -> None:
    from django.core.management import call_command

    call_command("migrate", verbosity=0, interactive=False)


@contextmanager
def isolated_django(**extra: str) -> Iterator[tuple[FrozenWeb, Path]]:
    """Start the frozen web, set Django up in this process on a throwaway database and yield
    ``(web, data_dir)``. Django can be set up once per process, so call this once."""
    from django.conf import settings

    if settings.configured:
        raise RuntimeError(
            "Django is already configured in this process; the benchmark needs its own "
            "throwaway database, so run it as a separate process (python -m evals run)."
        )
    data_dir = Path(tempfile.mkdtemp(prefix="deep-research-evals-"))
    try:
        with (
            serve_frozen_web() as web,
            patched_environ(isolated_environment(data_dir, web, **extra), cleared=_CLEARED),
        ):
            import django

            django.setup()
            # bm25s logs every index it builds at DEBUG on its own logger; keep tables readable.
            logging.getLogger("bm25s").setLevel(logging.WARNING)
            migrate_quietly()
            try:
                yield web, data_dir
            finally:
                from django.db import connections

                connections.close_all()
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)
