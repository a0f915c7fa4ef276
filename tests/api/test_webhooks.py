"""Webhooks: signed deliveries to a real loopback receiver, bounded retries with a delivery
log, SSRF refusals when saved and when delivered, and events emitted by the worker."""

from __future__ import annotations

import hashlib
import hmac
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from django.test import Client

from research.models import ResearchRun, Webhook, WebhookDelivery
from research.worker import webhooks
from research.worker.actors import advance_run
from tests.web.factories import awaiting_run, completed_run


class Receiver:
    """A loopback HTTP server that fails the first ``fail`` requests with 500."""

    def __init__(self) -> None:
        self.fail = 0
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.received.append((dict(self.headers), body))
                failing = len(receiver.received) <= receiver.fail
                self.send_response(500 if failing else 204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"


@pytest.fixture
def receiver(settings) -> Iterator[Receiver]:
    made = Receiver()
    settings.WEBHOOK_ALLOWED_HOSTS = [f"127.0.0.1:{made.server.server_address[1]}"]
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    yield made
    made.server.shutdown()
    made.server.server_close()


def verify(secret: str, headers: dict[str, str], body: bytes) -> bool:
    """The receiver's check, as docs/api.md shows it."""
    parts = dict(item.split("=", 1) for item in headers["X-DeepResearch-Signature"].split(","))
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256)
    return hmac.compare_digest(expected.hexdigest(), parts["v1"])


def test_a_completed_run_is_delivered_with_a_valid_signature(owner, receiver):
    hook = webhooks.webhook_create(owner=owner, url=receiver.url, events=["run.completed"])
    run = completed_run(owner)
    (delivery,) = webhooks.emit(run.pk)
    webhooks.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "succeeded" and delivery.attempts == 1
    ((headers, body),) = receiver.received
    assert verify(hook.secret, headers, body)
    assert not verify("another secret", headers, body)
    data = json.loads(body)
    assert data["event"] == "run.completed" and data["run"]["id"] == str(run.pk)
    assert data["links"]["api"].endswith(f"/api/v1/runs/{run.pk}")
    # The same state emitted again (a message handled twice) sends nothing new.
    assert webhooks.emit(run.pk) == []


def test_a_receiver_that_fails_twice_gets_one_successful_delivery(owner, receiver):
    receiver.fail = 2
    webhooks.webhook_create(owner=owner, url=receiver.url, events=["run.awaiting_approval"])
    run = awaiting_run(owner)
    (delivery,) = webhooks.emit(run.pk)
    for _ in range(4):  # the fourth call finds it delivered and does nothing
        webhooks.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert len(receiver.received) == 3
    assert delivery.status == "succeeded" and delivery.attempts == 3
    assert [entry["ok"] for entry in delivery.attempt_log] == [False, False, True]
    assert [entry["status_code"] for entry in delivery.attempt_log] == [500, 500, 204]
    assert WebhookDelivery.objects.filter(status="succeeded").count() == 1


def test_retries_are_bounded(owner, receiver, settings):
    settings.WEBHOOK_MAX_ATTEMPTS = 2
    receiver.fail = 100
    webhooks.webhook_create(owner=owner, url=receiver.url, events=["run.completed"])
    (delivery,) = webhooks.emit(completed_run(owner).pk)
    for _ in range(5):
        webhooks.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "failed" and delivery.attempts == 2 and len(receiver.received) == 2
    assert webhooks.backoff_ms(1) < webhooks.backoff_ms(2) <= 3_600_000


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://127.0.0.1:9/hook",
        "http://10.0.0.5/hook",
        "ftp://example.org/hook",
    ],
)
def test_private_and_metadata_targets_are_refused_when_saved(url, owner, settings):
    settings.WEBHOOK_ALLOWED_HOSTS = ["169.254.169.254"]  # metadata stays refused even so
    with pytest.raises(webhooks.WebhookError):
        webhooks.webhook_create(owner=owner, url=url, events=["run.completed"])
    assert not Webhook.objects.exists()


def test_a_metadata_target_is_refused_when_delivered(owner):
    # A hook saved before the rules (or edited in the database) is still never posted to.
    Webhook.objects.create(
        owner=owner, url="http://169.254.169.254/hook", events=["run.completed"], secret="s"
    )
    (delivery,) = webhooks.emit(completed_run(owner).pk)
    webhooks.deliver(delivery.pk)
    delivery.refresh_from_db()
    assert delivery.status == "refused" and delivery.attempts == 1
    assert "metadata" in delivery.attempt_log[0]["error"]


def test_team_hooks_hear_about_shared_runs_only(owner, editor, viewer, team, receiver):
    with pytest.raises(webhooks.WebhookError):
        webhooks.webhook_create(owner=viewer, url=receiver.url, events=["run.completed"], team=team)
    webhooks.webhook_create(owner=editor, url=receiver.url, events=["run.completed"], team=team)
    assert len(webhooks.emit(completed_run(owner, team=team, visibility="team").pk)) == 1
    assert webhooks.emit(completed_run(owner, team=team).pk) == []  # private


def test_the_worker_emits_awaiting_approval(owner, receiver, web, settings):
    for name, value in web.django_settings().items():
        setattr(settings, name, value)
    settings.WEBHOOK_ALLOWED_HOSTS = [*settings.WEBHOOK_ALLOWED_HOSTS]
    webhooks.webhook_create(owner=owner, url=receiver.url, events=["run.awaiting_approval"])
    from research import services

    run = services.run_create(
        owner=owner,
        question="How many daily boardings did Harwick Metro Line 3 have?",
        depth="quick",
    )
    advance_run(str(run.pk))
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.AWAITING_APPROVAL
    delivery = WebhookDelivery.objects.get(run=run)
    assert delivery.event == "run.awaiting_approval" and delivery.status == "pending"


def test_the_webhooks_page(owner, outsider, receiver):
    client = Client()
    client.force_login(owner, backend="django.contrib.auth.backends.ModelBackend")
    refused = client.post(
        "/webhooks/", {"url": "http://169.254.169.254/x", "events": ["run.completed"]}
    )
    assert refused.status_code == 422 and "cannot receive webhooks" in refused.content.decode()
    added = client.post("/webhooks/", {"url": receiver.url, "events": ["run.completed"]})
    assert added.status_code == 200
    hook = Webhook.objects.get()
    assert hook.secret in added.content.decode()
    (delivery,) = webhooks.emit(completed_run(owner).pk)
    webhooks.deliver(delivery.pk)
    log = client.get(f"/webhooks/{hook.pk}/").content.decode()
    assert "Delivered" in log and "HTTP 204" in log
    stranger = Client()
    stranger.force_login(outsider, backend="django.contrib.auth.backends.ModelBackend")
    assert stranger.get(f"/webhooks/{hook.pk}/").status_code == 404
    assert client.post(f"/webhooks/{hook.pk}/toggle/").status_code == 302
    hook.refresh_from_db()
    assert hook.active is False
