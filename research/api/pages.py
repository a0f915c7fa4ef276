"""The webhooks page: add a hook (for yourself or a team you edit for), see each hook's
delivery log, switch hooks off. Writes go through research.worker.webhooks."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db.models import Q
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from research.access import teams_for_new_runs
from research.models import Webhook
from research.worker import webhooks


class WebhookForm(forms.Form):
    url = forms.URLField(max_length=2000, assume_scheme="https", label="Address")
    events = forms.MultipleChoiceField(
        choices=[(event, event) for event in webhooks.EVENTS],
        widget=forms.CheckboxSelectMultiple,
        initial=list(webhooks.EVENTS),
    )
    team = forms.ModelChoiceField(queryset=None, required=False, empty_label="My own runs")

    def __init__(self, *args, user, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = teams_for_new_runs(user)


def _hooks(request: HttpRequest):
    """Hooks the user manages: their own, and those of teams they edit for."""
    teams = teams_for_new_runs(request.user).values("pk")
    return Webhook.objects.filter(Q(owner=request.user) | Q(team__in=teams)).select_related(
        "team", "owner"
    )


@login_required
def webhook_list(request: HttpRequest) -> HttpResponse:
    form = WebhookForm(request.POST or None, user=request.user)
    created = None
    status = 200
    if request.method == "POST":
        if form.is_valid():
            try:
                created = webhooks.webhook_create(
                    owner=request.user,
                    url=form.cleaned_data["url"],
                    events=form.cleaned_data["events"],
                    team=form.cleaned_data["team"],
                )
            except webhooks.WebhookError as exc:
                form.add_error("url", str(exc))
        if form.errors:
            status = 422
        else:
            form = WebhookForm(user=request.user)
    context = {"form": form, "hooks": _hooks(request), "created": created}
    return render(request, "research/webhooks.html", context, status=status)


def _hook(request: HttpRequest, hook_id: int) -> Webhook:
    hook = _hooks(request).filter(pk=hook_id).first()
    if hook is None:
        raise Http404("No such webhook.")
    return hook


@login_required
def webhook_detail(request: HttpRequest, hook_id: int) -> HttpResponse:
    hook = _hook(request, hook_id)
    deliveries = hook.deliveries.all()[:50]
    return render(request, "research/webhook_detail.html", {"hook": hook, "deliveries": deliveries})


@login_required
@require_POST
def webhook_toggle(request: HttpRequest, hook_id: int) -> HttpResponse:
    hook = _hook(request, hook_id)
    Webhook.objects.filter(pk=hook.pk).update(active=not hook.active)
    messages.success(request, "Webhook switched " + ("off." if hook.active else "on."))
    return redirect("webhook_detail", hook_id=hook.pk)
