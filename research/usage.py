"""Usage and cost across runs, for the operators' dashboard (``research/web/usage.py``).

Everything is computed in the database with aggregates over the runs' stored usage (one
query per table whatever the number of runs). Who sees what is decided here too: staff see
the whole deployment, a team's owners see the runs of that team, nobody else sees anything
(:func:`usage_scope` answers ``None`` and the view answers 404).

Cost: only what a model provider reported (``usage.cost``; the extractive backend and
servers that report nothing leave it at zero). Totals say how many runs it covers, so an
operator never reads a partial sum as the whole bill.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from typing import Any

from django.db.models import (
    BigIntegerField,
    Count,
    DecimalField,
    DurationField,
    ExpressionWrapper,
    F,
    Q,
    QuerySet,
    Sum,
)
from django.db.models.fields.json import KeyTextTransform
from django.db.models.functions import Cast, Coalesce, TruncDate
from django.utils import timezone

from accounts.models import Membership, Team
from research.models import ResearchRun

# The counters of a run's usage the dashboard sums, in the order its tables show them.
COUNTERS = ("input_tokens", "output_tokens", "searches", "fetched_sources")
# How many of the longest runs the dashboard lists.
SLOWEST = 10
# The longest window the dashboard accepts: a year of daily bars still fits one chart.
MAX_DAYS = 366


@dataclass(frozen=True)
class Scope:
    """Which runs a person may see the usage of: every run, or one team's."""

    title: str
    team: Team | None = None

    def runs(self) -> QuerySet[ResearchRun]:
        runs = ResearchRun.objects.all()
        return runs if self.team is None else runs.filter(team=self.team)


def usage_scope(user: Any, team_id: int | None = None) -> Scope | None:
    """The scope ``user`` may see (the whole deployment, or team ``team_id``), or None."""
    if not getattr(user, "is_authenticated", False):
        return None
    if team_id is None:
        return Scope("All runs") if user.is_staff else None
    team = Team.objects.filter(pk=team_id).first()
    if team is None:
        return None
    owns = Membership.objects.filter(team=team, user=user, role=Membership.Role.OWNER).exists()
    return Scope(f"Team {team.name}", team) if user.is_staff or owns else None


def owned_teams(user: Any) -> QuerySet[Team]:
    """The teams whose usage ``user`` may open (every team for staff)."""
    if user.is_staff:
        return Team.objects.all()
    return Team.objects.filter(memberships__user=user, memberships__role=Membership.Role.OWNER)


def _count(key: str) -> Coalesce:
    return Coalesce(Sum(Cast(KeyTextTransform(key, "usage"), BigIntegerField())), 0)


_COST = Cast(KeyTextTransform("cost", "usage"), DecimalField(max_digits=20, decimal_places=8))


def _sums() -> dict[str, Any]:
    """The aggregates of one group of runs: counts, usage counters and reported cost."""
    sums: dict[str, Any] = {key: _count(key) for key in COUNTERS}
    sums["runs"] = Count("pk")
    sums["failed"] = Count("pk", filter=Q(status="failed"))
    sums["cost"] = Coalesce(
        Sum("cost_reported", filter=Q(cost_reported__gt=0)),
        Decimal(0),
        output_field=DecimalField(max_digits=20, decimal_places=8),
    )
    sums["cost_runs"] = Count("pk", filter=Q(cost_reported__gt=0))
    return sums


def _rows(runs: QuerySet[ResearchRun], *group: str) -> list[dict[str, Any]]:
    return list(runs.values(*group).annotate(**_sums()).order_by(*group))


@dataclass(frozen=True)
class UsageSummary:
    totals: dict[str, Any]
    days: list[dict[str, Any]]
    users: list[dict[str, Any]]
    teams: list[dict[str, Any]]
    failures: list[dict[str, Any]]
    slowest: list[dict[str, Any]]


def usage_summary(scope: Scope, *, days: int) -> UsageSummary:
    """Usage of the runs in ``scope`` created in the last ``days`` days."""
    since = timezone.now() - timedelta(days=days)
    runs = scope.runs().filter(created_at__gte=since).annotate(cost_reported=_COST)
    totals = runs.aggregate(**_sums())
    by_day = _rows(runs.annotate(day=TruncDate("created_at")), "day")
    by_user = _rows(runs, "owner__username")
    by_team = _rows(runs.filter(team__isnull=False), "team__name") if scope.team is None else []
    failures = list(
        runs.filter(status="failed")
        .values("stop_reason")
        .annotate(runs=Count("pk"))
        .order_by("-runs", "stop_reason")
    )
    slowest = list(
        runs.filter(completed_at__isnull=False)
        .annotate(took=ExpressionWrapper(F("completed_at") - F("created_at"), DurationField()))
        .order_by("-took")
        .values("pk", "status", "owner__username", "took", "created_at")[:SLOWEST]
    )
    return UsageSummary(totals, by_day, by_user, by_team, failures, slowest)
