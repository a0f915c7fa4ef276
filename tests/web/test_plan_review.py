"""Plan review: the plan as an editable, versioned form; stale edits refused with what
changed; approval starts research; a failed planning phase shows why and can be retried."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from research import libraries, services
from research.models import ResearchRun
from research.report_templates import template_sections
from research.web.plan_editor import stored_initial
from tests.web.factories import awaiting_run, make_run, plan_data


def form_data(run: ResearchRun, **changes) -> dict[str, str]:
    """What the editor posts for the run's current plan, with ``changes`` applied."""
    plan = run.plan
    questions = changes.pop("questions", plan["questions"])
    initial = stored_initial(
        run.plan_contract,
        run.plan_version,
        extra_sections=template_sections(run.report_template),
        policy=run.policy_contract,
    )
    data = {
        "plan_version": str(run.plan_version),
        "base_plan": json.dumps(plan, sort_keys=True),
        "base_values": initial["base_values"],
        "objective": plan["objective"],
        "audience": plan.get("audience") or "",
        "assumptions": "\n".join(plan.get("assumptions", [])),
        "included_topics": "\n".join(plan["scope"].get("included_topics", [])),
        "excluded_topics": "\n".join(plan["scope"].get("excluded_topics", [])),
        "geographies": "\n".join(plan["scope"].get("geographies", [])),
        "timeframe_start": (plan["scope"].get("timeframe") or {}).get("start") or "",
        "timeframe_end": (plan["scope"].get("timeframe") or {}).get("end") or "",
        "sections": "\n".join(plan["deliverable"].get("requested_sections", [])),
        "decision_or_outcome": "",
        "contradictions_allowed": "on",
        "q-TOTAL_FORMS": str(len(questions)),
        "q-INITIAL_FORMS": str(len(questions)),
        "q-MIN_NUM_FORMS": "1",
        "q-MAX_NUM_FORMS": "30",
    }
    for index, question in enumerate(questions):
        data[f"q-{index}-id"] = question.get("id", "")
        data[f"q-{index}-text"] = question["text"]
        data[f"q-{index}-priority"] = question.get("priority", "required")
        if question.get("requires_primary"):
            data[f"q-{index}-requires_primary"] = "on"
    data.update(changes)
    return data


@pytest.fixture
def run(owner):
    return awaiting_run(owner, report_template="due_diligence")


def plan_url(run: ResearchRun) -> str:
    return reverse("research:run_plan", args=[run.pk])


def test_owner_sees_the_plan_as_an_editable_form(run, client_for):
    page = client_for(run.owner).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert 'class="plan-form"' in page
    for text in (
        "Estimate the size of the European heat-pump market in 2023.",
        "Energy policy analysts",
        "residential heat pumps",
        "industrial heat",
        "Figures are in euros.",
        "Sub-question number 2 about heat pumps?",
        "Approve and start research",
        "The whole web",  # source policy
        "Searches",  # budget summary
    ):
        assert text in page, text
    # The template's required sections are added to the deliverable.
    assert "Market size\nEntity and scope\nKey facts" in page


def test_viewer_sees_the_plan_read_only(run, team, viewer, client_for):
    run.team, run.visibility = team, ResearchRun.Visibility.TEAM
    run.save()
    page = client_for(viewer).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert "plan-form" not in page and "Approve and start research" not in page
    assert "Sub-question number 1 about heat pumps?" in page


