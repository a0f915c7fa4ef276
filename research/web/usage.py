"""The usage and cost dashboard: ``/usage/`` (staff) and ``/usage/team/<id>/`` (its owners).

Charts are inline SVG drawn on the server (bars as ``<rect>`` elements, no script), so the
strict Content-Security-Policy holds. The CSV export has the same rows as the daily table.
Anyone else gets 404, as for a page that does not exist.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from research.usage import COUNTERS, MAX_DAYS, Scope, owned_teams, usage_scope, usage_summary

# The drawing area of a chart, in SVG user units (the page scales it to its width).
CHART_WIDTH, CHART_HEIGHT = 640, 160


class WindowForm(forms.Form):
    days = forms.IntegerField(min_value=1, max_value=MAX_DAYS, required=False)

    def window(self) -> int:
        return (self.cleaned_data.get("days") if self.is_valid() else None) or 30


@dataclass(frozen=True)
class Bar:
    x: float
    y: float
    width: float
    height: float
    label: str
    value: int


def bars(rows: list[dict], key: str) -> list[Bar]:
    """Bar geometry for ``rows[i][key]`` (one bar per day), scaled to the tallest."""
    if not rows:
        return []
    top = max(int(row[key]) for row in rows) or 1
    step = CHART_WIDTH / len(rows)
    return [
        Bar(
            x=round(i * step, 2),
            y=round(CHART_HEIGHT - int(row[key]) / top * CHART_HEIGHT, 2),
            width=round(max(step - 2, 1), 2),
            height=round(int(row[key]) / top * CHART_HEIGHT, 2),
            label=row["day"].isoformat(),
            value=int(row[key]),
        )
        for i, row in enumerate(rows)
    ]


def _scope(request: HttpRequest, team_id: int | None) -> Scope:
    scope = usage_scope(request.user, team_id)
    if scope is None:
        raise Http404("No usage page here.")
    return scope


@login_required
@require_GET
def usage(request: HttpRequest, team_id: int | None = None) -> HttpResponse:
    scope = _scope(request, team_id)
    window = WindowForm(request.GET)
    summary = usage_summary(scope, days=window.window())
    for row in summary.days:
        row["tokens"] = row["input_tokens"] + row["output_tokens"]
    charts = [
        (title, drawn, max((bar.value for bar in drawn), default=0))
        for title, drawn in (
            ("Runs per day", bars(summary.days, "runs")),
            ("Tokens per day", bars(summary.days, "tokens")),
            ("Searches per day", bars(summary.days, "searches")),
            ("Fetches per day", bars(summary.days, "fetched_sources")),
        )
    ]
    context = {
        "scope": scope,
        "summary": summary,
        "charts": charts,
        "chart_width": CHART_WIDTH,
        "chart_height": CHART_HEIGHT,
        "window": window,
        "days": window.window(),
        "teams": owned_teams(request.user) if scope.team is None else [],
    }
    return render(request, "research/usage.html", context)


@login_required
@require_GET
def usage_csv(request: HttpRequest, team_id: int | None = None) -> HttpResponse:
    scope = _scope(request, team_id)
    summary = usage_summary(scope, days=WindowForm(request.GET).window())
    response = HttpResponse(content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="usage.csv"'
    writer = csv.writer(response)
    writer.writerow(
        ["day", "runs", "failed", *COUNTERS, "reported_cost", "runs_with_reported_cost"]
    )
    for row in summary.days:
        cost = row["cost"] if row["cost_runs"] else ""
        writer.writerow(
            [row["day"].isoformat(), row["runs"], row["failed"]]
            + [row[key] for key in COUNTERS]
            + [cost, row["cost_runs"]]
        )
    return response
