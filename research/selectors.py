"""Permission-aware reads of research runs: what a person may see, or a 404.

The rules are ``research.access``; these reads apply them, so pages, the WebSocket and the
API look runs up the same way and answer 404 for a run someone may not see.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet
from django.http import Http404

from accounts.models import Membership, User
from research.access import (
    SHARED_VISIBILITIES,
    Need,
    can_control_run,
    can_edit_run,
    can_view_run,
    share_token_matches,
)
from research.models import ResearchRun


def runs_visible_to(user: User | AnonymousUser) -> QuerySet[ResearchRun]:
    """Every run the user may view, for lists and searches."""
    if not user.is_authenticated or not user.is_active:
        return ResearchRun.objects.none()
    team_ids = Membership.objects.filter(user_id=user.pk).values("team_id")
    return ResearchRun.objects.filter(
        Q(owner_id=user.pk) | Q(visibility__in=SHARED_VISIBILITIES, team_id__in=team_ids)
    )


_CHECKS = {"view": can_view_run, "edit": can_edit_run, "control": can_control_run}


def run_get_for_user(
    user: User | AnonymousUser, run_id: object, *, need: Need = "view"
) -> ResearchRun:
    """Return the run if ``user`` may do ``need`` with it, else raise Http404."""
    try:
        run = ResearchRun.objects.select_related("owner", "team").get(pk=run_id)
    except (ResearchRun.DoesNotExist, ValidationError, ValueError, TypeError):
        raise Http404("No such research run.") from None
    if not _CHECKS[need](user, run):
        raise Http404("No such research run.")
    return run


def run_get_by_share_token(share_token: str) -> ResearchRun:
    """Return the run a share link points at (read-only view), else raise Http404."""
    run = (
        ResearchRun.objects.select_related("owner", "team")
        .filter(share_token=share_token, visibility=ResearchRun.Visibility.LINK)
        .first()
    )
    if run is None or not share_token_matches(run, share_token):
        raise Http404("This share link is not valid.")
    return run
