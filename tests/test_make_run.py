"""`make run` serves the app with the embedded defaults and the demo account logs in."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.service_neutral

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def served_app(tmp_path):
    port = free_port()
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env.update({"DATA_DIR": str(tmp_path), "DEMO_PASSWORD": "demo-pass-for-tests-123"})
    log = (tmp_path / "server.log").open("w")
    process = subprocess.Popen(
        ["make", "--no-print-directory", "run", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    started = time.monotonic()
    try:
        while time.monotonic() - started < 60:
            if process.poll() is not None:
                pytest.fail("make run exited early:\n" + (tmp_path / "server.log").read_text())
            try:
                if httpx.get(base + "/accounts/login/", timeout=2).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.5)
        else:
            pytest.fail("no login page within 60 s:\n" + (tmp_path / "server.log").read_text())
        yield base, time.monotonic() - started, tmp_path / "server.log"
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()


def test_make_run_serves_login_and_demo_account_reaches_dashboard(served_app):
    base, seconds, log_path = served_app
    assert seconds < 60
    with httpx.Client(base_url=base, timeout=10) as client:
        login_page = client.get("/accounts/login/")
        assert "A demo account exists: user name <strong>demo</strong>." in login_page.text
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login_page.text).group(1)
        response = client.post(
            "/accounts/login/",
            data={
                "username": "demo",
                "password": "demo-pass-for-tests-123",
                "csrfmiddlewaretoken": token,
            },
            headers={"Referer": base + "/accounts/login/"},
        )
        assert response.status_code == 302
        dashboard = client.get(response.headers["location"])
        assert dashboard.status_code == 200
        assert "<h1>Research</h1>" in dashboard.text
        assert client.get("/static/css/app.css").status_code == 200
    assert "Started the in-process worker" in log_path.read_text()
