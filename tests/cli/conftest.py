"""The `research` command run as a separate process against its own throwaway database."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evals.environment import isolated_environment
from tests.fixtures.frozen_web.server import FrozenWeb

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class CommandLine:
    """Runs `manage.py` in a child process wired to a private SQLite file and the frozen web."""

    env: dict[str, str]
    data_dir: Path

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self, *args: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def run_status(self, run_id: str) -> str:
        with sqlite3.connect(self.data_dir / "db.sqlite3") as db:
            row = db.execute(
                "SELECT status FROM research_researchrun WHERE id = ?", [run_id.replace("-", "")]
            ).fetchone()
        return row[0]


@pytest.fixture(scope="module")
def command_line(frozen_web: FrozenWeb, tmp_path_factory) -> Iterator[CommandLine]:
    data_dir = tmp_path_factory.mktemp("cli-data")
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE")
    }
    env.update(isolated_environment(data_dir, frozen_web))
    cli = CommandLine(env=env, data_dir=data_dir)
    for args in (("migrate", "--noinput", "-v0"), ("ensure_demo_account",)):
        done = cli.run(*args)
        assert done.returncode == 0, done.stderr
    yield cli


@pytest.fixture
def cli(command_line: CommandLine, web: FrozenWeb) -> CommandLine:
    """The command line, with the frozen web's request log and faults cleared."""
    return command_line