def test_adding_a_sub_question_shows_an_empty_row_without_saving(run, client_for, htmx_headers):
    response = client_for(run.owner).post(
        plan_url(run), {**form_data(run), "op": "add"}, **htmx_headers
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert 'name="q-3-text"' in page and 'name="q-TOTAL_FORMS" value="4"' in page
    assert "Sub-question added" in page
    run.refresh_from_db()
    assert run.plan_version == 1


def test_moving_and_removing_sub_questions(run, client_for, htmx_headers):
    client = client_for(run.owner)
    moved = client.post(plan_url(run), {**form_data(run), "op": "down:0"}, **htmx_headers)
    page = moved.content.decode()
    assert page.index(">Sub-question number 2") < page.index(">Sub-question number 1")
    removed = client.post(plan_url(run), {**form_data(run), "op": "remove:1"}, **htmx_headers)
    assert ">Sub-question number 2" not in removed.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1


def test_saving_creates_a_new_version(run, client_for, htmx_headers):
    questions = [
        *run.plan["questions"],
        {"id": "", "text": "Who are the largest makers?", "priority": "required"},
    ]
    response = client_for(run.owner).post(
        plan_url(run),
        {**form_data(run, questions=questions, audience="Investors"), "op": "save"},
        **htmx_headers,
    )
    assert response.status_code == 200
    assert "Plan saved as version 2." in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 2
    assert run.plan["audience"] == "Investors"
    assert run.plan["questions"][-1] == {
        "id": "q4",
        "text": "Who are the largest makers?",
        "priority": "required",
        "rationale": "",
        "preferred_source_classes": [],
        "requires_primary": False,
    }
    assert run.plan["completion_criteria"]["required_question_ids"] == ["q1", "q4"]


def test_saving_an_unchanged_plan_keeps_the_version(owner, client_for, htmx_headers):
    run = awaiting_run(owner)
    response = client_for(owner).post(
        plan_url(run), {**form_data(run), "op": "save"}, **htmx_headers
    )
    assert "Nothing changed; the plan is still version 1." in response.content.decode()


def test_invalid_edit_is_refused_and_nothing_is_saved(run, client_for, htmx_headers):
    data = form_data(run, objective="  ", **{"q-1-text": ""})
    response = client_for(run.owner).post(plan_url(run), {**data, "op": "save"}, **htmx_headers)
    page = response.content.decode()
    assert response.status_code == 422
    assert "The plan needs an objective." in page
    assert "Sub-question 2: Write the sub-question, or remove it." in page
    run.refresh_from_db()
    assert run.plan_version == 1


def test_stale_edit_is_refused_showing_what_changed(run, editor, team, client_for, htmx_headers):
    run.team, run.visibility = team, ResearchRun.Visibility.TEAM
    run.save()
    stale = form_data(run, audience="My own audience")
    # Meanwhile someone else saves version 2 with a new sub-question and another objective.
    newer = plan_data()
    newer["objective"] = "Compare heat-pump markets in France and Germany."
    newer["questions"].append(
        {"id": "q4", "text": "What do installers charge?", "priority": "supporting"}
    )
    services.plan_update(run=run, plan=newer, expected_version=1)

    response = client_for(editor).post(plan_url(run), {**stale, "op": "save"}, **htmx_headers)
    page = response.content.decode()
    assert response.status_code == 409
    assert "Not saved: version 2 by the planner was saved while you edited version 1" in page
    assert "2 fields changed in it" in page
    assert "Compare heat-pump markets in France and Germany." in page
    assert "What do installers charge?" in page
    # The person's own edit is kept and theirs taken, now based on the current version.
    assert "Compare heat-pump markets in France and Germany.</textarea>" in page
    assert 'value="My own audience"' in page
    assert 'name="plan_version" value="2"' in page
    run.refresh_from_db()
    assert run.plan_version == 2 and run.plan["audience"] == "Energy policy analysts"


def test_approving_starts_research(run, client_for, htmx_headers):
    response = client_for(run.owner).post(
        plan_url(run), {**form_data(run), "op": "approve"}, **htmx_headers
    )
    page = response.content.decode()
    assert response.status_code == 200
    assert "Plan approved" in page
    assert 'id="run-header" class="run-header" data-status="queued" hx-swap-oob="true"' in page
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.QUEUED and run.approved_at is not None
    assert run.plan_version == 1  # unchanged: the version the person saw was approved


def test_approving_saves_the_edits_shown_in_the_form(owner, client_for):
    run = awaiting_run(owner)
    data = form_data(run, objective="A sharper objective.")
    response = client_for(owner).post(plan_url(run), {**data, "op": "approve"})
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.QUEUED
    assert run.plan_version == 2 and run.plan["objective"] == "A sharper objective."


def test_approving_a_stale_plan_is_refused(run, client_for, htmx_headers):
    data = form_data(run)
    newer = plan_data(objective="Another objective entirely.")
    services.plan_update(run=run, plan=newer, expected_version=1)
    response = client_for(run.owner).post(plan_url(run), {**data, "op": "approve"}, **htmx_headers)
    assert response.status_code == 409
    page = response.content.decode()
    assert 'data-field="objective"' in page and "Another objective entirely." in page
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.AWAITING_APPROVAL


def test_plan_that_is_no_longer_awaiting_approval_cannot_be_edited(run, client_for, htmx_headers):
    data = form_data(run, audience="Late edit")
    services.run_cancel(run=run)
    response = client_for(run.owner).post(plan_url(run), {**data, "op": "save"}, **htmx_headers)
    page = response.content.decode()
    assert response.status_code == 409
    assert "cannot be edited" in page
    assert "plan-form" not in page


def test_planning_failure_shows_the_reason_and_a_retry_button(owner, client_for):
    run = make_run(
        owner,
        status=ResearchRun.Status.FAILED,
        resume_phase=ResearchRun.Status.PLANNING,
        last_error="The research plan could not be drafted: the model endpoint timed out.",
    )
    client = client_for(owner)
    page = client.get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert "The plan could not be drafted." in page
    assert "the model endpoint timed out" in page
    assert "Retry planning" in page
    response = client.post(reverse("research:run_control", args=[run.pk, "retry"]))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.PLANNING and run.last_error == ""


def test_plan_being_drafted_says_so(owner, client_for):
    run = make_run(owner, status=ResearchRun.Status.PLANNING)
    page = client_for(owner).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert "Drafting the research plan…" in page


def test_report_template_sections_are_saved_when_the_plan_is_approved(run, client_for):
    client = client_for(run.owner)
    editor = client.get(reverse("research:run_detail", args=[run.pk])).context["editor"]
    data = form_data(run, sections=editor.form.initial["sections"])
    client.post(plan_url(run), {**data, "op": "approve"})
    run.refresh_from_db()
    assert run.status == ResearchRun.Status.QUEUED and run.plan_version == 2
    assert run.plan["deliverable"]["requested_sections"] == [
        "Market size",
        "Entity and scope",
        "Key facts",
        "Risks and gaps",
        "Items to verify",
        "Recommendation",
    ]


def test_source_policy_is_editable_until_approval_and_saved_as_a_new_version(run, client_for):
    response = client_for(run.owner).post(
        plan_url(run),
        form_data(run, source_mode="only_domains", domains="Stats.example.org\niea.org"),
    )
    assert response.status_code in (200, 302)
    run.refresh_from_db()
    assert run.plan_version == 2
    assert run.source_policy["mode"] == "only_domains"
    assert run.source_policy["domains"] == ["stats.example.org", "iea.org"]


def test_editing_the_web_controls_keeps_the_runs_documents(run, client_for):
    library = libraries.library_create(user=run.owner, name="Mine")
    policy = {"documents": "library", "library_id": library.address_id, "web": False}
    ResearchRun.objects.filter(pk=run.pk).update(source_policy=policy)
    run.refresh_from_db()
    client_for(run.owner).post(
        plan_url(run), form_data(run, source_mode="full_web", excluded_domains="spam.example")
    )
    run.refresh_from_db()
    assert run.source_policy["excluded_domains"] == ["spam.example"]
    assert (run.source_policy["documents"], run.source_policy["web"]) == ("library", False)
    assert run.source_policy["library_id"] == library.address_id


def test_a_malformed_domain_in_plan_review_is_refused_and_changes_nothing(run, client_for):
    run.refresh_from_db()
    before = (run.plan_version, run.source_policy)
    response = client_for(run.owner).post(
        plan_url(run), form_data(run, source_mode="prefer_domains", domains="not a domain!")
    )
    assert response.status_code == 422
    assert "domain" in response.content.decode().lower()
    run.refresh_from_db()
    assert (run.plan_version, run.source_policy) == before


def test_plan_review_keeps_ip_addresses_and_explains_a_malformed_one(run, client_for):
    client = client_for(run.owner)
    response = client.post(
        plan_url(run),
        form_data(run, source_mode="prefer_domains", domains="10.0.0.5 [fd00::1]:8443 [fd00::zz]"),
    )
    assert response.status_code == 422
    assert "“[fd00::zz]” is not a valid IPv6 address." in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1

    response = client.post(
        plan_url(run),
        form_data(run, source_mode="prefer_domains", domains="10.0.0.5 [fd00::1]:8443"),
    )
    assert response.status_code in (200, 302)
    run.refresh_from_db()
    assert run.source_policy["domains"] == ["10.0.0.5", "[fd00::1]:8443"]


def test_only_domains_without_domains_is_refused(run, client_for):
    response = client_for(run.owner).post(plan_url(run), form_data(run, source_mode="only_domains"))
    assert "at least one domain" in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1
