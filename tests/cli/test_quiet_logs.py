"""Library chatter stays out of the command's output at the default log level."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.cli.conftest import ROOT, CommandLine

pytestmark = pytest.mark.service_neutral

QUESTION = "How many daily boardings did Harwick Metro Line 3 have, and what did it cost to build?"


def test_research_command_prints_no_library_debug_lines_at_the_default_level(cli: CommandLine):
    env = {name: value for name, value in cli.env.items() if name != "LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "manage.py", "research", QUESTION, "--depth", "quick", "--auto-approve"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    assert "Plan (version 1)" in done.stderr  # the command's own progress is still there
    assert "Building index" not in done.stderr
    assert not re.search(r"^\S+ \S+ DEBUG ", done.stderr, re.MULTILINE), done.stderr


def shell(cli: CommandLine, code: str, level: str) -> str:
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "--no-imports", "-c", code],
        cwd=ROOT,
        env={**cli.env, "LOG_LEVEL": level},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr


def test_a_library_that_sets_its_own_logger_to_debug_stays_quiet_unless_asked(cli: CommandLine):
    # bm25s sets its logger to DEBUG when imported, after Django configured logging.
    code = (
        "import logging, bm25s;"
        "logging.getLogger('bm25s').debug('library detail');"
        "logging.getLogger('bm25s').warning('library warning');"
        "logging.getLogger('research.test').info('our own line')"
    )
    quiet = shell(cli, code, "INFO")
    assert "library detail" not in quiet
    assert "library warning" in quiet and "our own line" in quiet
    loud = shell(cli, code, "DEBUG")
    assert "library detail" in loud
