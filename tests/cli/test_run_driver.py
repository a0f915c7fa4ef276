"""The in-process driver takes a worker's lease, so no worker runs its run at the same time."""

from __future__ import annotations

import threading

import pytest
from django.test import override_settings

from research import services
from research.cli.run_driver import RunDriver
from research.models import ResearchRun, ResearchStep
from research.worker.actors import advance_run
from research.worker.leases import claim_run, release_lease

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "How many weekday boardings did the Harwick Metro Line 3 extension record?"


@pytest.fixture
def frozen(web):
    with override_settings(**web.django_settings()):
        yield web


def test_a_worker_leaves_a_run_the_driver_has_just_created(owner, frozen):
    driver = RunDriver()
    run = driver.take(lambda: services.run_create(owner=owner, question=QUESTION, depth="quick"))

    advance_run(str(run.pk))  # the message run_create sent on commit, delivered at once

    run.refresh_from_db()
    assert run.status == "created" and run.lease_owner == driver.owner
    assert not ResearchStep.objects.filter(run=run).exists()
    assert driver.run() == "awaiting_approval"
    run.refresh_from_db()
    assert not run.lease_owner  # released while the plan waits for a person


def test_the_driver_follows_a_run_another_worker_holds_and_takes_it_when_free(owner, frozen):
    run = services.run_create(owner=owner, question=QUESTION, depth="quick")
    assert claim_run(run.pk, "another-worker", needs_slot=False)
    driver = RunDriver(run_id=str(run.pk), poll_seconds=0.05)
    outcome: list[str] = []
    thread = threading.Thread(target=lambda: outcome.append(driver.run()))
    thread.start()

    assert driver.followed_another_worker.wait(5)
    assert ResearchRun.objects.get(pk=run.pk).status == "created"
    release_lease(run.pk, "another-worker")
    thread.join(30)

    assert outcome == ["awaiting_approval"]


def test_research_runs_to_a_report_under_the_drivers_lease(owner, frozen):
    driver = RunDriver()
    run = driver.take(lambda: services.run_create(owner=owner, question=QUESTION, depth="quick"))
    driver.run()
    run.refresh_from_db()

    run = driver.take(lambda: services.plan_approve(run=run, expected_version=run.plan_version))

    assert run.lease_owner == driver.owner  # claimed in the approval's own transaction
    assert driver.run() == "completed"
    run.refresh_from_db()
    assert run.report and not run.lease_owner
