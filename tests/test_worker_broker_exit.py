"""A worker whose broker stays unreachable exits non-zero within the configured time, so a
supervisor restarts it instead of it logging connection errors forever."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.conf import settings
from dramatiq.brokers.redis import RedisBroker

from research.worker.broker_watchdog import EXIT_BROKER_UNREACHABLE, broker_reachable

ROOT = Path(__file__).resolve().parent.parent
LIMIT_SECONDS = 3
# Django and Dramatiq start in a few seconds on this machine; the check runs every second
# for a 3-s limit. Anything under this deadline is the watchdog, not a timeout.
DEADLINE_SECONDS = 60


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_rundramatiq_exits_non_zero_when_redis_stays_unreachable(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update(
        {
            "DATA_DIR": str(tmp_path),
            "REDIS_URL": f"redis://127.0.0.1:{closed_port()}/0",
            "REDIS_CONNECT_TIMEOUT": "1",
            "WORKER_BROKER_UNREACHABLE_SECONDS": str(LIMIT_SECONDS),
        }
    )
    log_path = tmp_path / "worker.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "manage.py", "rundramatiq", "--processes", "1", "--threads", "1"],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        started = time.monotonic()
        try:
            code = process.wait(timeout=DEADLINE_SECONDS)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            pytest.fail("the worker was still running:\n" + log_path.read_text())
    output = log_path.read_text()
    assert code == EXIT_BROKER_UNREACHABLE, output
    assert "WORKER_BROKER_UNREACHABLE_SECONDS" in output
    assert time.monotonic() - started >= LIMIT_SECONDS


def test_an_unreachable_redis_is_not_reachable_and_the_configured_one_is():
    dead = RedisBroker(url=f"redis://127.0.0.1:{closed_port()}/0", middleware=[])
    assert not broker_reachable(dead)
    if settings.REDIS is not None:
        live = RedisBroker(url=settings.REDIS.url, middleware=[])
        assert broker_reachable(live)
