"""Runs through the API: create (idempotent), list with filters and pages, plan edits with
their 409 on a stale version, and the controls, all through research.services."""

from __future__ import annotations

import pytest

from research.models import ResearchRun
from tests.web.factories import awaiting_run, completed_run, make_run, plan_data

JSON = "application/json"


def test_create_answers_202_with_a_durable_run_and_is_idempotent(owner, api_for):
    client = api_for(owner)
    body = {
        "question": "How large is the heat-pump market?",
        "depth": "quick",
        "source_policy": {"mode": "prefer_domains", "domains": ["Example.org"]},
        "report_template": "literature_review",
        "auto_approve": True,
        "client_request_id": "req-1",
    }
    first = client.post("/api/v1/runs", body, content_type=JSON)
    assert first.status_code == 202, first.content
    run = ResearchRun.objects.get(pk=first.json()["id"])
    assert (run.depth, run.report_template, run.auto_approve) == (
        "quick",
        "literature_review",
        True,
    )
    assert run.source_policy["domains"] == ["example.org"]
    assert run.status == "created"
    again = client.post("/api/v1/runs", body, content_type=JSON)
    assert again.status_code == 202 and again.json()["id"] == first.json()["id"]
    assert ResearchRun.objects.filter(owner=owner).count() == 1
    # Another person's identical request id is their own run.
    assert ResearchRun.objects.count() == 1


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "question"),
        ({"question": "   "}, "question"),
        ({"question": "x" * 5000}, "question"),
        ({"question": "Q?", "depth": "deep"}, "depth"),
        ({"question": "Q?", "report_template": "nope"}, "report_template"),
        ({"question": "Q?", "source_policy": {"mode": "only_domains"}}, "source_policy"),
        ({"question": "Q?", "source_policy": {"mode": "full_web", "x": 1}}, "source_policy.x"),
        ({"question": "Q?", "visibility": "team"}, "team"),
        ({"question": "Q?", "team": "no-such-team"}, "team"),
        ({"question": "Q?", "client_request_id": "x" * 65}, "client_request_id"),
    ],
)
def test_create_refuses_bad_input_naming_the_field(body, field, owner, api_for):
    response = api_for(owner).post("/api/v1/runs", body, content_type=JSON)
    assert response.status_code == 422, response.content
    error = response.json()
    assert set(error) == {"code", "message", "field"}
    assert error["code"] == "invalid" and error["field"] == field and error["message"]
    assert not ResearchRun.objects.exists()


def test_malformed_json_is_a_sentence_not_a_500(owner, api_for):
    response = api_for(owner).post("/api/v1/runs", "{not json", content_type=JSON)
    assert response.status_code == 400
    assert response.json() == {
        "code": "malformed",
        "message": "The request body is not valid JSON; send a JSON object.",
        "field": None,
    }


def test_create_past_the_hourly_quota_is_429(owner, api_for, settings):
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 1
    client = api_for(owner)
    assert client.post("/api/v1/runs", {"question": "One?"}, content_type=JSON).status_code == 202
    refused = client.post("/api/v1/runs", {"question": "Two?"}, content_type=JSON)
    assert refused.status_code == 429
    assert refused.json()["code"] == "quota_exceeded" and refused["Retry-After"]


def test_list_filters_and_pages(owner, editor, team, api_for):
    for n in range(5):
        make_run(owner, question=f"Solar question {n}")
    completed_run(owner, question="Wind power costs", team=team, visibility="team")
    make_run(editor, question="Editor's private run")
    client = api_for(owner)
    page = client.get("/api/v1/runs?limit=2").json()
    assert page["count"] == 6 and len(page["items"]) == 2 and page["next_offset"] == 2
    last = client.get("/api/v1/runs?limit=2&offset=4").json()
    assert len(last["items"]) == 2 and last["next_offset"] is None
    assert client.get("/api/v1/runs?status=completed").json()["count"] == 1
    assert client.get(f"/api/v1/runs?team={team.slug}").json()["count"] == 1
    assert client.get("/api/v1/runs?q=solar%20question").json()["count"] == 5
    # The editor sees the team's run and their own, never the owner's private ones.
    theirs = api_for(editor).get("/api/v1/runs").json()
    assert {item["question"] for item in theirs["items"]} == {
        "Wind power costs",
        "Editor's private run",
    }
    assert api_for(editor).get("/api/v1/runs?mine=true").json()["count"] == 1
    bad = client.get("/api/v1/runs?limit=1000")
    assert bad.status_code == 422 and bad.json()["field"] == "limit"


def test_plan_get_and_replace(owner, api_for):
    run = awaiting_run(owner)
    client = api_for(owner)
    got = client.get(f"/api/v1/runs/{run.pk}/plan").json()
    assert got["version"] == 1 and got["editable"] is True
    plan = got["plan"]
    plan["objective"] = "Estimate the German heat-pump market."
    saved = client.put(
        f"/api/v1/runs/{run.pk}/plan",
        {"expected_version": 1, "plan": plan},
        content_type=JSON,
    )
    assert saved.status_code == 200, saved.content
    assert saved.json()["version"] == 2
    run.refresh_from_db()
    assert run.plan["objective"] == "Estimate the German heat-pump market."


