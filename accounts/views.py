from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from accounts import services
from accounts.forms import ApiTokenForm, InvitationForm, RoleForm, SignupForm, TeamForm
from accounts.models import ApiToken, Invitation, Membership, Team, User


class LoginView(auth_views.LoginView):
    """Django's login, telling a first-time visitor of the embedded default that a demo
    account exists and where its password was shown (never the password itself)."""

    template_name = "accounts/login.html"
    redirect_authenticated_user = True

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        demo = settings.DEMO_USERNAME
        if settings.EMBEDDED_MODE and User.objects.filter(username=demo, is_active=True).exists():
            context["demo_username"] = demo
            context["demo_password_from_env"] = bool(settings.DEMO_PASSWORD)
        return context


def _get_team_for_member(request: HttpRequest, slug: str, *, owner: bool = False) -> Team:
    """The team if the user belongs to it (as owner when ``owner``), else 404."""
    membership = (
        Membership.objects.select_related("team")
        .filter(team__slug=slug, user_id=request.user.pk)
        .first()
    )
    if membership is None or (owner and membership.role != Membership.Role.OWNER):
        raise Http404("No such team.")
    return membership.team


@login_required
def team_list(request: HttpRequest) -> HttpResponse:
    memberships = (
        Membership.objects.filter(user=request.user).select_related("team").order_by("team__name")
    )
    form = TeamForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        team = services.team_create(name=form.cleaned_data["name"], owner=request.user)
        messages.success(request, f"Team “{team.name}” created. You are its owner.")
        return redirect("accounts:team_detail", slug=team.slug)
    return render(request, "accounts/team_list.html", {"memberships": memberships, "form": form})


@login_required
def team_detail(request: HttpRequest, slug: str) -> HttpResponse:
    team = _get_team_for_member(request, slug)
    my_role = team.memberships.get(user=request.user).role
    is_owner = my_role == Membership.Role.OWNER
    context = {
        "team": team,
        "my_role": my_role,
        "is_owner": is_owner,
        "memberships": team.memberships.select_related("user").order_by("user__username"),
        "invitations": team.invitations.filter(accepted_at__isnull=True, revoked_at__isnull=True)
        if is_owner
        else [],
        "invitation_form": InvitationForm(),
        "role_form": RoleForm(),
        "new_invitation_url": request.session.pop("new_invitation_url", None),
    }
    return render(request, "accounts/team_detail.html", context)


@login_required
@require_POST
def invitation_create(request: HttpRequest, slug: str) -> HttpResponse:
    team = _get_team_for_member(request, slug, owner=True)
    form = InvitationForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Choose a role for the invitation: owner, editor or viewer.")
        return redirect("accounts:team_detail", slug=team.slug)
    _, token = services.invitation_create(
        team=team, role=form.cleaned_data["role"], created_by=request.user
    )
    # The raw token is shown once, on the next page, and never stored.
    request.session["new_invitation_url"] = request.build_absolute_uri(
        reverse("accounts:invitation_accept", args=[token])
    )
    return redirect("accounts:team_detail", slug=team.slug)


@login_required
@require_POST
def invitation_revoke(request: HttpRequest, slug: str, invitation_id: int) -> HttpResponse:
    team = _get_team_for_member(request, slug, owner=True)
    invitation = get_object_or_404(Invitation, pk=invitation_id, team=team)
    services.invitation_revoke(invitation=invitation)
    messages.success(request, "Invitation withdrawn; its link no longer works.")
    return redirect("accounts:team_detail", slug=team.slug)


@login_required
@require_POST
def membership_update(request: HttpRequest, slug: str, membership_id: int) -> HttpResponse:
    team = _get_team_for_member(request, slug, owner=True)
    membership = get_object_or_404(Membership, pk=membership_id, team=team)
    try:
        if request.POST.get("action") == "remove":
            services.membership_remove(membership=membership)
            messages.success(request, f"{membership.user} was removed from the team.")
        else:
            form = RoleForm(request.POST)
            if not form.is_valid():
                raise services.TeamError("Choose a role: owner, editor or viewer.")
            services.membership_set_role(membership=membership, role=form.cleaned_data["role"])
            messages.success(request, f"{membership.user} is now {membership.role}.")
    except services.TeamError as exc:
        messages.error(request, str(exc))
    return redirect("accounts:team_detail", slug=team.slug)


def invitation_accept(request: HttpRequest, token: str) -> HttpResponse:
    try:
        invitation = services.invitation_get_usable(token)
    except services.TeamError as exc:
        return render(request, "accounts/invitation_invalid.html", {"reason": str(exc)}, status=404)

    signup_form = None
    if request.user.is_authenticated:
        if request.method == "POST":
            try:
                services.invitation_accept(token=token, user=request.user)
            except services.TeamError as exc:
                messages.error(request, str(exc))
                return redirect("research:dashboard")
            messages.success(request, f"You joined “{invitation.team.name}”.")
            return redirect("accounts:team_detail", slug=invitation.team.slug)
    else:
        signup_form = SignupForm(request.POST or None)
        if request.method == "POST" and signup_form.is_valid():
            try:
                with transaction.atomic():
                    user = signup_form.save()
                    services.invitation_accept(token=token, user=user)
            except services.TeamError as exc:
                return render(
                    request, "accounts/invitation_invalid.html", {"reason": str(exc)}, status=404
                )
            login(request, user, backend="django.contrib.auth.backends.ModelBackend")
            messages.success(request, f"Welcome! You joined “{invitation.team.name}”.")
            return redirect("accounts:team_detail", slug=invitation.team.slug)
    return render(
        request,
        "accounts/invitation_accept.html",
        {"invitation": invitation, "signup_form": signup_form, "token": token},
    )


@login_required
def api_tokens(request: HttpRequest) -> HttpResponse:
    """Personal API tokens: create one (its secret is shown on this answer only), list them
    with when each was last used, and revoke them."""
    form = ApiTokenForm(request.POST or None, user=request.user)
    secret = ""
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                token, secret = services.api_token_create(
                    user=request.user,
                    name=form.cleaned_data["name"],
                    read_only=form.cleaned_data["read_only"],
                    team=form.cleaned_data["team"],
                )
            except services.TeamError as exc:
                form.add_error(None, str(exc))
                status = 422
            else:
                form = ApiTokenForm(user=request.user)
        else:
            status = 422
    tokens = ApiToken.objects.filter(user=request.user).select_related("team")
    context = {"form": form, "tokens": tokens, "new_secret": secret}
    response = render(request, "accounts/api_tokens.html", context, status=status)
    if secret:
        response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def api_token_revoke(request: HttpRequest, token_id: int) -> HttpResponse:
    try:
        token = services.api_token_revoke(user=request.user, token_id=token_id)
    except services.TeamError:
        raise Http404("No such token.") from None
    messages.success(request, f"Token “{token.name}” revoked; it no longer works.")
    return redirect("accounts:api_tokens")
