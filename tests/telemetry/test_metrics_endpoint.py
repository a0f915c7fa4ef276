"""/metrics: off by default, guarded by a token or an address list, low-cardinality labels."""

from __future__ import annotations

import ipaddress
from decimal import Decimal

import pytest
from django.test import Client
from prometheus_client.parser import text_string_to_metric_families

from research import lifecycle, services, telemetry
from research.engine import observe
from research.engine.contracts import Usage
from research.telemetry.metrics import ALLOWED_LABELS
from tests.conftest import make_run
from tests.telemetry.test_helpers import scrape, value
from tests.test_settings import manage

pytestmark = pytest.mark.django_db

# Labels prometheus_client itself adds: histogram buckets.
_BUILT_IN = {"le"}


def test_metrics_are_off_by_default():
    assert Client().get("/metrics").status_code == 404


def test_a_request_without_the_token_is_refused(metrics_on):
    answer = Client().get("/metrics")
    assert answer.status_code == 403
    assert b"bearer token" in answer.content
    wrong = Client().get("/metrics", HTTP_AUTHORIZATION="Bearer " + "x" * 32)
    assert wrong.status_code == 403


def test_the_token_opens_it(metrics_on):
    answer = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {metrics_on}")
    assert answer.status_code == 200
    assert answer["Content-Type"].startswith("text/plain")
    assert b"research_runs_queued" in answer.content


def test_an_allowed_address_opens_it_without_the_token(metrics_on, settings):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_ADDRESSES = [ipaddress.ip_network("10.1.0.0/16")]
    assert Client(REMOTE_ADDR="10.1.2.3").get("/metrics").status_code == 200
    assert Client(REMOTE_ADDR="10.2.0.1").get("/metrics").status_code == 403


def test_every_label_is_on_the_allow_list(metrics_on, owner):
    # Move every family so that each has samples with its labels.
    run = make_run(owner, status="researching")
    lifecycle.transition(
        run.pk, expected="researching", to="budget_exhausted", stop_reason="searches"
    )
    seen = observe.observer()
    usage = Usage(model_calls=1, input_tokens=5, cost=Decimal("0.01"))
    seen.model_call("extract", usage, failed=False)
    seen.retried("fetch")
    seen.timed("search", "searxng", 0.2, "ok")
    seen.timed("fetch", "web", 0.3, "error")
    telemetry.lease_lost()
    telemetry.reaped(1)
    telemetry.websocket_opened()
    telemetry.websocket_closed()
    families = list(text_string_to_metric_families(scrape(metrics_on)))
    names = {family.name for family in families}
    assert {"research_runs_finished", "research_tokens", "research_fetch_seconds"} <= names
    outside = {
        (sample.name, label)
        for family in families
        for sample in family.samples
        for label in sample.labels
        if label not in ALLOWED_LABELS | _BUILT_IN
    }
    assert outside == set()


def test_the_allow_list_test_would_catch_a_run_label(metrics_on):
    from prometheus_client import Counter

    from research.telemetry.metrics import REGISTRY

    bad = Counter("research_bad_example", "A label never to use.", ["run"], registry=REGISTRY)
    try:
        bad.labels("some-run").inc()
        labels = {
            label
            for family in text_string_to_metric_families(scrape(metrics_on))
            for sample in family.samples
            for label in sample.labels
        }
        assert "run" in labels and "run" not in ALLOWED_LABELS
    finally:
        REGISTRY.unregister(bad)


def test_transitions_move_the_run_counters(metrics_on, owner):
    before = scrape(metrics_on)
    run = services.run_create(owner=owner, question="How do heat pumps work in cold weather?")
    services.run_cancel(run=run)
    after = scrape(metrics_on)
    key = 'research_runs_finished_total{status="cancelled"}'
    assert value(after, key) - value(before, key) == 1
    assert value(after, 'research_run_duration_seconds_count{status="cancelled"}') >= 1


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"METRICS_ENABLED": "true"}, "neither METRICS_TOKEN nor METRICS_ALLOWED_ADDRESSES"),
        ({"METRICS_TOKEN": "short"}, "at least 24 characters"),
        ({"METRICS_ALLOWED_ADDRESSES": "prometheus.internal"}, "IP addresses or networks"),
        ({"PROMETHEUS_MULTIPROC_DIR": "/nonexistent/metrics"}, "must be an existing directory"),
        ({"TRACING_OTLP_ENDPOINT": "collector:4318"}, "http:// or https://"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT must be plain or json"),
    ],
)
def test_bad_operations_settings_stop_start_up_with_a_sentence(env, message, tmp_path):
    result = manage("check", env=env, tmp_path=tmp_path)
    assert result.returncode != 0
    assert message in result.stderr
    assert result.stderr.startswith("Configuration error: ")
    assert "Traceback" not in result.stderr


def test_the_reaper_and_a_lost_lease_are_counted(metrics_on, owner):
    from datetime import timedelta

    import dramatiq
    from django.utils import timezone

    from research.worker.actors import advance_run
    from research.worker.reaper import reap_once

    before = scrape(metrics_on)
    make_run(
        owner,
        status="researching",
        lease_owner="gone",
        lease_expires_at=timezone.now() - timedelta(seconds=5),
    )
    try:
        assert len(reap_once()) == 1
    finally:
        dramatiq.get_broker().flush(advance_run.queue_name)
    telemetry.lease_lost()
    after = scrape(metrics_on)
    assert (
        value(after, "research_runs_reaped_total") - value(before, "research_runs_reaped_total")
        == 1
    )
    lost = "research_lease_losses_total"
    assert value(after, lost) - value(before, lost) == 1


def test_with_metrics_off_nothing_moves(owner, settings):
    token = "t" * 32
    settings.METRICS_ENABLED, settings.METRICS_TOKEN = True, token
    settings.PROMETHEUS_MULTIPROC_DIR = ""
    telemetry.configure(metrics=False, tracing=None)
    before = scrape(token)
    run = make_run(owner, status="researching")
    lifecycle.transition(run.pk, expected="researching", to="failed")
    observe.observer().retried("fetch")
    after = scrape(token)
    assert value(after, 'research_runs_finished_total{status="failed"}') == value(
        before, 'research_runs_finished_total{status="failed"}'
    )
    assert value(after, 'research_retries_total{operation="fetch"}') == value(
        before, 'research_retries_total{operation="fetch"}'
    )


def test_source_updates_are_counted_by_status_and_passed_on(metrics_on):
    from research.engine.contracts import SourceUpdated

    received = []

    class Sink:
        def emit(self, event):
            received.append(event)

    key = 'research_sources_total{status="fetched"}'
    before = value(scrape(metrics_on), key)
    event = SourceUpdated(
        run_id="r1", source_id="s1", status="fetched", domain="example.org", message="Read"
    )
    telemetry.ObservedEvents(Sink()).emit(event)
    text = scrape(metrics_on)
    assert value(text, key) - before == 1
    assert received == [event]
    assert "example.org" not in text
