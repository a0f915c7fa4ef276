import pytest
from django.contrib.auth.models import AnonymousUser
from django.http import Http404

from research.access import can_control_run, can_edit_run, can_view_run
from research.selectors import run_get_by_share_token, run_get_for_user, runs_visible_to
from tests.conftest import make_run


def test_owner_may_view_edit_and_control_private_run(owner, private_run):
    assert can_view_run(owner, private_run)
    assert can_edit_run(owner, private_run)
    assert can_control_run(owner, private_run)


def test_team_member_may_not_view_private_run(editor, viewer, private_run):
    for user in (editor, viewer):
        assert not can_view_run(user, private_run)
        with pytest.raises(Http404):
            run_get_for_user(user, private_run.pk)


def test_viewer_may_view_but_not_control_team_run(viewer, team_run):
    assert can_view_run(viewer, team_run)
    assert not can_edit_run(viewer, team_run)
    assert not can_control_run(viewer, team_run)
    assert run_get_for_user(viewer, team_run.pk) == team_run
    with pytest.raises(Http404):
        run_get_for_user(viewer, team_run.pk, need="control")


def test_editor_may_edit_and_control_team_run(editor, team_run):
    assert can_view_run(editor, team_run)
    assert can_edit_run(editor, team_run)
    assert can_control_run(editor, team_run)


def test_non_member_may_not_view_private_or_team_run(outsider, private_run, team_run):
    for run in (private_run, team_run):
        assert not can_view_run(outsider, run)
        assert not can_control_run(outsider, run)
        with pytest.raises(Http404):
            run_get_for_user(outsider, run.pk)


def test_share_token_grants_read_only_view(outsider, link_run):
    token = link_run.share_token
    assert can_view_run(outsider, link_run, share_token=token)
    assert can_view_run(AnonymousUser(), link_run, share_token=token)
    assert not can_edit_run(outsider, link_run)
    assert not can_control_run(outsider, link_run)
    assert run_get_by_share_token(token) == link_run


def test_wrong_or_withdrawn_share_token_grants_nothing(outsider, link_run):
    token = link_run.share_token
    assert not can_view_run(outsider, link_run, share_token=token + "x")
    link_run.visibility = "team"
    link_run.save()
    assert not can_view_run(outsider, link_run, share_token=token)
    with pytest.raises(Http404):
        run_get_by_share_token(token)


def test_share_token_of_a_team_run_is_ignored(outsider, team_run):
    team_run.share_token = "leftover-token"
    team_run.save()
    assert not can_view_run(outsider, team_run, share_token="leftover-token")


def test_inactive_owner_loses_access(owner, private_run):
    owner.is_active = False
    owner.save()
    assert not can_view_run(owner, private_run)


def test_runs_visible_to_lists_own_and_shared_team_runs(owner, viewer, outsider, team):
    mine = make_run(owner)
    shared = make_run(owner, team=team, visibility="team")
    private_of_team_owner = make_run(owner, team=team, visibility="private")
    outsider_run = make_run(outsider)
    assert set(runs_visible_to(owner)) == {mine, shared, private_of_team_owner}
    assert set(runs_visible_to(viewer)) == {shared}
    assert set(runs_visible_to(outsider)) == {outsider_run}
    assert list(runs_visible_to(AnonymousUser())) == []


def test_malformed_run_id_is_a_404(owner):
    with pytest.raises(Http404):
        run_get_for_user(owner, "not-a-uuid")
