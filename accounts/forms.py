from django import forms
from django.contrib.auth.forms import UserCreationForm

from accounts.models import Membership, Team, User


class TeamForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True)


class InvitationForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices, initial=Membership.Role.VIEWER)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Membership.Role.choices)


class SignupForm(UserCreationForm):
    """Account creation, offered only to someone holding a valid team invitation."""

    class Meta(UserCreationForm.Meta):
        model = User
        fields = ("username",)


class ApiTokenForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True, help_text="What the token is for.")
    read_only = forms.BooleanField(
        required=False, help_text="Read runs and reports only; every change is refused."
    )
    team = forms.ModelChoiceField(
        queryset=Team.objects.none(),
        required=False,
        empty_label="All my research",
        help_text="Limit the token to one team's research.",
    )

    def __init__(self, *args, user: User, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = Team.objects.filter(memberships__user=user)
