"""Who may start research, and how much: per-user quotas answered with 429 and a sentence,
the team-run rule enforced by the service, and a request id the page did not make."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from research import services
from research.models import ResearchRun
from tests.web.factories import completed_run, make_run


def compose(client, **changes):
    data = {
        "question": "How large is the European heat-pump market?",
        "depth": "quick",
        "source_mode": "full_web",
        "visibility": "private",
        **changes,
    }
    return client.post(reverse("research:run_new"), data)


def test_runs_per_hour_are_limited_with_a_429_in_the_composer(owner, client_for, settings):
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 3
    for _ in range(3):
        make_run(owner, status=ResearchRun.Status.AWAITING_APPROVAL)
    response = compose(client_for(owner))
    page = response.content.decode()
    assert response.status_code == 429
    assert "You started 3 research runs in the last hour, the most this server allows" in page
    assert "you can start another in about 60 minutes" in page
    assert 'class="errors" role="alert"' in page  # shown in the form, with what was typed
    assert "How large is the European heat-pump market?</textarea>" in page
    assert ResearchRun.objects.filter(owner=owner).count() == 3


def test_the_hourly_quota_frees_up_as_runs_age(owner, client_for, settings):
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 2
    for _ in range(2):
        make_run(owner, status=ResearchRun.Status.COMPLETED)
    ResearchRun.objects.filter(owner=owner).update(created_at=timezone.now() - timedelta(hours=2))
    assert compose(client_for(owner)).status_code == 302


def test_the_hourly_quota_is_per_user(owner, outsider, client_for, settings):
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 1
    make_run(outsider)
    assert compose(client_for(owner)).status_code == 302


def test_plans_drafted_at_once_are_limited_with_a_429(owner, client_for, settings):
    settings.RESEARCH_MAX_PLANNING_RUNS_PER_USER = 2
    make_run(owner, status=ResearchRun.Status.CREATED)
    make_run(owner, status=ResearchRun.Status.PLANNING)
    make_run(owner, status=ResearchRun.Status.AWAITING_APPROVAL)  # drafted: does not count
    response = compose(client_for(owner))
    assert response.status_code == 429
    assert "2 of your research plans are still being drafted" in response.content.decode()
    assert ResearchRun.objects.filter(owner=owner).count() == 3


def test_the_service_raises_quota_exceeded(owner, settings):
    settings.RESEARCH_MAX_PLANNING_RUNS_PER_USER = 1
    services.run_create(owner=owner, question="First question?")
    with pytest.raises(services.QuotaExceeded, match="still being drafted"):
        services.run_create(owner=owner, question="Second question?")


def test_a_repeated_submission_is_not_counted_against_the_quota(owner, settings):
    settings.RESEARCH_MAX_PLANNING_RUNS_PER_USER = 1
    first = services.run_create(owner=owner, question="q?", client_request_id="same-id")
    again = services.run_create(owner=owner, question="q?", client_request_id="same-id")
    assert again.pk == first.pk


def test_follow_up_research_counts_against_the_hourly_quota(owner, client_for, settings):
    done = completed_run(owner)
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 1  # the completed run is that one
    client = client_for(owner)
    response = client.post(
        reverse("research:run_control", args=[done.pk, "refine"]),
        {"instruction": "Add the 2024 figures."},
    )
    assert response.status_code == 302
    assert ResearchRun.objects.filter(parent_run=done).count() == 0
    page = client.get(response["Location"]).content.decode()
    assert "You started 1 research run in the last hour" in page


def test_follow_up_over_the_quota_is_a_429_for_htmx(owner, client_for, settings, htmx_headers):
    done = completed_run(owner)
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 1
    response = client_for(owner).post(
        reverse("research:run_control", args=[done.pk, "refine"]),
        {"instruction": "Add the 2024 figures."},
        **htmx_headers,
    )
    assert response.status_code == 429
    assert "You started 1 research run in the last hour" in response.content.decode()


# --- the team-run rule ------------------------------------------------------------------


def test_a_viewer_cannot_create_team_research_through_the_service(viewer, team):
    with pytest.raises(services.RunActionError, match="Only the team's owners and editors"):
        services.run_create(owner=viewer, question="q?", team=team, visibility="team")
    assert not ResearchRun.objects.filter(owner=viewer).exists()


def test_an_editor_and_an_owner_may_create_team_research(owner, editor, team):
    for user in (owner, editor):
        run = services.run_create(owner=user, question="q?", team=team, visibility="team")
        assert run.team == team


def test_a_viewer_may_still_create_private_research(viewer):
    assert services.run_create(owner=viewer, question="q?").visibility == "private"


def test_the_composer_offers_only_teams_the_service_accepts(viewer, editor, team, client_for):
    assert team.name not in _team_options(client_for(viewer))
    assert team.name in _team_options(client_for(editor))
    response = compose(client_for(viewer), team=str(team.pk), visibility="team")
    assert response.status_code == 422
    assert not ResearchRun.objects.filter(owner=viewer).exists()


def _team_options(client) -> str:
    page = client.get(reverse("research:run_new")).content.decode()
    return page[page.index('<select id="id_team"') : page.index("</select>", page.index("id_team"))]


def test_a_viewer_cannot_share_their_own_run_with_the_team(viewer, team):
    run = services.run_create(owner=viewer, question="q?")
    with pytest.raises(services.RunActionError, match="not an owner or editor of that team"):
        services.sharing_update(run=run, visibility="team", team=team)


def test_a_viewers_follow_up_of_a_team_run_stays_private(owner, viewer, team):
    done = completed_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)
    # A viewer cannot control the run; an owner who was demoted to viewer still can.
    done.owner = viewer
    done.save(update_fields=["owner"])
    child = services.run_refine(run=done, instruction="Add the 2024 figures.", user=viewer)
    assert child.visibility == ResearchRun.Visibility.PRIVATE and child.team is None


# --- the request id ---------------------------------------------------------------------


def test_an_over_long_request_id_is_refused_with_a_visible_sentence(owner, client_for):
    response = compose(client_for(owner), client_request_id="x" * 65)
    page = response.content.decode()
    assert response.status_code == 422
    sentence = "request id is not one this page made; reload the page and submit your question"
    assert sentence in page
    errors = page[page.index('class="errors"') : page.index("</ul>", page.index('class="errors"'))]
    assert sentence in errors
    assert not ResearchRun.objects.exists()


def test_the_service_refuses_an_over_long_request_id(owner):
    with pytest.raises(services.RunActionError, match="request id"):
        services.run_create(owner=owner, question="q?", client_request_id="x" * 65)
