"""Run creation and the controls the UI and API call (lifecycle rules, compare-and-set)."""

from datetime import timedelta

import pytest
from django.utils import timezone

from research import services
from research.engine.guards import budget_for
from research.models import ResearchRun, ResearchStep
from tests.conftest import make_run

PLAN = {
    "objective": "Size the European heat-pump market",
    "questions": [
        {"id": "q1", "text": "How many heat pumps were sold in 2023?", "priority": "required"},
        {"id": "q2", "text": "Which countries lead?", "priority": "supporting"},
    ],
}


def awaiting(owner, **fields) -> ResearchRun:
    return make_run(owner, status="awaiting_approval", plan=PLAN, plan_version=1, **fields)


def test_run_create_sets_budget_policy_and_enqueues_planning(
    owner, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks() as callbacks:
        run = services.run_create(
            owner=owner,
            question="  How big is the heat-pump market?  ",
            depth="quick",
            source_policy={"mode": "prefer_domains", "domains": ["IEA.org"]},
        )
    assert run.question == "How big is the heat-pump market?"
    assert run.status == "created"
    assert run.budget["searches"] == budget_for("quick").searches
    assert run.source_policy["domains"] == ["iea.org"]
    assert len(callbacks) == 1


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"question": "   "}, "Write the question"),
        ({"question": "x" * 5000}, "too long"),
        ({"question": "q", "depth": "deep"}, "not a depth"),
        (
            {
                "question": "q",
                "source_policy": {"mode": "only_domains", "domains": ["not a domain"]},
            },
            "source controls",
        ),
        ({"question": "q", "visibility": "team"}, "Choose a team"),
    ],
)
def test_run_create_refuses_bad_input_with_a_sentence(owner, kwargs, message):
    with pytest.raises(services.RunActionError, match=message):
        services.run_create(owner=owner, **kwargs)
    assert not ResearchRun.objects.exists()


def test_run_create_refuses_depth_above_the_deployment_cap(owner, settings):
    settings.RESEARCH_MAX_DEPTH = "standard"
    with pytest.raises(services.RunActionError, match="up to “standard”"):
        services.run_create(owner=owner, question="q", depth="thorough")


def test_run_create_refuses_a_team_the_owner_is_not_in(outsider, team):
    with pytest.raises(services.RunActionError, match="team you belong to"):
        services.run_create(owner=outsider, question="q", team=team, visibility="team")


def test_same_client_request_id_creates_one_run(owner):
    first = services.run_create(owner=owner, question="q", client_request_id="abc")
    second = services.run_create(owner=owner, question="q", client_request_id="abc")
    assert first.pk == second.pk


def test_plan_edit_creates_a_new_version(owner):
    run = awaiting(owner)
    edited = {**PLAN, "objective": "Size the EU heat-pump market by country"}
    run = services.plan_update(run=run, plan=edited, expected_version=1)
    assert run.plan_version == 2
    assert run.plan["objective"].endswith("by country")


def test_stale_plan_edit_is_refused_with_what_changed(owner):
    run = awaiting(owner)
    services.plan_update(run=run, plan={**PLAN, "objective": "first edit"}, expected_version=1)
    with pytest.raises(services.PlanVersionConflict) as excinfo:
        services.plan_update(run=run, plan={**PLAN, "objective": "second edit"}, expected_version=1)
    assert excinfo.value.current == 2
    assert excinfo.value.current_plan["objective"] == "first edit"
    assert "version 1" in str(excinfo.value) and "version 2" in str(excinfo.value)
    run.refresh_from_db()
    assert run.plan["objective"] == "first edit"


def test_invalid_plan_edit_names_the_field_and_keeps_the_plan(owner):
    run = awaiting(owner)
    with pytest.raises(services.RunActionError, match="questions"):
        services.plan_update(run=run, plan={**PLAN, "questions": []}, expected_version=1)
    run.refresh_from_db()
    assert run.plan_version == 1


def test_approve_needs_the_current_version(owner, django_capture_on_commit_callbacks):
    run = awaiting(owner)
    with pytest.raises(services.PlanVersionConflict):
        services.plan_approve(run=run, expected_version=0)
    with django_capture_on_commit_callbacks() as callbacks:
        services.plan_approve(run=run, expected_version=1)
    assert run.status == "queued"
    assert run.approved_at is not None
    assert len(callbacks) == 1


