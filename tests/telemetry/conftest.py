"""Telemetry is a per-process switch: each test that turns it on turns it off again."""

from __future__ import annotations

import pytest

from research import telemetry


@pytest.fixture
def metrics_on(settings):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = "t" * 32
    settings.METRICS_ALLOWED_ADDRESSES = []
    settings.PROMETHEUS_MULTIPROC_DIR = ""
    telemetry.configure(metrics=True, tracing=None)
    yield settings.METRICS_TOKEN
    telemetry.configure(metrics=False, tracing=None)


@pytest.fixture(autouse=True)
def worker_not_shutting_down():
    """As in tests/api/conftest.py: a Dramatiq worker stopped in this process by an earlier test
    (tests/web/test_queue_outage) leaves SHUTTING_DOWN set, and an in-process run then stops at
    once. The tracing test drives a run in-process, so it starts from a worker that is not
    shutting down, whatever ran before."""
    from research.worker.shutdown import SHUTTING_DOWN

    SHUTTING_DOWN.clear()
    yield
