"""What `manage.py research` says about a run that ended: the exit status, the last line on
standard error and the JSON document's outcome follow the stored stop reason."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.test import override_settings

from research.models import ResearchRun
from tests.web.factories import completed_run

QUESTION = "How many weekday boardings did the Harwick Metro Line 3 extension record?"


def finish(monkeypatch, run: ResearchRun) -> tuple[int, dict, str]:
    """Run `research --resume RUN --format json` on a run that has already ended."""
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    try:
        call_command("research", "--resume", str(run.pk), "--format", "json")
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code)
    return code, json.loads(out.getvalue()), err.getvalue().strip().splitlines()[-1]


@pytest.mark.parametrize(
    ("stop_reason", "stop_limit", "key", "line"),
    [
        (
            "budget_exhausted",
            "searches",
            "partial_budget",
            "Partial: budget limit reached. Research stopped at the run's limit on searches (18) "
            "and sources read (24), so a partial report was written. Increase the budget",
        ),
        (
            "diminishing_returns",
            "",
            "partial_nothing_new",
            "Partial: nothing new found. Research stopped because three rounds in a row found "
            "nothing new",
        ),
        (
            "no_readable_sources",
            "",
            "partial_no_sources",
            "Partial: no readable sources. Research stopped because no source could be read",
        ),
    ],
)
def test_a_partial_run_says_why_it_stopped(monkeypatch, owner, stop_reason, stop_limit, key, line):
    run = completed_run(
        owner, status="budget_exhausted", stop_reason=stop_reason, stop_limit=stop_limit
    )

    code, document, last = finish(monkeypatch, run)

    assert code == 3
    assert last.startswith(line)
    assert "budget ran out" not in last
    assert ("Increase the budget" in last) is (key == "partial_budget")
    assert document["stop_reason"] == stop_reason
    assert document["stop_limit"] == (stop_limit or None)
    assert document["outcome"]["key"] == key
    assert document["outcome"]["sentence"] in last


@pytest.mark.django_db(transaction=True)
def test_a_search_outage_exits_as_failed_and_says_how_to_retry(monkeypatch, owner, web):
    # Every search answers 503 (one attempt each): three rounds of provider failures.
    web.fail_next("/search", 503, times=100)
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    settings = override_settings(**web.django_settings(), RESEARCH_RETRY_MAX_ATTEMPTS=1)
    with settings, pytest.raises(SystemExit) as exit_:
        call_command(
            "research",
            QUESTION,
            "--depth",
            "quick",
            "--auto-approve",
            "--user",
            "alice",
            "--format",
            "json",
        )

    assert exit_.value.code == 1
    run = ResearchRun.objects.get()
    assert (run.status, run.stop_reason) == ("failed", "provider_failures")
    last = err.getvalue().strip().splitlines()[-1]
    assert last.startswith(
        "Failed: provider outage. A search, fetch or model provider kept failing"
    )
    assert "What happened: Search or fetch providers kept failing." in last
    assert f"--resume {run.pk}" in last and "budget" not in last
    document = json.loads(out.getvalue())
    assert document["status"] == "failed"
    assert document["outcome"]["key"] == "failed_provider_outage"
    assert document["outcome"]["detail"] == run.last_error
