from django.contrib.auth import views as auth_views
from django.urls import path

from accounts import views

app_name = "accounts"

urlpatterns = [
    path("login/", views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path(
        "password/",
        auth_views.PasswordChangeView.as_view(
            template_name="accounts/password_change.html",
            success_url="/accounts/password/done/",
        ),
        name="password_change",
    ),
    path(
        "password/done/",
        auth_views.PasswordChangeDoneView.as_view(
            template_name="accounts/password_change_done.html"
        ),
        name="password_change_done",
    ),
    path("tokens/", views.api_tokens, name="api_tokens"),
    path("tokens/<int:token_id>/revoke/", views.api_token_revoke, name="api_token_revoke"),
    path("teams/", views.team_list, name="team_list"),
    path("teams/<slug:slug>/", views.team_detail, name="team_detail"),
    path("teams/<slug:slug>/invitations/", views.invitation_create, name="invitation_create"),
    path(
        "teams/<slug:slug>/invitations/<int:invitation_id>/revoke/",
        views.invitation_revoke,
        name="invitation_revoke",
    ),
    path(
        "teams/<slug:slug>/members/<int:membership_id>/",
        views.membership_update,
        name="membership_update",
    ),
    path("invitations/<str:token>/", views.invitation_accept, name="invitation_accept"),
]
