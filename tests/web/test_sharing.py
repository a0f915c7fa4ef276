"""Sharing: private, team or link; a share link is read-only, unguessable and revocable, and
removing a member takes their access away at once."""

from __future__ import annotations

from django.urls import reverse

from accounts.models import Membership
from accounts.services import membership_remove
from research.models import ResearchRun
from tests.web.factories import completed_run


def share(client, run, visibility, team=None, **headers):
    data = {"visibility": visibility, "team": str(team.pk) if team else ""}
    return client.post(reverse("research:run_sharing", args=[run.pk]), data, **headers)


def test_sharing_by_link_lets_anyone_read_the_report(owner, team, client_for, htmx_headers):
    run = completed_run(owner)
    response = share(client_for(owner), run, "link", team, **htmx_headers)
    run.refresh_from_db()
    assert run.visibility == "link" and len(run.share_token) >= 32
    link = reverse("research:run_shared", args=[run.share_token])
    assert f"http://testserver{link}" in response.content.decode()

    page = client_for(None).get(link).content.decode()
    assert "The European heat-pump market" in page
    assert "Shared research" in page
    evidence_url = reverse(
        "research:shared_evidence", args=[run.share_token, run.evidence.first().pk]
    )
    assert evidence_url in page  # citations open within the share link


def test_withdrawing_a_link_stops_it_and_sharing_again_makes_a_new_one(owner, team, client_for):
    run = completed_run(owner, team=team, visibility=ResearchRun.Visibility.LINK)
    old = run.share_token
    client = client_for(owner)
    share(client, run, "team", team)
    assert client_for(None).get(reverse("research:run_shared", args=[old])).status_code == 404
    share(client, run, "link", team)
    run.refresh_from_db()
    assert run.share_token and run.share_token != old
    assert client_for(None).get(reverse("research:run_shared", args=[old])).status_code == 404


def test_making_a_run_private_hides_it_from_the_team(owner, team, viewer, client_for):
    run = completed_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)
    url = reverse("research:run_detail", args=[run.pk])
    assert client_for(viewer).get(url).status_code == 200
    share(client_for(owner), run, "private")
    assert client_for(viewer).get(url).status_code == 404


def test_removing_a_member_revokes_access_immediately(owner, team, editor, client_for):
    run = completed_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)
    client = client_for(editor)
    url = reverse("research:run_report", args=[run.pk])
    assert client.get(url).status_code == 200
    membership_remove(membership=Membership.objects.get(team=team, user=editor))
    assert client.get(url).status_code == 404
    assert client.get(reverse("research:dashboard")).content.decode().count(str(run.pk)) == 0


def test_sharing_with_a_team_needs_a_team(owner, client_for, htmx_headers):
    run = completed_run(owner)
    response = share(client_for(owner), run, "team", **htmx_headers)
    assert response.status_code == 422
    assert "Choose the team to share this research with." in response.content.decode()
    run.refresh_from_db()
    assert run.visibility == "private"


def test_a_team_the_owner_is_not_in_is_refused(owner, outsider, client_for):
    from accounts.services import team_create

    foreign = team_create(name="Elsewhere", owner=outsider)
    run = completed_run(owner)
    response = share(client_for(owner), run, "team", foreign)
    assert response.status_code == 422
    assert "Choose a team the run" in response.content.decode()


def test_viewers_see_who_can_read_but_cannot_change_it(owner, team, viewer, client_for):
    run = completed_run(owner, team=team, visibility=ResearchRun.Visibility.LINK)
    page = client_for(viewer).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert (
        "Anyone with the link below can read the report, and the members of Lab can see "
        "the whole run." in page
    )
    assert "Update sharing" not in page and "Withdraw the link" not in page


def test_link_sharing_needs_no_team(owner, client_for):
    run = completed_run(owner)
    url = reverse("research:run_sharing", args=[run.pk])
    response = client_for(owner).post(url, {"visibility": "link", "team": ""})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.visibility == ResearchRun.Visibility.LINK and run.team is None and run.share_token
    page = client_for(owner).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    sentence = "Anyone with the link below can read the report; only alice can see the whole run."
    assert page.count(sentence) == 1
    assert "Who can see it" not in page
    # Withdrawing the link makes the run private again (there is no team to fall back to).
    client_for(owner).post(url, {"visibility": "private", "team": ""})
    run.refresh_from_db()
    assert run.visibility == ResearchRun.Visibility.PRIVATE and run.share_token is None
