"""People editing one plan together: a refused save names every field the other person
changed (each plan field and the source policy) with both values, and saving again after it
never reverts a field the person did not touch; the review of a newer version."""

from __future__ import annotations

import pytest
from django.urls import reverse

from research.models import ResearchRun
from research.report_templates import template_sections
from research.web.plan_editor import stored_initial
from research.web.plan_merge import FIELDS
from tests.web.factories import awaiting_run


def editor_post(run: ResearchRun, **changes: str) -> dict[str, str]:
    """Exactly what the plan form posts for the run's current version, with ``changes``."""
    initial = stored_initial(
        run.plan_contract,
        run.plan_version,
        extra_sections=template_sections(run.report_template),
        policy=run.policy_contract,
    )
    data = {name: str(initial[name]) for name in initial if name != "contradictions_allowed"}
    if initial["contradictions_allowed"]:
        data["contradictions_allowed"] = "on"
    questions = run.plan["questions"]
    data.update({"q-TOTAL_FORMS": str(len(questions)), "q-INITIAL_FORMS": str(len(questions))})
    data.update({"q-MIN_NUM_FORMS": "0", "q-MAX_NUM_FORMS": "1000"})
    for index, question in enumerate(questions):
        data[f"q-{index}-id"] = question["id"]
        data[f"q-{index}-text"] = question["text"]
        data[f"q-{index}-priority"] = question.get("priority", "required")
    data.update(changes)
    for name, value in list(data.items()):
        if value is None:
            del data[name]
    return data


# One edit per editor field, as a person makes it in the form.
THEIR_EDITS: dict[str, dict[str, str | None]] = {
    "objective": {"objective": "Size the heat-pump market in Poland."},
    "audience": {"audience": "Installers"},
    "timeframe_start": {"timeframe_start": "2019"},
    "timeframe_end": {"timeframe_end": "2024"},
    "included_topics": {"included_topics": "residential heat pumps\nhybrid systems"},
    "excluded_topics": {"excluded_topics": "industrial heat\ndistrict heating"},
    "geographies": {"geographies": "Poland"},
    "assumptions": {"assumptions": "Figures are in zloty."},
    "questions": {"q-1-text": "Which subsidies apply in Poland?"},
    "sections": {"sections": "Subsidies"},  # added to the sections the form shows
    "decision_or_outcome": {"decision_or_outcome": "Whether to open a Warsaw office"},
    "contradictions_allowed": {"contradictions_allowed": None},
    "source_mode": {"source_mode": "prefer_domains", "domains": "example.org"},
    "domains": {"source_mode": "prefer_domains", "domains": "example.org"},
    "excluded_domains": {"excluded_domains": "spam.example.net"},
}


def test_every_editor_field_has_an_edit_here():
    assert set(THEIR_EDITS) == {name for name, _ in FIELDS}


@pytest.fixture
def shared(owner, editor, team):
    run = awaiting_run(owner, report_template="due_diligence")
    run.team, run.visibility = team, ResearchRun.Visibility.TEAM
    run.save()
    return run


