"""The usage and cost dashboard: its numbers are the sums of the runs, and only staff and a
team's owners see them."""

from __future__ import annotations

import csv
import io
import re
from datetime import timedelta
from decimal import Decimal

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from research.models import ResearchRun
from tests.conftest import make_run, make_user

pytestmark = pytest.mark.django_db


def _run(owner, *, days_ago=0, tokens=(0, 0), searches=0, fetches=0, cost=None, **fields):
    usage = {
        "input_tokens": tokens[0],
        "output_tokens": tokens[1],
        "searches": searches,
        "fetched_sources": fetches,
        "model_calls": 1,
    }
    if cost is not None:
        usage["cost"] = cost
    run = make_run(owner, usage=usage, **fields)
    created = timezone.now() - timedelta(days=days_ago, hours=1)
    ResearchRun.objects.filter(pk=run.pk).update(created_at=created)
    run.refresh_from_db()
    return run


@pytest.fixture
def runs(owner, team, editor):
    team_fields = {"team": team, "visibility": ResearchRun.Visibility.TEAM}
    made = [
        _run(owner, tokens=(1200, 300), searches=3, fetches=5, cost="0.0125", **team_fields),
        _run(
            owner,
            days_ago=1,
            tokens=(800, 200),
            searches=2,
            fetches=4,
            status="failed",
            stop_reason="worker_error",
        ),
        _run(
            editor,
            days_ago=2,
            tokens=(500, 100),
            searches=1,
            fetches=1,
            cost="0.0300",
            **team_fields,
        ),
        _run(
            editor,
            days_ago=2,
            tokens=(100, 50),
            searches=1,
            fetches=2,
            status="completed",
            **team_fields,
        ),
    ]
    ResearchRun.objects.filter(pk=made[3].pk).update(
        completed_at=made[3].created_at + timedelta(minutes=7)
    )
    # Outside the 30-day window: counted nowhere.
    _run(owner, days_ago=45, tokens=(9999, 9999), searches=9, fetches=9)
    return made


def _totals(html: str) -> dict[str, str]:
    return dict(re.findall(r'data-total="(\w+)">([^<]*)<', html))


def _expected(runs):
    return {
        "runs": len(runs),
        "input_tokens": sum(r.usage["input_tokens"] for r in runs),
        "output_tokens": sum(r.usage["output_tokens"] for r in runs),
        "searches": sum(r.usage["searches"] for r in runs),
        "fetched_sources": sum(r.usage["fetched_sources"] for r in runs),
        "failed": sum(r.status == "failed" for r in runs),
    }


def test_staff_see_the_sums_of_every_run(client_for, staff, runs):
    answer = client_for(staff).get("/usage/")
    assert answer.status_code == 200
    totals = _totals(answer.content.decode())
    for key, expected in _expected(runs).items():
        assert int(totals[key]) == expected, key
    reported = [Decimal(r.usage["cost"]) for r in runs if r.usage.get("cost")]
    assert totals["cost"].startswith(f"{sum(reported):.4f} (reported for 2 of 4 runs)")
    html = answer.content.decode()
    assert html.count("<rect ") == 4 * 3  # four charts, three days with runs
    assert "worker_error" in html
    assert not re.search(r"<script(?![^>]*\bsrc=\"/static/)", html)  # no inline or outside script


def test_a_team_owner_sees_the_team_only(client_for, owner, team, runs):
    answer = client_for(owner).get(f"/usage/team/{team.pk}/")
    assert answer.status_code == 200
    team_runs = [r for r in runs if r.team_id == team.pk]
    totals = _totals(answer.content.decode())
    for key, expected in _expected(team_runs).items():
        assert int(totals[key]) == expected, key


@pytest.mark.parametrize("who", ["outsider", "editor", "owner"])
def test_others_get_404(client_for, request, team, runs, who):
    user = request.getfixturevalue(who)
    client = client_for(user)
    assert client.get("/usage/").status_code == 404  # the whole deployment: staff only
    assert client.get("/usage.csv").status_code == 404
    if who != "owner":
        assert client.get(f"/usage/team/{team.pk}/").status_code == 404
        assert client.get(f"/usage/team/{team.pk}.csv").status_code == 404
    assert client.get("/usage/team/999999/").status_code == 404


def test_the_csv_has_the_same_numbers(client_for, staff, runs):
    answer = client_for(staff).get("/usage.csv?days=30")
    assert answer.status_code == 200 and answer["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(answer.content.decode())))
    assert len(rows) == 3
    expected = _expected(runs)
    for key in ("runs", "input_tokens", "output_tokens", "searches", "fetched_sources"):
        assert sum(int(row[key]) for row in rows) == expected[key], key
    unreported = [row for row in rows if row["runs_with_reported_cost"] == "0"]
    assert unreported and all(row["reported_cost"] == "" for row in unreported)


def test_the_query_count_does_not_grow_with_the_runs(client_for, staff, owner, runs):
    client = client_for(staff)
    client.get("/usage/")
    with CaptureQueriesContext(connection) as few:
        client.get("/usage/")
    for day in range(12):
        _run(owner, days_ago=day, tokens=(10, 10), searches=1)
        _run(make_user(f"person{day}"), days_ago=day, tokens=(5, 5))
    with CaptureQueriesContext(connection) as many:
        client.get("/usage/")
    assert len(many) == len(few)


def test_a_bad_window_is_answered_with_a_sentence(client_for, staff, runs):
    answer = client_for(staff).get("/usage/?days=nine")
    assert answer.status_code == 200
    assert "Enter a whole number." in answer.content.decode()
    assert client_for(staff).get("/usage/?days=5000").status_code == 200


def test_the_slowest_finished_run_is_listed(client_for, staff, runs):
    html = client_for(staff).get("/usage/").content.decode()
    assert str(runs[3].pk)[:8] in html and "0:07:00" in html
