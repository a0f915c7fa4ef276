"""Personal API tokens: the settings page, hashing, revocation, read-only and team scope,
the session/CSRF rules and the per-token rate limit."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from accounts.models import ApiToken, hash_api_token
from accounts.services import api_token_create
from research.models import ResearchRun
from tests.web.factories import awaiting_run, completed_run, make_run

JSON = "application/json"


def bearer(secret: str) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def signed_in(user, **options) -> Client:
    client = Client(**options)
    client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
    return client


def test_the_settings_page_shows_a_new_token_once_and_stores_only_its_hash(owner, team):
    client = signed_in(owner)
    page = client.post("/accounts/tokens/", {"name": "CI bot", "read_only": "on", "team": team.pk})
    assert page.status_code == 200
    assert page["Cache-Control"] == "no-store"
    secret = re.search(r'value="(drt_[^"]+)"', page.content.decode()).group(1)
    token = ApiToken.objects.get()
    assert (token.name, token.read_only, token.team) == ("CI bot", True, team)
    assert token.token_hash == hash_api_token(secret) and secret not in token.token_hash
    listing = client.get("/accounts/tokens/").content.decode()
    assert secret not in listing and token.prefix in listing and "never" in listing
    bearer(secret).get("/api/v1/runs")
    assert "never" not in client.get("/accounts/tokens/").content.decode()
    token.refresh_from_db()
    assert token.last_used_at is not None


def test_the_settings_page_refuses_bad_input(owner, outsider):
    client = signed_in(owner)
    assert client.post("/accounts/tokens/", {"name": "  "}).status_code == 422
    other = signed_in(outsider)
    from accounts.services import team_create

    foreign = team_create(name="Elsewhere", owner=outsider)
    assert client.post("/accounts/tokens/", {"name": "x", "team": foreign.pk}).status_code == 422
    assert not ApiToken.objects.filter(user=owner).exists()
    assert other.get("/accounts/tokens/").status_code == 200
    assert Client().get("/accounts/tokens/").status_code == 302


def test_revocation_takes_effect_on_the_next_request(owner, private_run):
    token, secret = api_token_create(user=owner, name="laptop")
    client = bearer(secret)
    assert client.get(f"/api/v1/runs/{private_run.pk}").status_code == 200
    page = signed_in(owner)
    assert page.post(f"/accounts/tokens/{token.pk}/revoke/").status_code == 302
    response = client.get(f"/api/v1/runs/{private_run.pk}")
    assert response.status_code == 401
    assert response.json()["message"] == "This API token is not valid or has been revoked."
    # Someone else cannot revoke (or learn about) your token.
    _, other_secret = api_token_create(user=owner, name="second")
    second = ApiToken.objects.get(name="second")
    from tests.conftest import make_user

    stranger = signed_in(make_user("sam"))
    assert stranger.post(f"/accounts/tokens/{second.pk}/revoke/").status_code == 404
    assert bearer(other_secret).get("/api/v1/runs").status_code == 200


def test_a_deactivated_user_s_token_stops_working(owner):
    _, secret = api_token_create(user=owner, name="x")
    owner.is_active = False
    owner.save()
    assert bearer(secret).get("/api/v1/runs").status_code == 401


@pytest.mark.parametrize(
    "header", ["Bearer", "Bearer   ", "Basic dXNlcjpwYXNz", "Token abc", "Bearer drt_wrong"]
)
def test_a_bad_authorization_header_is_401_even_with_a_valid_session(header, owner, private_run):
    client = signed_in(owner, HTTP_AUTHORIZATION=header)
    response = client.get(f"/api/v1/runs/{private_run.pk}")
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


def _writes(run: ResearchRun, done: ResearchRun):
    return [
        ("post", "/api/v1/runs", {"question": "A new question?"}),
        ("put", f"/api/v1/runs/{run.pk}/plan", {"expected_version": 1, "plan": run.plan}),
        ("post", f"/api/v1/runs/{run.pk}/approve", {"version": 1}),
        ("post", f"/api/v1/runs/{run.pk}/pause", {}),
        ("post", f"/api/v1/runs/{run.pk}/resume", {}),
        ("post", f"/api/v1/runs/{run.pk}/cancel", {}),
        ("post", f"/api/v1/runs/{run.pk}/refine", {"instruction": "More on costs."}),
        ("post", f"/api/v1/runs/{run.pk}/retry", {}),
        ("post", f"/api/v1/runs/{done.pk}/budget", {"factor": 2}),
        ("post", f"/api/v1/runs/{done.pk}/refine", {"instruction": "Add 2024."}),
    ]


def test_a_read_only_token_is_refused_on_every_write(owner):
    run = awaiting_run(owner)
    done = completed_run(owner)
    _, secret = api_token_create(user=owner, name="reader", read_only=True)
    client = bearer(secret)
    for method, path, body in _writes(run, done):
        response = getattr(client, method)(path, body, content_type=JSON)
        assert response.status_code == 403, (method, path)
        assert response.json()["code"] == "read_only_token"
    run.refresh_from_db()
    assert (run.status, run.plan_version) == ("awaiting_approval", 1)
    assert ResearchRun.objects.count() == 2
    assert client.get(f"/api/v1/runs/{run.pk}").json()["controls"] == []
    assert client.get(f"/api/v1/runs/{run.pk}/plan").json()["editable"] is False


def test_session_calls_need_csrf_and_token_calls_do_not(owner):
    run = awaiting_run(owner)
    strict = signed_in(owner, enforce_csrf_checks=True)
    assert strict.get(f"/api/v1/runs/{run.pk}").status_code == 200
    refused = strict.post(f"/api/v1/runs/{run.pk}/pause")
    assert refused.status_code == 403 and refused.json()["code"] == "csrf_failed"
    strict.get("/accounts/tokens/")  # sets the CSRF cookie as any page does
    csrf = strict.cookies["csrftoken"].value
    allowed = strict.post(f"/api/v1/runs/{run.pk}/pause", HTTP_X_CSRFTOKEN=csrf)
    assert allowed.status_code == 200 and allowed.json()["status"] == "paused"
    _, secret = api_token_create(user=owner, name="x")
    token_client = Client(enforce_csrf_checks=True, HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert token_client.post(f"/api/v1/runs/{run.pk}/resume").status_code == 200


def test_a_team_scoped_token_sees_and_creates_only_that_team_s_research(owner, team):
    from accounts.services import team_create

    other_team = team_create(name="Other", owner=owner)
    done = {"status": "completed"}  # not planning, so the creation quota stays free
    ours = make_run(owner, team=team, visibility="team", question="Team run", **done)
    theirs = make_run(owner, team=other_team, visibility="team", question="Other run", **done)
    private = make_run(owner, question="Private run", **done)
    _, secret = api_token_create(user=owner, name="lab bot", team=team)
    client = bearer(secret)
    listed = [item["question"] for item in client.get("/api/v1/runs").json()["items"]]
    assert listed == ["Team run"]
    assert client.get(f"/api/v1/runs/{ours.pk}").status_code == 200
    for run in (theirs, private):
        assert client.get(f"/api/v1/runs/{run.pk}").status_code == 404
        assert client.post(f"/api/v1/runs/{run.pk}/cancel").status_code == 404
    created = client.post("/api/v1/runs", {"question": "For the lab?"}, content_type=JSON)
    assert created.status_code == 202 and created.json()["team"] == team.slug
    elsewhere = client.post(
        "/api/v1/runs", {"question": "Elsewhere?", "team": other_team.slug}, content_type=JSON
    )
    assert elsewhere.status_code == 422 and elsewhere.json()["field"] == "team"


def test_the_rate_limit_answers_429_with_retry_after(owner, settings):
    settings.API_TOKEN_REQUESTS_PER_MINUTE = 3
    _, secret = api_token_create(user=owner, name="busy")
    client = bearer(secret)
    assert [client.get("/api/v1/runs").status_code for _ in range(3)] == [200, 200, 200]
    refused = client.get("/api/v1/runs")
    assert refused.status_code == 429
    assert refused.json()["code"] == "rate_limited"
    assert 1 <= int(refused["Retry-After"]) <= 60
    # Another token has its own allowance.
    _, other = api_token_create(user=owner, name="calm")
    assert bearer(other).get("/api/v1/runs").status_code == 200
    # A new minute starts a new count.
    ApiToken.objects.filter(name="busy").update(rate_window=0)
    assert client.get("/api/v1/runs").status_code == 200
