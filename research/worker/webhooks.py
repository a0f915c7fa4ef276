"""Webhooks: tell another program when a run needs approval or has ended.

A hook belongs to a person (their own runs) or to a team (runs shared with the team; only its
owners and editors may add one) and subscribes to some of ``EVENTS``. When a worker leaves a
run in one of those states, ``emit`` writes one ``WebhookDelivery`` per matching hook (unique per
hook and event occurrence, so a message handled twice sends once) and queues it after commit.
``deliver`` sends it through the SSRF-safe fetcher with an HMAC-SHA256 signature of the exact
body; a failed attempt is logged on the delivery and retried with backoff up to
``WEBHOOK_MAX_ATTEMPTS``; a target the fetcher refuses (a private or metadata address that is not
allow-listed in ``WEBHOOK_ALLOWED_HOSTS``) is refused at once and never retried.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import logging
import secrets
import time
from typing import Any

import dramatiq
from django.conf import settings
from django.db import transaction
from django.urls import reverse
from django.utils import timezone

from accounts.models import Membership, Team, User
from research.engine.states import RunStatus
from research.models import ResearchRun, Webhook, WebhookDelivery
from research.sources.config import sources_config_from_settings
from research.sources.errors import SourceError
from research.sources.safe_fetch import SafeFetcher

logger = logging.getLogger(__name__)

EVENTS = ("run.awaiting_approval", "run.completed", "run.partial", "run.failed")
STATUS_EVENTS = {
    RunStatus.AWAITING_APPROVAL: "run.awaiting_approval",
    RunStatus.COMPLETED: "run.completed",
    RunStatus.BUDGET_EXHAUSTED: "run.partial",
    RunStatus.FAILED: "run.failed",
}
SIGNATURE_HEADER = "X-DeepResearch-Signature"
MAX_HOOKS_PER_OWNER = 20
_RESPONSE_TYPES = frozenset({"application/json", "text/plain", "text/html", ""})


class WebhookError(Exception):
    """A hook that cannot be saved; the message says why in one sentence."""


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """``t=<unix time>,v1=<hex HMAC-SHA256 of "<t>." + body>`` (the receiver recomputes it)."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def _fetcher() -> SafeFetcher:
    """The research fetcher's limits and static hosts, with the webhook allow-list only (the
    research allow-list says which intranet pages may be read, not where to post)."""
    config = dataclasses.replace(
        sources_config_from_settings(), allowed_hosts=tuple(settings.WEBHOOK_ALLOWED_HOSTS)
    )
    return SafeFetcher(config)


def check_target(url: str) -> None:
    """Raise ``WebhookError`` when ``url`` is not one the fetcher would post to."""
    if not url.lower().startswith(("http://", "https://")):
        raise WebhookError("A webhook address must start with http:// or https://.")
    try:
        _fetcher().check_url(url)
    except SourceError as exc:
        raise WebhookError(f"This address cannot receive webhooks: {exc.reason}") from None


def webhook_create(
    *, owner: User, url: str, events: list[str], team: Team | None = None
) -> Webhook:
    url = url.strip()
    if not events or any(event not in EVENTS for event in events):
        raise WebhookError(f"Choose at least one event of: {', '.join(EVENTS)}.")
    if (
        team is not None
        and not Membership.objects.filter(
            team=team, user=owner, role__in=(Membership.Role.OWNER, Membership.Role.EDITOR)
        ).exists()
    ):
        raise WebhookError("Only a team's owners and editors can add webhooks for it.")
    if Webhook.objects.filter(owner=owner).count() >= MAX_HOOKS_PER_OWNER:
        raise WebhookError(f"You have {MAX_HOOKS_PER_OWNER} webhooks, the most allowed.")
    check_target(url)
    return Webhook.objects.create(
        owner=owner,
        team=team,
        url=url,
        events=list(dict.fromkeys(events)),
        secret=secrets.token_hex(32),
    )


def hooks_for(run: ResearchRun, event: str) -> list[Webhook]:
    """Active hooks that hear about ``run``: the owner's own, and the run's team's when it is
    shared with the team."""
    hooks = Webhook.objects.filter(active=True, owner=run.owner, team__isnull=True)
    found = [hook for hook in hooks if event in hook.events]
    if run.team_id and run.visibility != ResearchRun.Visibility.PRIVATE:
        for hook in Webhook.objects.filter(active=True, team_id=run.team_id):
            if event in hook.events:
                found.append(hook)
    return found