def test_approving_twice_is_refused(owner):
    run = awaiting(owner)
    services.plan_approve(run=run, expected_version=1)
    with pytest.raises(services.RunActionError, match="queued cannot be approved"):
        services.plan_approve(run=run, expected_version=1)


def test_pause_of_a_waiting_run_is_immediate_and_resume_returns(
    owner, django_capture_on_commit_callbacks
):
    run = make_run(owner, status="queued")
    services.run_pause(run=run)
    assert (run.status, run.resume_phase) == ("paused", "queued")
    with django_capture_on_commit_callbacks() as callbacks:
        services.run_resume(run=run)
    assert run.status == "queued"
    assert len(callbacks) == 1


def test_pause_of_a_working_run_sets_the_durable_flag(owner):
    run = make_run(
        owner,
        status="researching",
        lease_owner="worker-1",
        lease_expires_at=timezone.now() + timedelta(minutes=1),
    )
    services.run_pause(run=run)
    assert run.status == "researching"
    assert run.pause_requested


def test_pause_is_refused_when_it_means_nothing(owner):
    run = make_run(owner, status="failed")
    with pytest.raises(services.RunActionError, match="failed cannot be paused"):
        services.run_pause(run=run)


def test_cancel_of_an_idle_run_is_terminal_and_cancels_pending_steps(owner):
    run = make_run(owner, status="paused", resume_phase="queued")
    step = ResearchStep.objects.create(run=run, kind="search", dedupe_key="s1")
    services.run_cancel(run=run)
    assert run.status == "cancelled"
    assert run.completed_at is not None
    step.refresh_from_db()
    assert step.status == "cancelled"
    with pytest.raises(services.RunActionError):
        services.run_cancel(run=run)


def test_cancel_of_a_working_run_asks_the_worker(owner):
    run = make_run(
        owner,
        status="researching",
        lease_owner="worker-1",
        lease_expires_at=timezone.now() + timedelta(minutes=1),
    )
    services.run_cancel(run=run)
    assert run.status == "researching" and run.cancel_requested


def test_refine_of_a_completed_run_starts_a_new_linked_run(owner):
    run = make_run(owner, status="completed", plan=PLAN, plan_version=3)
    child = services.run_refine(run=run, instruction="Focus on Germany", user=owner)
    assert child.pk != run.pk
    assert child.parent_run == run
    assert child.refinement_instruction == "Focus on Germany"
    run.refresh_from_db()
    assert run.status == "completed"


def test_refine_while_researching_asks_for_a_pause(owner):
    run = make_run(owner, status="researching")
    services.run_refine(run=run, instruction="Only after 2020", user=owner)
    assert run.pause_requested and run.refinement_instruction == "Only after 2020"


def test_refine_needs_an_instruction(owner):
    with pytest.raises(services.RunActionError, match="how the research should change"):
        services.run_refine(run=awaiting(owner), instruction=" ", user=owner)


def test_retry_restarts_only_the_failed_phase(owner):
    run = make_run(owner, status="failed", resume_phase="synthesizing", last_error="model down")
    services.run_retry(run=run)
    assert run.status == "synthesizing"
    assert run.last_error == ""


def test_budget_increase_requeues_an_exhausted_run(owner):
    run = make_run(
        owner,
        status="budget_exhausted",
        depth="quick",
        budget=budget_for("quick").model_dump(mode="json"),
    )
    services.budget_increase(run=run)
    assert run.status == "queued"
    assert run.budget["searches"] == int(budget_for("quick").searches * 1.5)


def test_budget_increase_only_when_exhausted(owner):
    with pytest.raises(services.RunActionError, match="more budget"):
        services.budget_increase(run=make_run(owner, status="queued"))


def test_queue_position_counts_earlier_approved_runs(owner, outsider):
    now = timezone.now()
    first = make_run(outsider, status="queued", approved_at=now - timedelta(minutes=2))
    second = make_run(owner, status="queued", approved_at=now - timedelta(minutes=1))
    assert services.queue_position(first) == 1
    assert services.queue_position(second) == 2
    assert services.queue_position(make_run(owner)) is None


def test_link_sharing_mints_a_token_and_private_drops_it(owner, team):
    run = make_run(owner)
    services.sharing_update(run=run, visibility="link", team=team)
    assert run.share_token
    services.sharing_update(run=run, visibility="private", team=None)
    assert run.share_token is None
