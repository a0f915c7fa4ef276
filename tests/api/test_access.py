"""Every endpoint over owner / editor / viewer / outsider / anonymous / share link.

The API follows the pages' rules (research.access): a run the caller may not see is 404
whether or not it exists, a viewer may read but every write answers 403, anonymous calls
are 401, and a share link reads the report and its evidence but nothing else.
"""

from __future__ import annotations

import uuid

import pytest

from research.models import ResearchEvidence, ResearchRun
from research.web.exports import pdf_unavailable_reason
from tests.web.factories import awaiting_run, completed_run

ROLES = ("owner", "editor", "viewer", "outsider", "anonymous")
MAY_VIEW = {"owner", "editor", "viewer"}
MAY_ACT = {"owner", "editor"}


@pytest.fixture
def people(owner, editor, viewer, outsider):
    return {"owner": owner, "editor": editor, "viewer": viewer, "outsider": outsider}


@pytest.fixture
def report_run(owner, team):
    return completed_run(owner, team=team, visibility=ResearchRun.Visibility.LINK)


def _client(api_for, people, role):
    return api_for(people.get(role))


READS = [
    "/api/v1/runs/{id}",
    "/api/v1/runs/{id}/plan",
    "/api/v1/runs/{id}/steps",
    "/api/v1/runs/{id}/sources",
    "/api/v1/runs/{id}/evidence",
    "/api/v1/runs/{id}/evidence/{evidence}",
    "/api/v1/runs/{id}/report",
    "/api/v1/runs/{id}/report.md",
    "/api/v1/runs/{id}/report.pdf",
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("path", READS)
def test_reads_follow_the_access_rules(role, path, people, api_for, report_run):
    evidence = ResearchEvidence.objects.filter(run=report_run).first()
    url = path.format(id=report_run.pk, evidence=evidence.pk)
    response = _client(api_for, people, role).get(url)
    if role == "anonymous":
        assert response.status_code == 401
        assert response.json()["code"] == "unauthenticated"
        assert response["WWW-Authenticate"] == "Bearer"
    elif role in MAY_VIEW:
        expected = 503 if path.endswith(".pdf") and pdf_unavailable_reason() else 200
        assert response.status_code == expected, response.content[:300]
    else:
        assert response.status_code == 404
        assert response.json() == {
            "code": "not_found",
            "message": "No such research run.",
            "field": None,
        }


@pytest.mark.parametrize("path", READS)
def test_a_run_that_does_not_exist_is_the_same_404(path, owner, api_for):
    url = path.format(id=uuid.uuid4(), evidence="ev-0")
    response = api_for(owner).get(url)
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


WRITES = [
    ("put", "/api/v1/runs/{id}/plan", "plan"),
    ("post", "/api/v1/runs/{id}/approve", {"version": 1}),
    ("post", "/api/v1/runs/{id}/pause", None),
    ("post", "/api/v1/runs/{id}/resume", None),
    ("post", "/api/v1/runs/{id}/cancel", None),
    ("post", "/api/v1/runs/{id}/refine", {"instruction": "Focus on Germany."}),
    ("post", "/api/v1/runs/{id}/retry", None),
    ("post", "/api/v1/runs/{id}/budget", {"factor": 1.5}),
]


def _body(body, run):
    if body == "plan":
        return {"expected_version": run.plan_version, "plan": run.plan}
    return body if body is not None else {}


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("method", "path", "body"), WRITES)
def test_writes_follow_the_access_rules(role, method, path, body, people, api_for, owner, team):
    run = awaiting_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)
    client = _client(api_for, people, role)
    response = getattr(client, method)(
        path.format(id=run.pk), _body(body, run), content_type="application/json"
    )
    before = run.status
    run.refresh_from_db()
    if role == "anonymous":
        assert response.status_code == 401
    elif role == "outsider":
        assert response.status_code == 404
    elif role == "viewer":
        assert response.status_code == 403
        assert response.json()["code"] == "forbidden"
    else:
        # Owners and editors reach the service: it applies the control or says why not now.
        assert response.status_code in (200, 409), response.content[:300]
        if response.status_code == 409:
            assert response.json()["code"] == "not_allowed_now"
            assert response.json()["message"]
        return
    assert run.status == before and run.plan_version == 1  # nothing changed