def test_a_stale_plan_write_is_409_with_the_current_version_and_changed_fields(
    owner, editor, team, api_for
):
    run = awaiting_run(owner, team=team, visibility="team")
    mine, theirs = api_for(owner), api_for(editor)
    base = mine.get(f"/api/v1/runs/{run.pk}/plan").json()["plan"]
    edited = {**base, "audience": "Installers"}
    assert (
        theirs.put(
            f"/api/v1/runs/{run.pk}/plan",
            {"expected_version": 1, "plan": edited},
            content_type=JSON,
        ).status_code
        == 200
    )
    stale = {**base, "objective": "Something else entirely."}
    response = mine.put(
        f"/api/v1/runs/{run.pk}/plan", {"expected_version": 1, "plan": stale}, content_type=JSON
    )
    assert response.status_code == 409
    body = response.json()
    assert body["code"] == "plan_version_conflict"
    assert body["current_version"] == 2 and body["field"] == "expected_version"
    assert set(body["changed_fields"]) == {"audience", "objective"}
    run.refresh_from_db()
    assert run.plan_version == 2 and run.plan["audience"] == "Installers"
    # Approving an old version is the same conflict; the reviewed one is approved.
    old = mine.post(f"/api/v1/runs/{run.pk}/approve", {"version": 1}, content_type=JSON)
    assert old.status_code == 409 and old.json()["current_version"] == 2
    ok = mine.post(f"/api/v1/runs/{run.pk}/approve", {"version": 2}, content_type=JSON)
    assert ok.status_code == 200 and ok.json()["status"] == "queued"


def test_an_invalid_plan_names_the_field(owner, api_for):
    run = awaiting_run(owner)
    bad = plan_data(questions=0)
    response = api_for(owner).put(
        f"/api/v1/runs/{run.pk}/plan", {"expected_version": 1, "plan": bad}, content_type=JSON
    )
    assert response.status_code == 422
    assert response.json()["field"] == "plan.questions"


def test_controls_call_the_services(owner, api_for):
    run = awaiting_run(owner)
    client = api_for(owner)
    paused = client.post(f"/api/v1/runs/{run.pk}/pause")
    assert paused.status_code == 200 and paused.json()["status"] == "paused"
    again = client.post(f"/api/v1/runs/{run.pk}/pause")
    assert again.status_code == 409 and again.json()["code"] == "not_allowed_now"
    resumed = client.post(f"/api/v1/runs/{run.pk}/resume")
    assert resumed.json()["status"] == "awaiting_approval"
    refused = client.post(f"/api/v1/runs/{run.pk}/retry")
    assert refused.status_code == 409
    assert refused.json()["message"] == "A run that is awaiting approval cannot be retried."
    cancelled = client.post(f"/api/v1/runs/{run.pk}/cancel")
    assert cancelled.json()["status"] == "cancelled"


def test_refining_a_completed_run_answers_the_new_run(owner, api_for):
    run = completed_run(owner)
    response = api_for(owner).post(
        f"/api/v1/runs/{run.pk}/refine", {"instruction": "Add 2024."}, content_type=JSON
    )
    assert response.status_code == 200
    assert response.json()["parent_run_id"] == str(run.pk) and response.json()["id"] != str(run.pk)
    blank = api_for(owner).post(
        f"/api/v1/runs/{run.pk}/refine", {"instruction": "  "}, content_type=JSON
    )
    assert blank.status_code == 422 and blank.json()["field"] == "instruction"


def test_more_budget_for_a_run_that_ran_out(owner, api_for):
    run = make_run(
        owner,
        status="budget_exhausted",
        stop_reason="budget",
        stop_limit="searches",
        plan=plan_data(),
        plan_version=1,
    )
    client = api_for(owner)
    too_much = client.post(f"/api/v1/runs/{run.pk}/budget", {"factor": 10}, content_type=JSON)
    assert too_much.status_code == 422 and too_much.json()["field"] == "factor"
    grown = client.post(f"/api/v1/runs/{run.pk}/budget", {"factor": 2}, content_type=JSON)
    assert grown.status_code == 200, grown.content
    assert grown.json()["status"] == "queued"
    assert grown.json()["budget"]["searches"] > run.budget["searches"]


def test_steps_sources_and_evidence(owner, api_for):
    run = completed_run(owner, sources=3)
    client = api_for(owner)
    steps = client.get(f"/api/v1/runs/{run.pk}/steps").json()
    assert [step["kind"] for step in steps["items"]] == ["plan", "search", "read", "synthesize"]
    sources = client.get(f"/api/v1/runs/{run.pk}/sources").json()
    assert sources["count"] == 3 and all(item["evidence_count"] == 1 for item in sources["items"])
    assert client.get(f"/api/v1/runs/{run.pk}/sources?status=failed").json()["count"] == 0
    evidence = client.get(f"/api/v1/runs/{run.pk}/evidence").json()
    assert evidence["count"] == 3
    item = evidence["items"][0]
    one = client.get(f"/api/v1/runs/{run.pk}/evidence/{item['id']}").json()
    assert one == item
    assert item["excerpt"] and item["locator_text"] and item["source"]["url"]
    first_source = sources["items"][0]["id"]
    only = client.get(f"/api/v1/runs/{run.pk}/evidence?source={first_source}").json()
    assert only["count"] == 1 and only["items"][0]["source"]["id"] == first_source
