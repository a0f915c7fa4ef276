"""Who may do what on every page, partial, control and export: owner, team editor, team
viewer, non-member and anonymous (with and without a share token). Anyone who may not see a
run gets 404 — never 403 — so a run's existence is not revealed; anonymous visitors of
signed-in pages are sent to the login page whether or not the run exists."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from research.models import ResearchRun
from research.web.exports import pdf_unavailable_reason
from tests.web.factories import awaiting_run, completed_run

ROLES = ("owner", "editor", "viewer", "outsider", "anonymous")
MAY_VIEW = {"owner", "editor", "viewer"}
MAY_CONTROL = {"owner", "editor"}


@pytest.fixture
def people(owner, editor, viewer, outsider):
    return {
        "owner": owner,
        "editor": editor,
        "viewer": viewer,
        "outsider": outsider,
        "anonymous": None,
    }


@pytest.fixture
def report_run(owner, team):
    return completed_run(owner, team=team, visibility=ResearchRun.Visibility.LINK)


@pytest.fixture
def plan_run(owner, team):
    return awaiting_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)


def _view_urls(run: ResearchRun) -> list[tuple[str, bool]]:
    """(url, is an HTMX partial) for everything that reads a run."""
    evidence = run.evidence.first()
    source = run.sources.first()
    pages = [
        (reverse("research:run_detail", args=[run.pk]), False),
        (reverse("research:run_report", args=[run.pk]), False),
        (reverse("research:report_markdown", args=[run.pk]), False),
        (reverse("research:evidence_detail", args=[run.pk, evidence.pk]), False),
        (reverse("research:evidence_detail", args=[run.pk, evidence.pk]), True),
        (reverse("research:source_detail", args=[run.pk, source.pk]), False),
        (reverse("research:source_detail", args=[run.pk, source.pk]), True),
        (reverse("research:run_plan", args=[run.pk]), True),
    ]
    sections = ("header", "progress", "timeline", "sources", "controls", "sharing")
    pages += [(reverse(f"research:run_{name}", args=[run.pk]), True) for name in sections]
    return pages


def _expected(role: str, allowed: set[str]) -> int:
    if role == "anonymous":
        return 302
    return 200 if role in allowed else 404


@pytest.mark.parametrize("role", ROLES)
def test_reading_a_run(role, people, report_run, client_for, htmx_headers):
    client = client_for(people[role])
    for url, partial in _view_urls(report_run):
        headers = htmx_headers if partial else {}
        response = client.get(url, **headers)
        assert response.status_code == _expected(role, MAY_VIEW), (role, url, partial)
        if role == "anonymous":
            assert response["Location"].startswith(reverse("accounts:login"))


@pytest.mark.parametrize("role", ROLES)
def test_pdf_export(role, people, report_run, client_for):
    response = client_for(people[role]).get(reverse("research:report_pdf", args=[report_run.pk]))
    expected = _expected(role, MAY_VIEW)
    if expected == 200 and pdf_unavailable_reason():
        expected = 503  # allowed, but this host lacks WeasyPrint's libraries: says why
    assert response.status_code == expected
    if response.status_code == 200:
        assert response["Content-Type"] == "application/pdf"
        assert response.content.startswith(b"%PDF")


@pytest.mark.parametrize("role", ROLES)
def test_editing_the_plan(role, people, plan_run, client_for, htmx_headers):
    client = client_for(people[role])
    url = reverse("research:run_plan", args=[plan_run.pk])
    response = client.post(
        url, {"op": "add", "q-TOTAL_FORMS": "1", "q-0-text": "x"}, **htmx_headers
    )
    assert response.status_code == _expected(role, MAY_CONTROL)


@pytest.mark.parametrize("role", ROLES)
def test_changing_who_may_see_a_run(role, people, plan_run, client_for):
    response = client_for(people[role]).post(
        reverse("research:run_sharing", args=[plan_run.pk]), {"visibility": "private"}
    )
    plan_run.refresh_from_db()
    if role in MAY_CONTROL:
        assert response.status_code == 302
        assert plan_run.visibility == ResearchRun.Visibility.PRIVATE
    else:
        assert response.status_code == _expected(role, set())
        assert plan_run.visibility == ResearchRun.Visibility.TEAM


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("action", ["pause", "resume", "cancel", "retry", "budget", "refine"])
def test_every_control(role, action, people, plan_run, client_for):
    before = plan_run.status
    response = client_for(people[role]).post(
        reverse("research:run_control", args=[plan_run.pk, action]),
        {"instruction": "Focus on Germany."},
    )
    plan_run.refresh_from_db()
    if role in MAY_CONTROL:
        # Allowed to try: the run page answers (legal or not, a message says what happened).
        assert response.status_code == 302
        assert response["Location"] == reverse("research:run_detail", args=[plan_run.pk])
    else:
        assert response.status_code == _expected(role, set())
        assert plan_run.status == before
        assert not plan_run.pause_requested and not plan_run.refinement_instruction


@pytest.mark.parametrize("role", ROLES)
def test_share_link_shows_the_report_to_anyone(role, people, report_run, client_for):
    client = client_for(people[role])
    token = report_run.share_token
    evidence = report_run.evidence.first()
    urls = [
        reverse("research:run_shared", args=[token]),
        reverse("research:shared_markdown", args=[token]),
        reverse("research:shared_evidence", args=[token, evidence.pk]),
    ]
    for url in urls:
        assert client.get(url).status_code == 200, url
    page = client.get(urls[0]).content.decode()
    assert "Export Markdown" in page
    assert "Research further" not in page  # read-only: no controls


def test_share_link_pdf(report_run, client_for):
    response = client_for(None).get(reverse("research:shared_pdf", args=[report_run.share_token]))
    if pdf_unavailable_reason():
        assert response.status_code == 503
    else:
        assert response.status_code == 200
        assert response.content.startswith(b"%PDF")


@pytest.mark.parametrize("role", ROLES)
def test_wrong_share_token_is_not_found(role, people, report_run, client_for):
    client = client_for(people[role])
    token = report_run.share_token + "x"
    evidence = report_run.evidence.first()
    for url in (
        reverse("research:run_shared", args=[token]),
        reverse("research:shared_markdown", args=[token]),
        reverse("research:shared_pdf", args=[token]),
        reverse("research:shared_evidence", args=[token, evidence.pk]),
    ):
        assert client.get(url).status_code == 404, url


def test_share_token_does_not_open_the_workspace(report_run, client_for):
    client = client_for(None)
    client.get(reverse("research:run_shared", args=[report_run.share_token]))
    response = client.get(reverse("research:run_detail", args=[report_run.pk]))
    assert response.status_code == 302  # to the login page: the link grants the report only


def test_evidence_of_another_run_is_not_found(owner, report_run, client_for):
    other = completed_run(owner)
    foreign = other.evidence.first()
    client = client_for(owner)
    response = client.get(reverse("research:evidence_detail", args=[report_run.pk, foreign.pk]))
    assert response.status_code == 404
    token_url = reverse("research:shared_evidence", args=[report_run.share_token, foreign.pk])
    assert client.get(token_url).status_code == 404


def test_missing_run_and_forbidden_run_look_the_same(outsider, report_run, client_for):
    client = client_for(outsider)
    missing = client.get(
        reverse("research:run_detail", args=["00000000-0000-0000-0000-000000000000"])
    )
    forbidden = client.get(reverse("research:run_detail", args=[report_run.pk]))
    assert missing.status_code == forbidden.status_code == 404
    token = re.compile(rb"[A-Za-z0-9]{64}")  # CSRF tokens differ on every response
    assert token.sub(b"", missing.content) == token.sub(b"", forbidden.content)