@pytest.mark.parametrize("role", ROLES)
def test_create_and_list(role, people, api_for, team, report_run):
    client = _client(api_for, people, role)
    listed = client.get("/api/v1/runs")
    created = client.post(
        "/api/v1/runs",
        {"question": "What do heat pumps cost?", "team": team.slug},
        content_type="application/json",
    )
    if role == "anonymous":
        assert listed.status_code == created.status_code == 401
        return
    ids = [item["id"] for item in listed.json()["items"]]
    assert (str(report_run.pk) in ids) == (role in MAY_VIEW)
    if role in MAY_ACT:
        assert created.status_code == 202
        assert created.json()["team"] == team.slug
        assert created.json()["visibility"] == "team"
    else:
        assert created.status_code == 422
        assert created.json()["field"] in ("team", None)
        assert not ResearchRun.objects.filter(question="What do heat pumps cost?").exists()


def test_viewers_see_no_controls_and_owners_see_the_legal_ones(owner, viewer, team, api_for):
    run = awaiting_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)
    assert api_for(viewer).get(f"/api/v1/runs/{run.pk}").json()["controls"] == []
    mine = api_for(owner).get(f"/api/v1/runs/{run.pk}").json()
    assert {"approve", "edit_plan", "cancel"} <= set(mine["controls"])
    assert "retry" not in mine["controls"]


SHARED = [
    "/api/v1/shared/{token}",
    "/api/v1/shared/{token}/report",
    "/api/v1/shared/{token}/report.md",
    "/api/v1/shared/{token}/evidence/{evidence}",
]


@pytest.mark.parametrize("path", SHARED)
def test_a_share_link_reads_the_report_without_signing_in(path, api_for, report_run, outsider):
    evidence = ResearchEvidence.objects.filter(run=report_run).first()
    url = path.format(token=report_run.share_token, evidence=evidence.pk)
    for client in (api_for(None), api_for(outsider)):
        response = client.get(url)
        assert response.status_code == 200, response.content[:300]
    # A wrong token, or one of a run no longer shared by link, is the same 404.
    wrong = path.format(token="not-a-token", evidence=evidence.pk)
    assert api_for(None).get(wrong).status_code == 404
    ResearchRun.objects.filter(pk=report_run.pk).update(visibility=ResearchRun.Visibility.TEAM)
    assert api_for(None).get(url).status_code == 404


def test_a_share_link_exposes_no_controls_and_no_run_routes(api_for, report_run):
    shared = api_for(None).get(f"/api/v1/shared/{report_run.share_token}").json()
    assert shared["controls"] == [] and shared["share_url"] is None
    assert set(shared["links"]) == {"report", "report_markdown", "report_pdf", "web"}
    # The share token is not a credential for the signed-in routes.
    client = api_for(None)
    response = client.get(f"/api/v1/runs/{report_run.pk}?share_token={report_run.share_token}")
    assert response.status_code == 401


def test_report_resolves_every_citation_to_its_excerpt_and_source(owner, api_for, report_run):
    body = api_for(owner).get(f"/api/v1/runs/{report_run.pk}/report").json()
    rows = {row.pk: row for row in ResearchEvidence.objects.filter(run=report_run)}
    cited = {
        evidence_id
        for section in body["report"]["sections"]
        for statement in section["statements"]
        for evidence_id in statement["evidence_ids"]
    }
    assert cited and cited <= set(body["citation_numbers"])
    for citation in body["citations"]:
        row = rows[citation["evidence_ids"][0]]
        assert citation["excerpt"] == row.excerpt
        assert citation["source"]["id"] == str(row.source_id)
        assert citation["evidence_url"].endswith(f"/api/v1/runs/{report_run.pk}/evidence/{row.pk}")
    markdown = api_for(owner).get(f"/api/v1/runs/{report_run.pk}/report.md")
    assert markdown["Content-Type"].startswith("text/markdown")
    assert report_run.report["title"] in markdown.content.decode()


def test_a_run_without_a_report_answers_404_for_the_report(owner, api_for):
    run = awaiting_run(owner)
    for suffix in ("report", "report.md", "report.pdf"):
        response = api_for(owner).get(f"/api/v1/runs/{run.pk}/{suffix}")
        assert response.status_code == 404
        assert response.json()["message"] == "This research has no report yet."
