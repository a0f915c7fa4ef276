from django import forms
from django.contrib.auth.forms import UserCreationForm

from accounts.models import Membership, User


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
