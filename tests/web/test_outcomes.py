"""How a run ended, as the pages say it: the badge, the workspace and report banners, the
budget panel, the controls and the dashboard filter follow the stored stop reason."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from research import services
from research.models import ResearchRun
from tests.web.factories import completed_run, make_run

# stop reason, stop limit -> badge, words the banner must contain, whether more budget is offered
PARTIAL_CASES = [
    (
        "budget_exhausted",
        "iterations",
        "Partial: budget limit reached",
        "limit on rounds (12)",
        True,
    ),
    (
        "time_exhausted",
        "elapsed_seconds",
        "Partial: budget limit reached",
        "research time (20 min)",
        True,
    ),
    ("diminishing_returns", "", "Partial: nothing new found", "three rounds in a row", False),
    ("only_equivalent_searches", "", "Partial: nothing new found", "only repeats", False),
    ("no_readable_sources", "", "Partial: no readable sources", "no source could be read", False),
    ("invalid_decisions", "", "Partial: unusable decisions", "decision model twice", False),
]


def page(client, run: ResearchRun, name: str = "research:run_detail") -> str:
    return client.get(reverse(name, args=[run.pk])).content.decode()


def section(html: str, element_id: str) -> str:
    return re.search(rf'<section id="{element_id}".*?</section>', html, re.S).group(0)


def partial_run(owner, stop_reason: str, stop_limit: str, **fields) -> ResearchRun:
    run = completed_run(
        owner,
        status="budget_exhausted",
        stop_reason=stop_reason,
        stop_limit=stop_limit,
        terminal_reason="A partial report was written: research stopped.",
        **fields,
    )
    run.report = {**run.report, "partial": True}
    run.save(update_fields=["report"])
    return run


@pytest.mark.parametrize(
    ("stop_reason", "stop_limit", "badge", "words", "more_budget"), PARTIAL_CASES
)
def test_each_partial_outcome_has_its_own_label_banner_and_controls(
    owner, client_for, stop_reason, stop_limit, badge, words, more_budget
):
    run = partial_run(owner, stop_reason, stop_limit)
    client = client_for(owner)

    workspace = page(client, run)
    header = section(workspace, "run-header")
    assert f">{badge}</span>" in header
    assert "Budget exhausted" not in workspace
    assert words in header
    controls = section(workspace, "run-controls")
    assert ("Increase the budget" in controls) is more_budget
    # The run has ended with a partial report: cancelling it would only relabel it.
    assert ">Cancel research<" not in controls

    report = page(client, run, "research:run_report")
    assert f">{badge}</span>" in report
    banner = re.search(r"<strong>Partial report\.</strong>(.*?)</p>", report, re.S).group(1)
    assert words in banner
    assert ("Increase the budget in the workspace" in banner) is more_budget


def test_the_budget_panel_lists_the_round_limit_and_marks_the_one_reached(owner, client_for):
    run = partial_run(owner, "budget_exhausted", "iterations", usage={"iterations": 12})
    panel = section(page(client_for(owner), run), "run-progress")
    meters = re.findall(r'<div class="meter( meter-reached)?">\s*<dt>(.*?)</dt>', panel, re.S)
    labels = [re.sub(r"<.*?>", "", label).strip() for _, label in meters]
    assert labels[:2] == ["Rounds limit reached", "Searches"]
    assert {"Source text", "Input tokens", "Output tokens", "Research time"} <= set(labels)
    assert [re.sub(r"<.*?>", "", label).strip() for mark, label in meters if mark] == [
        "Rounds limit reached"
    ]
    assert "12 of 12" in panel


def test_a_provider_outage_is_a_failure_with_retry_and_no_budget_offer(owner, client_for):
    run = make_run(
        owner,
        status="failed",
        resume_phase="researching",
        stop_reason="provider_failures",
        last_error="Search or fetch providers kept failing. The last failure: No search "
        "provider answered.",
    )
    workspace = page(client_for(owner), run)
    header = section(workspace, "run-header")
    assert ">Failed: provider outage</span>" in header
    assert "kept failing, so the run stopped. Retry once it answers again" in header
    assert "Researching failed: Search or fetch providers kept failing." in header
    controls = section(workspace, "run-controls")
    assert ">Retry researching<" in controls
    assert "Increase the budget" not in controls


def test_more_budget_is_refused_when_the_budget_did_not_stop_the_run(
    owner, client_for, htmx_headers
):
    run = partial_run(owner, "diminishing_returns", "")
    with pytest.raises(
        services.RunActionError, match=r"did not stop at a budget limit \(nothing new found\)"
    ):
        services.budget_increase(run=run)

    response = client_for(owner).post(
        reverse("research:run_control", args=[run.pk, "budget"]), **htmx_headers
    )
    assert response.status_code == 409
    assert "more budget would not help" in response.content.decode()
    run.refresh_from_db()
    assert run.status == "budget_exhausted" and run.budget["iterations"] == 12


def test_more_budget_clears_the_stop_reason(owner):
    run = partial_run(owner, "budget_exhausted", "searches")
    run = services.budget_increase(run=run)
    assert (run.status, run.stop_reason, run.stop_limit) == ("queued", "", "")


def test_the_dashboard_filters_by_outcome(owner, client_for):
    runs = {
        "Budget": partial_run(owner, "budget_exhausted", "iterations"),
        "Dry": partial_run(owner, "diminishing_returns", ""),
        "Blind": partial_run(owner, "no_readable_sources", ""),
        "Outage": make_run(owner, status="failed", stop_reason="provider_failures"),
        "Crash": make_run(owner, status="failed", stop_reason="worker_error"),
        "Plain": make_run(owner, status="failed"),
        "Done": completed_run(owner, stop_reason="finish_gate_passed"),
    }
    for name, run in runs.items():
        ResearchRun.objects.filter(pk=run.pk).update(question=f"{name} question", title="")
    client = client_for(owner)

    def listed(status: str) -> set[str]:
        html = client.get(reverse("research:dashboard"), {"status": status}).content.decode()
        return {name for name in runs if f"{name} question" in html}

    assert listed("partial") == {"Budget", "Dry", "Blind"}
    assert listed("partial_budget") == {"Budget"}
    assert listed("partial_nothing_new") == {"Dry"}
    assert listed("partial_no_sources") == {"Blind"}
    assert listed("failed") == {"Outage", "Crash", "Plain"}
    assert listed("failed_provider_outage") == {"Outage"}
    assert listed("failed_worker_error") == {"Crash"}
    assert listed("completed") == {"Done"}

    html = client.get(reverse("research:dashboard")).content.decode()
    assert ">Partial: nothing new found</span>" in html
    assert ">Failed: internal error</span>" in html
    assert "Budget exhausted" not in html
