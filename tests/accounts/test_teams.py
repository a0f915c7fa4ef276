from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from accounts import services
from accounts.models import Invitation, Membership, User
from tests.conftest import PASSWORD


def test_creating_a_team_makes_the_creator_its_owner(owner):
    team = services.team_create(name="Climate desk", owner=owner)
    assert team.memberships.get(user=owner).role == Membership.Role.OWNER


def test_team_names_get_unique_slugs(owner):
    first = services.team_create(name="Lab", owner=owner)
    second = services.team_create(name="Lab", owner=owner)
    assert first.slug != second.slug


def test_invitation_adds_member_with_its_role_and_works_once(team, owner, outsider):
    _, token = services.invitation_create(team=team, role="editor", created_by=owner)
    membership = services.invitation_accept(token=token, user=outsider)
    assert membership.role == Membership.Role.EDITOR
    second = User.objects.create_user("late", password=PASSWORD)
    with pytest.raises(services.TeamError, match="already been used"):
        services.invitation_accept(token=token, user=second)
    assert not Membership.objects.filter(user=second).exists()


def test_expired_invitation_is_refused(team, owner, outsider):
    invitation, token = services.invitation_create(team=team, role="viewer", created_by=owner)
    Invitation.objects.filter(pk=invitation.pk).update(
        expires_at=timezone.now() - timedelta(seconds=1)
    )
    with pytest.raises(services.TeamError, match="expired"):
        services.invitation_accept(token=token, user=outsider)


def test_revoked_invitation_is_refused(team, owner, outsider):
    invitation, token = services.invitation_create(team=team, role="viewer", created_by=owner)
    services.invitation_revoke(invitation=invitation)
    with pytest.raises(services.TeamError, match="withdrawn"):
        services.invitation_accept(token=token, user=outsider)


def test_only_the_token_hash_is_stored(team, owner):
    invitation, token = services.invitation_create(team=team, role="viewer", created_by=owner)
    assert token not in invitation.token_hash
    assert len(invitation.token_hash) == 64


def test_accepting_never_lowers_an_existing_role(team, owner, editor):
    _, token = services.invitation_create(team=team, role="viewer", created_by=owner)
    assert services.invitation_accept(token=token, user=editor).role == Membership.Role.EDITOR


def test_last_owner_cannot_be_demoted_or_removed(team, owner):
    membership = team.memberships.get(user=owner)
    with pytest.raises(services.TeamError, match="at least one owner"):
        services.membership_set_role(membership=membership, role="viewer")
    with pytest.raises(services.TeamError, match="at least one owner"):
        services.membership_remove(membership=membership)


def test_owner_creates_invitation_link_shown_once(client, team, owner):
    client.force_login(owner)
    response = client.post(
        reverse("accounts:invitation_create", args=[team.slug]), {"role": "editor"}
    )
    assert response.status_code == 302
    page = client.get(reverse("accounts:team_detail", args=[team.slug]))
    url = page.context["new_invitation_url"]
    assert "/accounts/invitations/" in url
    again = client.get(reverse("accounts:team_detail", args=[team.slug]))
    assert again.context["new_invitation_url"] is None


@pytest.mark.parametrize("who", ["viewer", "editor", "outsider"])
def test_only_owners_create_invitations(client, team, request, who):
    client.force_login(request.getfixturevalue(who))
    response = client.post(
        reverse("accounts:invitation_create", args=[team.slug]), {"role": "owner"}
    )
    assert response.status_code == 404
    assert not Invitation.objects.exists()


def test_outsider_cannot_see_team_page(client, team, outsider):
    client.force_login(outsider)
    assert client.get(reverse("accounts:team_detail", args=[team.slug])).status_code == 404


def test_new_person_signs_up_through_an_invitation(client, team, owner):
    _, token = services.invitation_create(team=team, role="viewer", created_by=owner)
    url = reverse("accounts:invitation_accept", args=[token])
    assert client.get(url).status_code == 200
    response = client.post(
        url,
        {
            "username": "newbie",
            "password1": "a-long-unusual-pass-1",
            "password2": "a-long-unusual-pass-1",
        },
    )
    assert response.status_code == 302
    newbie = User.objects.get(username="newbie")
    assert team.memberships.get(user=newbie).role == Membership.Role.VIEWER
    assert client.get(reverse("research:dashboard")).status_code == 200


def test_invalid_invitation_link_says_why(client, db):
    response = client.get(reverse("accounts:invitation_accept", args=["nope"]))
    assert response.status_code == 404
    assert "not valid" in response.content.decode()


def test_signed_in_user_joins_by_posting(client, team, owner, outsider):
    _, token = services.invitation_create(team=team, role="editor", created_by=owner)
    client.force_login(outsider)
    response = client.post(reverse("accounts:invitation_accept", args=[token]))
    assert response.status_code == 302
    assert team.memberships.get(user=outsider).role == Membership.Role.EDITOR


def test_owner_changes_a_role(client, team, owner, viewer):
    client.force_login(owner)
    membership = team.memberships.get(user=viewer)
    client.post(
        reverse("accounts:membership_update", args=[team.slug, membership.pk]),
        {"role": "editor", "action": "role"},
    )
    membership.refresh_from_db()
    assert membership.role == Membership.Role.EDITOR


def test_editor_cannot_change_roles(client, team, editor, viewer):
    client.force_login(editor)
    membership = team.memberships.get(user=viewer)
    response = client.post(
        reverse("accounts:membership_update", args=[team.slug, membership.pk]),
        {"role": "owner", "action": "role"},
    )
    assert response.status_code == 404
    membership.refresh_from_db()
    assert membership.role == Membership.Role.VIEWER
