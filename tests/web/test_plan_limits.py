"""Plan review refuses what no plan may hold with a sentence, and survives what a browser
may send back: every list and text field has a limit the server enforces and the browser's
maxlength repeats; timeframes are real dates; a malformed base plan never crashes the
conflict view."""

from __future__ import annotations

import json
from html.parser import HTMLParser

import pytest
from django import forms
from django.urls import reverse

from research import services
from research.engine.contracts import (
    PLAN_ITEM_MAX_CHARS,
    PLAN_LIST_MAX_ITEMS,
    ResearchPlan,
    partial_date_bounds,
)
from research.models import ResearchRun
from research.web.forms import ComposerForm, PlanForm, QuestionForm, RefineForm
from tests.web.factories import awaiting_run, completed_run, plan_data
from tests.web.test_plan_review import form_data


@pytest.fixture
def run(owner):
    return awaiting_run(owner)


def plan_url(run: ResearchRun) -> str:
    return reverse("research:run_plan", args=[run.pk])


def save(client, run, htmx_headers, **changes):
    return client.post(plan_url(run), {**form_data(run, **changes), "op": "save"}, **htmx_headers)


# --- the conflict view and the base plan ------------------------------------------------------


@pytest.mark.parametrize(
    "base_plan",
    [
        '{"scope": [1, 2], "questions": "x"}',
        '{"questions": [1, {"id": 3}, {"id": "q1", "text": null}], "deliverable": "all"}',
        '{"assumptions": {"a": 1}, "scope": {"timeframe": "2020", "geographies": 5}}',
        "[1, 2, 3]",
        "not json at all",
        "[" * 5000 + "]" * 5000,
    ],
)
def test_stale_save_with_a_malformed_base_plan_shows_the_conflict(
    run, client_for, htmx_headers, base_plan
):
    stale = form_data(run, audience="My own audience", base_plan=base_plan)
    services.plan_update(
        run=run, plan=plan_data(objective="Someone else's objective."), expected_version=1
    )
    response = client_for(run.owner).post(plan_url(run), {**stale, "op": "save"}, **htmx_headers)
    page = response.content.decode()
    assert response.status_code == 409
    assert "Not saved: version 2 by the planner was saved while you edited version 1" in page
    assert 'value="My own audience"' in page
    run.refresh_from_db()
    assert run.plan_version == 2 and run.plan["objective"] == "Someone else's objective."


# --- dates --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "sentence"),
    [
        ("2024-13-45", "“2024-13-45” is not a real date; check the month and the day."),
        ("2023-02-29", "“2023-02-29” is not a real date; check the month and the day."),
        ("2024-00", "“2024-00” is not a real date; check the month and the day."),
        ("2024-1-5", "“2024-1-5” is not a year (2024), a month (2024-03) or a date (2024-03-15)."),
        ("soon", "“soon” is not a year (2024), a month (2024-03) or a date (2024-03-15)."),
    ],
)
def test_a_timeframe_that_is_not_a_real_date_is_refused(
    run, client_for, htmx_headers, value, sentence
):
    response = save(client_for(run.owner), run, htmx_headers, timeframe_start=value)
    assert response.status_code == 422
    assert sentence in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1


def test_a_timeframe_that_ends_before_it_starts_is_refused(run, client_for, htmx_headers):
    response = save(
        client_for(run.owner), run, htmx_headers, timeframe_start="2024-06", timeframe_end="2023"
    )
    assert response.status_code == 422
    assert "The timeframe ends (2023) before it starts (2024-06)." in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1


@pytest.mark.parametrize(
    ("start", "end"), [("2024", "2024-02-29"), ("2020-06", "2020"), ("2019-12-31", "")]
)
def test_real_timeframes_are_saved(run, client_for, htmx_headers, start, end):
    save(client_for(run.owner), run, htmx_headers, timeframe_start=start, timeframe_end=end)
    run.refresh_from_db()
    assert run.plan_version == 2
    assert run.plan["scope"]["timeframe"] == {"start": start, "end": end or None}


def test_the_service_refuses_an_impossible_date_too(run):
    plan = plan_data()
    plan["scope"]["timeframe"] = {"start": "2024-13-45", "end": None}
    with pytest.raises(services.RunActionError, match="not a real date"):
        services.plan_update(run=run, plan=plan, expected_version=1)


def test_partial_dates_cover_their_whole_period():
    assert [str(day) for day in partial_date_bounds("2024-02")] == ["2024-02-01", "2024-02-29"]
    assert [str(day) for day in partial_date_bounds("2023")] == ["2023-01-01", "2023-12-31"]


# --- list and text limits -----------------------------------------------------------------


def test_ten_thousand_sections_are_refused_with_a_message(run, client_for, htmx_headers):
    sections = "\n".join(f"Section {n}" for n in range(10_000))
    response = save(client_for(run.owner), run, htmx_headers, sections=sections)
    page = response.content.decode()
    assert response.status_code == 422
    assert "The list of report sections is too long; keep it under 10,020 characters." in page
    run.refresh_from_db()
    assert run.plan_version == 1
    assert run.plan["deliverable"]["requested_sections"] == ["Market size"]