@pytest.mark.parametrize("field", [name for name, _ in FIELDS])
def test_a_refused_save_names_the_changed_field_and_saving_again_keeps_it(
    field, shared, owner, editor, client_for, htmx_headers
):
    url = reverse("research:run_plan", args=[shared.pk])
    mine_name = "audience" if field != "audience" else "objective"
    mine = {"audience": "Analysts at my bank", "objective": "My own objective."}[mine_name]
    stale = editor_post(shared, **{mine_name: mine})
    # Alice saves version 2 with her edit of ``field`` while Eddie is still typing.
    edit = dict(THEIR_EDITS[field])
    if field == "sections":
        edit["sections"] = stale["sections"] + "\n" + edit["sections"]
    alice = client_for(owner)
    response = alice.post(url, {**editor_post(shared, **edit), "op": "save"})
    assert response.status_code == 302
    shared.refresh_from_db()
    theirs_plan, theirs_policy = shared.plan, shared.source_policy
    assert shared.plan_version == 2 and shared.plan_saved_by == owner

    eddie = client_for(editor)
    refused = eddie.post(url, {**stale, "op": "save"}, **htmx_headers)
    page = refused.content.decode()
    assert refused.status_code == 409
    assert "Not saved: version 2 by alice was saved while you edited version 1" in page
    assert f'data-field="{field}"' in page
    # The refusal sits next to the Save button, after every field of the form.
    assert page.index('id="plan-conflict"') > page.index('name="excluded_domains"')
    assert page.index('id="plan-conflict"') < page.index('value="save" class="secondary"')

    # Saving the form as given back keeps Alice's change and adds Eddie's.
    again = eddie.post(url, {**_form_fields(page), "op": "save"}, **htmx_headers)
    assert again.status_code == 200, again.content.decode()[:2000]
    shared.refresh_from_db()
    assert shared.plan_version == 3 and shared.plan_saved_by == editor
    kept = {k: v for k, v in shared.plan.items() if k != "audience" and k != "objective"}
    assert kept == {k: v for k, v in theirs_plan.items() if k != "audience" and k != "objective"}
    assert shared.source_policy == theirs_policy
    assert shared.plan[mine_name] == mine
    if field in ("objective", "audience"):
        assert shared.plan[field] == theirs_plan[field]


def _form_fields(page: str) -> dict[str, str]:
    """The values of the plan form in an HTML answer, as a browser would submit them."""
    from lxml import html

    form = html.fromstring(page).xpath("//form[contains(@class, 'plan-form')]")[0]
    data: dict[str, str] = {}
    for element in form.iter("input", "textarea", "select"):
        name = element.get("name")
        kind = element.get("type", "")
        if not name or element.tag == "input" and kind in ("submit", "button"):
            continue
        if kind in ("checkbox", "radio"):
            if element.get("checked") is not None:
                data[name] = element.get("value", "on")
        elif element.tag == "textarea":
            data[name] = element.text or ""
        elif element.tag == "select":
            chosen = [
                o.get("value") for o in element.iter("option") if o.get("selected") is not None
            ]
            data[name] = chosen[0] if chosen else element.iter("option").__next__().get("value")
        else:
            data[name] = element.get("value", "")
    return data


def test_two_changes_are_both_named_with_both_values(
    shared, owner, editor, client_for, htmx_headers
):
    url = reverse("research:run_plan", args=[shared.pk])
    stale = editor_post(shared, decision_or_outcome="Whether to invest")
    client_for(owner).post(
        url,
        {
            **editor_post(shared, decision_or_outcome="Whether to exit", audience="Boards"),
            "op": "save",
        },
    )
    page = client_for(editor).post(url, {**stale, "op": "save"}, **htmx_headers).content.decode()
    assert "2 fields changed in it" in page
    assert page.count('class="diff-both" data-field="decision_or_outcome"') == 1
    assert page.count('class="diff-taken" data-field="audience"') == 1
    assert "Whether to exit" in page and "Whether to invest" in page
    assert "saved again without visible changes" not in page


def test_a_review_names_the_newer_version_and_its_author(
    shared, owner, editor, client_for, htmx_headers
):
    url = reverse("research:run_plan", args=[shared.pk])
    typing = editor_post(shared, audience="Typed but not saved")
    nothing = client_for(editor).post(url, {**typing, "op": "review"}, **htmx_headers)
    assert nothing.status_code == 200 and "A newer version" not in nothing.content.decode()
    client_for(owner).post(url, {**editor_post(shared, objective="Newer objective."), "op": "save"})
    review = client_for(editor).post(url, {**typing, "op": "review"}, **htmx_headers)
    page = review.content.decode()
    assert "A newer version (v2 by alice) exists — review changes." in page
    assert 'data-field="objective"' in page and "Newer objective." in page
    merged = client_for(editor).post(url, {**typing, "op": "merge"}, **htmx_headers)
    page = merged.content.decode()
    assert 'data-unsaved="true"' in page
    assert "Newer objective.</textarea>" in page and 'value="Typed but not saved"' in page
    shared.refresh_from_db()
    assert shared.plan_version == 2  # merging saves nothing
