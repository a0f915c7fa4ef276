from datetime import timedelta

from django.utils import timezone

from research.models import ResearchRun
from research.worker.leases import claim_run, release_lease, renew_lease, stale_runs
from tests.conftest import make_run


def holds_lease(run_id: object, owner: str) -> bool:
    """Whether ``owner`` holds an unexpired lease on the run, read from its row."""
    return ResearchRun.objects.filter(
        pk=run_id, lease_owner=owner, lease_expires_at__gt=timezone.now()
    ).exists()


def test_only_one_worker_claims_a_run(owner):
    run = make_run(owner, status="queued")
    assert claim_run(run.pk, "worker-a", needs_slot=True)
    assert not claim_run(run.pk, "worker-b", needs_slot=True)
    assert holds_lease(run.pk, "worker-a")
    assert not holds_lease(run.pk, "worker-b")


def test_expired_lease_can_be_taken_over_and_the_old_owner_cannot_renew(owner):
    run = make_run(owner, status="researching")
    assert claim_run(run.pk, "worker-a", needs_slot=False)
    ResearchRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert claim_run(run.pk, "worker-b", needs_slot=False)
    assert not renew_lease(run.pk, "worker-a")
    assert renew_lease(run.pk, "worker-b")


def test_released_lease_is_free(owner):
    run = make_run(owner, status="queued")
    claim_run(run.pk, "worker-a", needs_slot=True)
    release_lease(run.pk, "worker-a")
    assert claim_run(run.pk, "worker-b", needs_slot=True)


def test_terminal_runs_are_never_claimed(owner):
    for status in ("completed", "cancelled", "failed", "budget_exhausted"):
        run = make_run(owner, status=status)
        assert not claim_run(run.pk, "worker-a", needs_slot=False)


def test_per_user_limit_keeps_extra_runs_queued(owner, outsider, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS_PER_USER = 1
    first, second = make_run(owner, status="queued"), make_run(owner, status="queued")
    assert claim_run(first.pk, "w1", needs_slot=True)
    assert not claim_run(second.pk, "w2", needs_slot=True)
    assert claim_run(make_run(outsider, status="queued").pk, "w3", needs_slot=True)
    release_lease(first.pk, "w1")
    assert claim_run(second.pk, "w2", needs_slot=True)


def test_deployment_limit_counts_every_user(owner, outsider, settings):
    settings.RESEARCH_MAX_ACTIVE_RUNS = 1
    assert claim_run(make_run(owner, status="queued").pk, "w1", needs_slot=True)
    assert not claim_run(make_run(outsider, status="queued").pk, "w2", needs_slot=True)


def test_reaper_finds_expired_and_forgotten_runs_only(owner):
    past = timezone.now() - timedelta(hours=1)
    expired = make_run(owner, status="researching", lease_owner="dead", lease_expires_at=past)
    live = make_run(
        owner,
        status="researching",
        lease_owner="alive",
        lease_expires_at=timezone.now() + timedelta(minutes=1),
    )
    forgotten = make_run(owner, status="queued")
    fresh = make_run(owner, status="queued")
    ResearchRun.objects.filter(pk=forgotten.pk).update(updated_at=past)
    make_run(owner, status="completed")
    found = set(stale_runs())
    assert str(expired.pk) in found and str(forgotten.pk) in found
    assert str(live.pk) not in found and str(fresh.pk) not in found