def payload(run: ResearchRun, event: str) -> dict[str, Any]:
    base = settings.WEBHOOK_PUBLIC_URL.rstrip("/")
    return {
        "event": event,
        "run": {
            "id": str(run.pk),
            "status": run.status,
            "outcome": run.outcome.key.value,
            "question": run.question,
            "plan_version": run.plan_version,
        },
        "links": {
            "api": f"{base}/api/v1/runs/{run.pk}",
            "report": f"{base}/api/v1/runs/{run.pk}/report",
            "web": base + reverse("research:run_detail", args=[run.pk]),
        },
        "sent_at": timezone.now().isoformat(),
    }


def emit(run_id: object) -> list[WebhookDelivery]:
    """Queue deliveries for the state ``run_id`` is in now, if it is an event state."""
    run = ResearchRun.objects.select_related("owner").filter(pk=run_id).first()
    if run is None or run.status not in STATUS_EVENTS:
        return []
    event = STATUS_EVENTS[RunStatus(run.status)]
    # One occurrence per state entered: a new plan version or a new ending is a new event.
    occurrence = (
        f"{event}:{run.pk}:{run.plan_version}:{(run.completed_at or run.updated_at).isoformat()}"
    )
    if event == "run.awaiting_approval":
        occurrence = f"{event}:{run.pk}:{run.plan_version}"
    made = []
    with transaction.atomic():
        for hook in hooks_for(run, event):
            delivery, created = WebhookDelivery.objects.get_or_create(
                webhook=hook,
                dedupe_key=occurrence[:200],
                defaults={"event": event, "run": run, "payload": payload(run, event)},
            )
            if created:
                made.append(delivery)
                transaction.on_commit(lambda pk=delivery.pk: _queue(pk, delay_ms=0))
    return made


@dramatiq.actor(queue_name="webhooks", max_retries=0, time_limit=60_000)
def deliver_webhook(delivery_id: int) -> None:
    """One delivery attempt; ``deliver`` schedules the next one with backoff."""
    deliver(delivery_id)


def _queue(delivery_id: int, *, delay_ms: int) -> None:
    try:
        deliver_webhook.send_with_options(args=(delivery_id,), delay=delay_ms or None)
    except Exception as exc:  # the broker is down: the delivery stays pending in the log
        logger.warning("Could not queue webhook delivery %s: %s", delivery_id, exc)


def backoff_ms(attempt: int) -> int:
    """Wait before attempt ``attempt + 1``: 10 s, 40 s, 160 s, … capped at an hour."""
    return min(3600, 10 * 4 ** (attempt - 1)) * 1000


def deliver(delivery_id: int) -> WebhookDelivery | None:
    """Make one attempt; log it; schedule the next one when it failed and attempts remain."""
    delivery = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery_id).first()
    if delivery is None or delivery.status != WebhookDelivery.Status.PENDING:
        return delivery
    hook = delivery.webhook
    body = json.dumps(delivery.payload, separators=(",", ":"), sort_keys=True).encode()
    now = int(time.time())
    headers = {
        "Content-Type": "application/json",
        SIGNATURE_HEADER: sign(hook.secret, body, now),
        "X-DeepResearch-Event": delivery.event,
        "X-DeepResearch-Delivery": str(delivery.pk),
    }
    entry: dict[str, Any] = {"at": timezone.now().isoformat(), "status_code": None, "error": ""}
    refused = ok = False
    try:
        response = _fetcher().request(
            "POST",
            hook.url,
            headers=headers,
            content=body,
            media_types=_RESPONSE_TYPES,
            max_bytes=64 * 1024,
            follow_redirects=False,
            total_timeout=settings.WEBHOOK_TIMEOUT_SECONDS,
        )
        entry["status_code"] = response.status_code
        ok = True
    except SourceError as exc:
        entry["status_code"] = exc.status
        answered_2xx = exc.status is not None and 200 <= exc.status < 300
        if answered_2xx or (exc.kind == "unsupported" and exc.status is None):
            # A success answer whose body the fetcher would not read as a page (none, or of
            # another type): delivered all the same; the body does not matter.
            ok = True
        else:
            entry["error"] = exc.reason[:500]
            refused = exc.kind == "blocked"
    attempts = delivery.attempts + 1
    log = [*delivery.attempt_log, {**entry, "ok": ok}]
    if ok:
        status = WebhookDelivery.Status.SUCCEEDED
    elif refused:
        status = WebhookDelivery.Status.REFUSED
    elif attempts >= settings.WEBHOOK_MAX_ATTEMPTS:
        status = WebhookDelivery.Status.FAILED
    else:
        status = WebhookDelivery.Status.PENDING
    WebhookDelivery.objects.filter(pk=delivery.pk, attempts=delivery.attempts).update(
        attempts=attempts,
        attempt_log=log,
        status=status,
        delivered_at=timezone.now() if ok else None,
    )
    delivery.refresh_from_db()
    if status == WebhookDelivery.Status.PENDING:
        _queue(delivery.pk, delay_ms=backoff_ms(attempts))
    return delivery