@pytest.mark.parametrize(
    ("field", "words"),
    [
        ("sections", "report sections"),
        ("assumptions", "assumptions"),
        ("included_topics", "topics in scope"),
        ("excluded_topics", "exclusions"),
        ("geographies", "geographies"),
    ],
)
def test_one_entry_more_than_a_list_holds_is_refused(run, client_for, htmx_headers, field, words):
    entries = "\n".join(f"Entry {n}" for n in range(PLAN_LIST_MAX_ITEMS + 1))
    response = save(client_for(run.owner), run, htmx_headers, **{field: entries})
    assert response.status_code == 422
    assert (
        f"List at most {PLAN_LIST_MAX_ITEMS} {words}, one a line (there are 21)."
        in response.content.decode()
    )
    run.refresh_from_db()
    assert run.plan_version == 1


def test_a_list_at_its_limit_is_saved(run, client_for, htmx_headers):
    entries = "\n".join("x" * PLAN_ITEM_MAX_CHARS for _ in range(PLAN_LIST_MAX_ITEMS))
    save(client_for(run.owner), run, htmx_headers, geographies=entries)
    run.refresh_from_db()
    assert run.plan_version == 2 and len(run.plan["scope"]["geographies"]) == PLAN_LIST_MAX_ITEMS


@pytest.mark.parametrize(
    ("field", "limit", "sentence"),
    [
        ("objective", 4000, "The objective is too long; keep it under 4,000 characters."),
        ("audience", 500, "The audience is too long; keep it under 500 characters."),
        (
            "decision_or_outcome",
            1000,
            "The decision or outcome is too long; keep it under 1,000 characters.",
        ),
        ("q-0-text", 1000, "The sub-question is too long; keep it under 1,000 characters."),
        (
            "q-0-rationale",
            1000,
            "The sub-question&#x27;s rationale is too long; keep it under 1,000 characters.",
        ),
    ],
)
def test_over_long_text_is_refused_with_a_sentence(
    run, client_for, htmx_headers, field, limit, sentence
):
    response = save(client_for(run.owner), run, htmx_headers, **{field: "x" * (limit + 1)})
    assert response.status_code == 422
    assert sentence in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1


def test_the_service_refuses_ten_thousand_sections(run):
    plan = plan_data()
    plan["deliverable"]["requested_sections"] = [f"Section {n}" for n in range(10_000)]
    with pytest.raises(services.RunActionError, match="at most 20 items"):
        services.plan_update(run=run, plan=plan, expected_version=1)


def test_the_plan_schema_the_planner_sees_carries_the_limits():
    schema = json.dumps(ResearchPlan.model_json_schema())
    assert f'"maxItems": {PLAN_LIST_MAX_ITEMS}' in schema


# --- the browser's maxlength is the server's ------------------------------------------------


class _Fields(HTMLParser):
    """``name -> maxlength`` of every text input and textarea on a page."""

    def __init__(self) -> None:
        super().__init__()
        self.found: dict[str, str | None] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        kind = values.get("type", "text")
        text = tag == "textarea" or (tag == "input" and kind in ("text", "search", "password"))
        if text and values.get("name"):
            self.found[values["name"]] = values.get("maxlength")


def rendered_fields(html: str) -> dict[str, str | None]:
    parser = _Fields()
    parser.feed(html)
    return parser.found


def _limits(form_class: type[forms.Form], prefix: str = "") -> dict[str, int]:
    return {
        prefix + name: field.max_length
        for name, field in form_class.base_fields.items()
        if isinstance(field, forms.CharField) and field.max_length and not field.widget.is_hidden
    }


def assert_agrees(html: str, limits: dict[str, int]) -> None:
    fields = rendered_fields(html)
    checked = 0
    for name, maxlength in fields.items():
        if name in limits:
            assert maxlength == str(limits[name]), (
                f"{name}: browser {maxlength}, server {limits[name]}"
            )
            checked += 1
    assert checked == len([name for name in limits if name in fields]) and checked > 0


def test_composer_maxlength_matches_the_server(owner, client_for):
    page = client_for(owner).get(reverse("research:run_new")).content.decode()
    assert_agrees(page, _limits(ComposerForm))
    assert set(_limits(ComposerForm)) <= set(rendered_fields(page))


def test_plan_editor_maxlength_matches_the_server(run, client_for):
    page = client_for(run.owner).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    limits = {**_limits(PlanForm), **_limits(QuestionForm, prefix="q-0-")}
    assert_agrees(page, limits)
    assert set(_limits(PlanForm)) <= set(rendered_fields(page))


def test_refine_and_login_maxlength_match_the_server(owner, client_for):
    done = completed_run(owner)
    report = client_for(owner).get(reverse("research:run_report", args=[done.pk])).content
    assert_agrees(report.decode(), _limits(RefineForm))
    workspace = client_for(owner).get(reverse("research:run_detail", args=[done.pk])).content
    fields = rendered_fields(workspace.decode())
    assert fields["instruction"] == str(RefineForm.base_fields["instruction"].max_length)
    login = client_for().get(reverse("accounts:login")).content.decode()
    assert rendered_fields(login)["username"] == "150"
    teams = client_for(owner).get(reverse("accounts:team_list")).content.decode()
    assert rendered_fields(teams)["name"] == "100"
    dashboard = client_for(owner).get(reverse("research:dashboard")).content.decode()
    assert rendered_fields(dashboard)["q"] == "200"


def test_an_over_long_dashboard_search_says_it_was_not_applied(owner, client_for):
    page = client_for(owner).get(reverse("research:dashboard"), {"q": "x" * 201}).content
    assert "Search with at most 200 characters; this search was not applied." in page.decode()
