"""Who may see and do what with a research run — the one place that decides.

Rules:
* Anyone signed in may start research of their own; a run for a team (shared with it) may be
  started only by the team's owners and editors (``teams_for_new_runs``).
* The owner of a run may view, edit and control it.
* A run shared with a team (visibility ``team`` or ``link``) may be viewed by every
  member of that team; editors and owners of the team may also edit its plan and
  control it (pause, resume, cancel, refine, retry, budget).
* A run with visibility ``link`` may be viewed read-only by anyone holding its
  share token, signed in or not.
* Nobody else sees it; views answer 404 so a run's existence is not revealed.

Libraries follow the same roles:
* A personal library belongs to its owner alone, who may do everything with it.
* A team library may be searched and read (and used in research) by every member of the
  team; editors and owners may upload and delete documents; owners may delete the library.
* Nobody else learns that a library or its documents exist (404).

The reads that apply these rules (lists of visible runs, one run for a user or a share
link) are in ``research.selectors``.
"""

from __future__ import annotations

import secrets
from typing import Literal

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q, QuerySet

from accounts.models import Membership, Team, User
from research.models import Library, ResearchRun

Need = Literal["view", "edit", "control"]
# Visibilities that share a run with its team.
SHARED_VISIBILITIES = (ResearchRun.Visibility.TEAM, ResearchRun.Visibility.LINK)
_MAY_EDIT = (Membership.Role.OWNER, Membership.Role.EDITOR)


def teams_for_new_runs(user: User | AnonymousUser) -> QuerySet[Team]:
    """Teams ``user`` may create research for (or share their research with): those where
    they are an owner or an editor. Viewers read a team's research; they do not add to it."""
    if not user.is_authenticated or not user.is_active:
        return Team.objects.none()
    return Team.objects.filter(memberships__user_id=user.pk, memberships__role__in=_MAY_EDIT)


def can_create_team_run(user: User | AnonymousUser, team: Team) -> bool:
    """Whether ``user`` may create a run for ``team`` (see ``teams_for_new_runs``)."""
    return teams_for_new_runs(user).filter(pk=team.pk).exists()


def _team_role(user: User | AnonymousUser, run: ResearchRun) -> str | None:
    if (
        not user.is_authenticated
        or run.team_id is None
        or run.visibility not in SHARED_VISIBILITIES
    ):
        return None
    return (
        Membership.objects.filter(team_id=run.team_id, user_id=user.pk)
        .values_list("role", flat=True)
        .first()
    )


def _is_owner(user: User | AnonymousUser, run: ResearchRun) -> bool:
    return user.is_authenticated and user.is_active and run.owner_id == user.pk


def share_token_matches(run: ResearchRun, share_token: str | None) -> bool:
    return bool(
        share_token
        and run.visibility == ResearchRun.Visibility.LINK
        and run.share_token
        and secrets.compare_digest(run.share_token, share_token)
    )


def can_view_run(
    user: User | AnonymousUser, run: ResearchRun, *, share_token: str | None = None
) -> bool:
    if _is_owner(user, run) or share_token_matches(run, share_token):
        return True
    return user.is_active and _team_role(user, run) is not None


def can_edit_run(user: User | AnonymousUser, run: ResearchRun) -> bool:
    """May change the plan, its sharing and its budget."""
    if _is_owner(user, run):
        return True
    return user.is_active and _team_role(user, run) in _MAY_EDIT


def can_control_run(user: User | AnonymousUser, run: ResearchRun) -> bool:
    """May pause, resume, cancel, refine or retry the run."""
    return can_edit_run(user, run)


def _library_role(user: User | AnonymousUser, library: Library) -> str | None:
    if not user.is_authenticated or not user.is_active:
        return None
    if library.owner_id is not None:
        return Membership.Role.OWNER if library.owner_id == user.pk else None
    return (
        Membership.objects.filter(team_id=library.team_id, user_id=user.pk)
        .values_list("role", flat=True)
        .first()
    )


def libraries_for_user(user: User | AnonymousUser) -> QuerySet[Library]:
    """Every library ``user`` may see: their own and their teams'."""
    if not user.is_authenticated or not user.is_active:
        return Library.objects.none()
    return Library.objects.filter(Q(owner_id=user.pk) | Q(team__memberships__user_id=user.pk))


def can_view_library(user: User | AnonymousUser, library: Library) -> bool:
    """May list, read and search its documents, and use them in research."""
    return _library_role(user, library) is not None


def can_edit_library(user: User | AnonymousUser, library: Library) -> bool:
    """May upload documents to it and delete them."""
    return _library_role(user, library) in _MAY_EDIT


def can_delete_library(user: User | AnonymousUser, library: Library) -> bool:
    """May delete the library with all its documents."""
    return _library_role(user, library) == Membership.Role.OWNER
