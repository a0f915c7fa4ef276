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

