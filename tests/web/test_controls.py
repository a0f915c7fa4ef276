"""Run controls: shown only when legal and permitted; refused with a message otherwise."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from research.models import ResearchRun
from tests.web.factories import awaiting_run, completed_run, make_run

BUTTONS = {
    "pause": ">Pause<",
    "resume": ">Resume<",
    "cancel": ">Cancel research<",
    "retry": ">Retry ",
    "budget": "Increase the budget",
    "refine": ">Refine the research<",
    "further": ">Research further<",
}


def controls_html(client, run: ResearchRun) -> str:
    html = client.get(reverse("research:run_detail", args=[run.pk])).content.decode()
    return re.search(r'<section id="run-controls".*?</section>', html, re.S).group(0)


@pytest.mark.parametrize(
    ("status", "shown"),
    [
        ("planning", {"pause", "cancel"}),
        ("awaiting_approval", {"cancel", "refine"}),
        ("queued", {"pause", "cancel"}),
        ("researching", {"pause", "cancel", "refine"}),
        ("synthesizing", {"pause", "cancel"}),
        ("paused", {"resume", "cancel", "refine"}),
        # Runs that ended (failed, partial report) are not offered Cancel.
        ("failed", {"retry"}),
        ("budget_exhausted", {"budget"}),
        ("completed", {"further"}),
        ("cancelled", set()),
    ],
)
def test_controls_shown_are_the_legal_ones(owner, client_for, status, shown):
    run = make_run(
        owner, status=status, resume_phase="researching" if status in ("failed", "paused") else ""
    )
    html = controls_html(client_for(owner), run)
    for name, marker in BUTTONS.items():
        assert (marker in html) == (name in shown), (status, name)


def test_team_viewer_gets_no_controls(owner, team, viewer, client_for):
    run = make_run(owner, status="researching", team=team, visibility="team")
    html = controls_html(client_for(viewer), run)
    assert not any(marker in html for marker in BUTTONS.values())
    assert controls_html(client_for(owner), run).count("<form") >= 2


def test_illegal_control_is_refused_with_a_message(owner, client_for, htmx_headers):
    run = make_run(owner, status="researching")
    client = client_for(owner)
    url = reverse("research:run_control", args=[run.pk, "resume"])
    response = client.post(url, **htmx_headers)
    assert response.status_code == 409
    assert "A run that is researching cannot be resumed." in response.content.decode()
    # Without JavaScript the same refusal arrives as a message on the run page.
    response = client.post(url, follow=True)
    assert "A run that is researching cannot be resumed." in response.content.decode()
    run.refresh_from_db()
    assert run.status == "researching"


def test_pausing_an_idle_run_pauses_it(owner, client_for, htmx_headers):
    run = awaiting_run(owner)
    response = client_for(owner).post(
        reverse("research:run_control", args=[run.pk, "pause"]), **htmx_headers
    )
    page = response.content.decode()
    assert response.status_code == 200 and "Paused." in page
    assert ">Resume<" in page  # the refreshed controls
    run.refresh_from_db()
    assert run.status == "paused" and run.resume_phase == "awaiting_approval"


def test_pausing_a_run_a_worker_holds_asks_it_to_pause(owner, client_for, htmx_headers):
    from django.utils import timezone

    run = make_run(
        owner,
        status="researching",
        lease_owner="worker-1",
        lease_expires_at=timezone.now() + timezone.timedelta(minutes=1),
    )
    response = client_for(owner).post(
        reverse("research:run_control", args=[run.pk, "pause"]), **htmx_headers
    )
    page = response.content.decode()
    assert "the run pauses when its current step finishes" in page
    run.refresh_from_db()
    assert run.status == "researching" and run.pause_requested


def test_cancel_resume_retry_and_budget(owner, client_for):
    client = client_for(owner)
    cases = [
        (awaiting_run(owner), "cancel", "cancelled"),
        (make_run(owner, status="paused", resume_phase="researching"), "resume", "queued"),
        (make_run(owner, status="failed", resume_phase="synthesizing"), "retry", "synthesizing"),
        (make_run(owner, status="budget_exhausted"), "budget", "queued"),
    ]
    for run, action, expected in cases:
        response = client.post(reverse("research:run_control", args=[run.pk, action]))
        assert response.status_code == 302
        run.refresh_from_db()
        assert run.status == expected, action


def test_budget_increase_grows_the_limits(owner, client_for):
    run = make_run(owner, status="budget_exhausted")
    before = run.budget["searches"]
    client_for(owner).post(reverse("research:run_control", args=[run.pk, "budget"]))
    run.refresh_from_db()
    assert run.budget["searches"] > before


def test_refining_needs_an_instruction(owner, client_for, htmx_headers):
    run = make_run(owner, status="paused", resume_phase="researching")
    response = client_for(owner).post(
        reverse("research:run_control", args=[run.pk, "refine"]),
        {"instruction": " "},
        **htmx_headers,
    )
    assert response.status_code == 409
    assert "Say how the research should change." in response.content.decode()


def test_refining_a_paused_run_records_the_instruction(owner, client_for):
    run = make_run(owner, status="paused", resume_phase="researching")
    client_for(owner).post(
        reverse("research:run_control", args=[run.pk, "refine"]),
        {"instruction": "Only look at Germany."},
    )
    run.refresh_from_db()
    assert run.refinement_instruction == "Only look at Germany."


def test_research_further_starts_a_linked_run(owner, client_for, htmx_headers):
    run = completed_run(owner)
    client = client_for(owner)
    response = client.post(
        reverse("research:run_control", args=[run.pk, "refine"]),
        {"instruction": "Now compare with heat pumps in Japan."},
        **htmx_headers,
    )
    child = ResearchRun.objects.get(parent_run=run)
    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("research:run_detail", args=[child.pk])
    assert child.refinement_instruction == "Now compare with heat pumps in Japan."
    run.refresh_from_db()
    assert run.status == "completed" and run.report  # the original report is untouched
    child_page = client.get(reverse("research:run_detail", args=[child.pk])).content.decode()
    assert "builds on" in child_page
    parent_page = client.get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert "Further research based on this run" in parent_page


def test_unknown_control_is_not_found(owner, client_for):
    run = awaiting_run(owner)
    response = client_for(owner).post(reverse("research:run_control", args=[run.pk, "explode"]))
    assert response.status_code == 404


def test_controls_need_post(owner, client_for):
    run = awaiting_run(owner)
    response = client_for(owner).get(reverse("research:run_control", args=[run.pk, "cancel"]))
    assert response.status_code == 405
    run.refresh_from_db()
    assert run.status == "awaiting_approval"


def test_htmx_control_requests_need_the_csrf_token(owner, client_for, htmx_headers):
    run = awaiting_run(owner)
    client = client_for(owner, enforce_csrf_checks=True)
    url = reverse("research:run_control", args=[run.pk, "cancel"])
    assert client.post(url, **htmx_headers).status_code == 403
    page = client.get(reverse("research:run_detail", args=[run.pk])).content.decode()
    token = re.search(r'"X-CSRFToken": "([^"]+)"', page).group(1)
    response = client.post(url, HTTP_X_CSRFTOKEN=token, **htmx_headers)
    assert response.status_code == 200
    run.refresh_from_db()
    assert run.status == "cancelled"
