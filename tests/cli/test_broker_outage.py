"""The command drives its run in-process, so an unreachable broker costs it nothing."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from tests.cli.conftest import ROOT, CommandLine

pytestmark = pytest.mark.service_neutral

QUESTION = "How many daily boardings did Harwick Metro Line 3 have, and what did it cost to build?"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_research_command_finishes_while_the_broker_is_unreachable(cli: CommandLine):
    env = {
        **cli.env,
        "REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
        "REDIS_CONNECT_TIMEOUT": "1",
    }
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
    assert done.stdout.startswith("# ")
    assert "Traceback" not in done.stderr
