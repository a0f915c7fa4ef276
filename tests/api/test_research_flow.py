"""A quick research run driven only through the API, on the frozen web with the extractive
backend: create, (auto-)approve, let the worker run it, fetch the report. Every citation the
API returns resolves to an excerpt that is exactly in its source's stored snapshot."""

from __future__ import annotations

import pytest
from django.test import Client, override_settings

from accounts.services import api_token_create
from research.engine.ledger import normalize_for_matching
from research.models import ResearchEvidence
from research.worker.actors import advance_run

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How many daily boardings did Harwick Metro Line 3 have, and what did it cost to build?"
JSON = "application/json"


@pytest.fixture
def frozen_settings(web):
    with override_settings(**web.django_settings()):
        yield web


def _client(owner) -> Client:
    _, secret = api_token_create(user=owner, name="flow")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def _check_report(client: Client, run_id: str) -> None:
    report = client.get(f"/api/v1/runs/{run_id}/report")
    assert report.status_code == 200, report.content[:300]
    body = report.json()
    assert body["report"]["mode"] == "extractive" and body["citations"]
    rows = ResearchEvidence.objects.filter(run_id=run_id).select_related("source")
    by_id = {row.pk: row for row in rows}
    for citation in body["citations"]:
        row = by_id[citation["evidence_ids"][0]]
        located = row.source.snapshot_text[row.locator["start"] : row.locator["end"]]
        assert normalize_for_matching(located) == normalize_for_matching(citation["excerpt"])
        assert citation["link"] and citation["link"].startswith("http")
        one = client.get(citation["evidence_url"].removeprefix("http://testserver"))
        assert one.status_code == 200 and one.json()["excerpt"] == citation["excerpt"]


def test_create_approve_and_fetch_the_report(owner, frozen_settings):
    client = _client(owner)
    created = client.post(
        "/api/v1/runs", {"question": QUESTION, "depth": "quick"}, content_type=JSON
    ).json()
    advance_run(created["id"])
    plan = client.get(f"/api/v1/runs/{created['id']}/plan").json()
    assert plan["status"] == "awaiting_approval" and plan["editable"]
    approved = client.post(
        f"/api/v1/runs/{created['id']}/approve", {"version": plan["version"]}, content_type=JSON
    )
    assert approved.status_code == 200 and approved.json()["status"] == "queued"
    advance_run(created["id"])
    run = client.get(f"/api/v1/runs/{created['id']}").json()
    assert run["status"] in ("completed", "budget_exhausted"), run["outcome"]
    steps = client.get(f"/api/v1/runs/{created['id']}/steps?limit=100").json()
    assert {"plan", "search", "read", "synthesize"} <= {s["kind"] for s in steps["items"]}
    _check_report(client, created["id"])


def test_auto_approve_starts_research_once_the_plan_is_drafted(owner, frozen_settings):
    client = _client(owner)
    created = client.post(
        "/api/v1/runs",
        {"question": QUESTION, "depth": "quick", "auto_approve": True},
        content_type=JSON,
    ).json()
    advance_run(created["id"])  # plans, then approves the plan itself
    run = client.get(f"/api/v1/runs/{created['id']}").json()
    assert run["status"] == "queued" and run["approved_at"] and run["plan_version"] == 1
    advance_run(created["id"])
    run = client.get(f"/api/v1/runs/{created['id']}").json()
    assert run["status"] in ("completed", "budget_exhausted"), run["outcome"]
    _check_report(client, created["id"])
