"""Writes for accounts and teams: keyword-only functions, one per action."""

from __future__ import annotations

import secrets
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from accounts.models import (
    ApiToken,
    Invitation,
    Membership,
    Team,
    User,
    hash_api_token,
    hash_invitation_token,
)

INVITATION_LIFETIME = timedelta(days=7)


class TeamError(Exception):
    """A team action that cannot be done; the message is shown to the user."""


def team_create(*, name: str, owner: User) -> Team:
    name = name.strip()
    if not name:
        raise TeamError("A team needs a name.")
    base = slugify(name)[:100] or "team"
    with transaction.atomic():
        slug = base
        suffix = 1
        while Team.objects.filter(slug=slug).exists():
            suffix += 1
            slug = f"{base}-{suffix}"
        team = Team.objects.create(name=name, slug=slug, created_by=owner)
        Membership.objects.create(team=team, user=owner, role=Membership.Role.OWNER)
    return team


def invitation_create(
    *, team: Team, role: str, created_by: User, lifetime: timedelta = INVITATION_LIFETIME
) -> tuple[Invitation, str]:
    """Create an invitation and return it with the raw token (shown once, never stored)."""
    if role not in Membership.Role.values:
        raise TeamError(f"{role!r} is not a team role; choose owner, editor or viewer.")
    token = secrets.token_urlsafe(32)
    invitation = Invitation.objects.create(
        team=team,
        role=role,
        token_hash=hash_invitation_token(token),
        created_by=created_by,
        expires_at=timezone.now() + lifetime,
    )
    return invitation, token


def invitation_get_usable(token: str) -> Invitation:
    invitation = (
        Invitation.objects.select_related("team")
        .filter(token_hash=hash_invitation_token(token))
        .first()
    )
    if invitation is None:
        raise TeamError("This invitation link is not valid.")
    if invitation.revoked_at is not None:
        raise TeamError("This invitation was withdrawn by a team owner.")
    if invitation.accepted_at is not None:
        raise TeamError("This invitation has already been used.")
    if invitation.expires_at <= timezone.now():
        raise TeamError("This invitation has expired; ask a team owner for a new link.")
    return invitation


@transaction.atomic
def invitation_accept(*, token: str, user: User) -> Membership:
    """Use an invitation once: the conditional UPDATE makes a second use fail."""
    invitation = invitation_get_usable(token)
    now = timezone.now()
    claimed = Invitation.objects.filter(
        pk=invitation.pk, accepted_at__isnull=True, revoked_at__isnull=True, expires_at__gt=now
    ).update(accepted_at=now, accepted_by=user)
    if claimed != 1:
        raise TeamError("This invitation has already been used.")
    existing = Membership.objects.filter(team=invitation.team, user=user).first()
    if existing is not None:
        # Joining again never lowers a role someone already has.
        rank = {Membership.Role.VIEWER: 0, Membership.Role.EDITOR: 1, Membership.Role.OWNER: 2}
        if rank[invitation.role] > rank[existing.role]:
            existing.role = invitation.role
            existing.save(update_fields=["role"])
        return existing
    try:
        with transaction.atomic():
            return Membership.objects.create(team=invitation.team, user=user, role=invitation.role)
    except IntegrityError:
        return Membership.objects.get(team=invitation.team, user=user)


def invitation_revoke(*, invitation: Invitation) -> None:
    Invitation.objects.filter(pk=invitation.pk, accepted_at__isnull=True).update(
        revoked_at=timezone.now()
    )


@transaction.atomic
def membership_set_role(*, membership: Membership, role: str) -> Membership:
    if role not in Membership.Role.values:
        raise TeamError(f"{role!r} is not a team role; choose owner, editor or viewer.")
    team_owners = Membership.objects.select_for_update().filter(
        team=membership.team, role=Membership.Role.OWNER
    )
    demoting_owner = membership.role == Membership.Role.OWNER and role != Membership.Role.OWNER
    if demoting_owner and team_owners.count() <= 1:
        raise TeamError("A team needs at least one owner; make someone else owner first.")
    membership.role = role
    membership.save(update_fields=["role"])
    return membership


@transaction.atomic
def membership_remove(*, membership: Membership) -> None:
    if membership.role == Membership.Role.OWNER:
        owners = Membership.objects.select_for_update().filter(
            team=membership.team, role=Membership.Role.OWNER
        )
        if owners.count() <= 1:
            raise TeamError("A team needs at least one owner; make someone else owner first.")
    membership.delete()


API_TOKEN_PREFIX = "drt_"  # noqa: S105 (not a secret: marks our tokens in logs and scanners)
API_TOKEN_NAME_MAX_CHARS = 100


def api_token_create(
    *, user: User, name: str, read_only: bool = False, team: Team | None = None
) -> tuple[ApiToken, str]:
    """Create a personal API token; returns the row and the token itself, which is shown
    once and never stored (only its SHA-256 is)."""
    name = name.strip()
    if not name:
        raise TeamError("Give the token a name, so you can tell it apart later.")
    if len(name) > API_TOKEN_NAME_MAX_CHARS:
        raise TeamError(f"Keep the token's name under {API_TOKEN_NAME_MAX_CHARS} characters.")
    if team is not None and not Membership.objects.filter(team=team, user=user).exists():
        raise TeamError("A token can only be limited to a team you belong to.")
    secret = API_TOKEN_PREFIX + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=name,
        prefix=secret[: len(API_TOKEN_PREFIX) + 6],
        token_hash=hash_api_token(secret),
        read_only=read_only,
        team=team,
    )
    return token, secret


def api_token_revoke(*, user: User, token_id: int) -> ApiToken:
    """Revoke one of ``user``'s tokens; it is refused from the next request on."""
    token = ApiToken.objects.filter(user=user, pk=token_id).first()
    if token is None:
        raise TeamError("No such token.")
    if token.revoked_at is None:
        ApiToken.objects.filter(pk=token.pk).update(revoked_at=timezone.now())
        token.refresh_from_db()
    return token
