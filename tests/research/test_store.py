"""The Django Store: idempotent steps, sources and evidence; compare-and-set; leases."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from research.engine.contracts import (
    Evidence,
    Heading,
    PageSpan,
    SearchCandidate,
    SourceDocument,
    SourceQuality,
    TextLocator,
    Usage,
    WorkingState,
)
from research.engine.ledger import evidence_hash, evidence_id_for, snapshot_content_hash
from research.engine.ports import LeaseLost
from research.engine.states import IllegalTransition
from research.engine.urls import url_hash
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.worker.leases import claim_run
from research.worker.store import DjangoStore
from tests.conftest import make_run

TEXT = "Sales\nHeat pumps sold in 2023: 2.6 million units across Europe.\nOutlook\nGrowth slowed."


@pytest.fixture
def run(owner):
    return make_run(owner, status="researching")


@pytest.fixture
def store():
    return DjangoStore()


def candidates(*urls: str) -> list[SearchCandidate]:
    return [
        SearchCandidate(url=url, title=f"Page {i}", provider="searxng", rank=i)
        for i, url in enumerate(urls, start=1)
    ]


def document(url: str = "https://stats.example.org/heat") -> SourceDocument:
    return SourceDocument(
        requested_url=url,
        final_url=url,
        canonical_url=url,
        canonical_url_hash=url_hash(url),
        content_hash=snapshot_content_hash(TEXT),
        mime_type="text/html",
        kind="html",
        title="Heat pump statistics",
        publisher="Stats Office",
        text=TEXT,
        headings=[
            Heading(offset=0, level=2, text="Sales"),
            Heading(offset=62, level=2, text="Outlook"),
        ],
        pages=[PageSpan(page=1, start=0, end=len(TEXT))],
        content_bytes=len(TEXT),
        retrieved_at=datetime(2026, 11, 1, tzinfo=UTC),
    )


def evidence_for(run, source_id: str, excerpt: str = "2.6 million units") -> Evidence:
    digest = evidence_hash(str(run.pk), source_id, excerpt, "eu_sales_2023")
    start = TEXT.index(excerpt)
    return Evidence(
        id=evidence_id_for(digest),
        run_id=str(run.pk),
        source_id=source_id,
        excerpt=excerpt,
        locator=TextLocator(
            kind="html",
            start=start,
            end=start + len(excerpt),
            heading="Sales",
            snapshot_hash="c" * 64,
        ),
        question_ids=["q1"],
        stance="supports",
        claim_key="eu_sales_2023",
        relevance_bp=8000,
        confidence_bp=7000,
        evidence_hash=digest,
    )


def test_begin_step_is_idempotent_by_dedupe_key(store, run):
    first = store.begin_step(
        str(run.pk), kind="search", dedupe_key="search:heat pumps", rationale="start"
    )
    again = store.begin_step(str(run.pk), kind="search", dedupe_key="search:heat pumps")
    assert first.id == again.id
    assert ResearchStep.objects.filter(run=run).count() == 1
    assert again.rationale == "start"


def test_start_step_counts_attempts(store, run):
    step = store.begin_step(str(run.pk), kind="read", dedupe_key="read:s1")
    store.start_step(step.id)
    store.start_step(step.id)
    row = ResearchStep.objects.get(pk=step.id)
    assert (row.status, row.attempt) == ("running", 2)


def test_retried_search_never_duplicates_sources(store, run):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    urls = ("https://stats.example.org/heat?utm_source=x", "https://news.example.com/a")
    first = store.record_candidates(str(run.pk), step_id=step.id, candidates=candidates(*urls))
    again = store.record_candidates(
        str(run.pk),
        step_id=step.id,
        candidates=candidates("https://STATS.example.org/heat#top", urls[1]),
    )
    assert [s.id for s in first] == [s.id for s in again]
    assert ResearchSource.objects.filter(run=run).count() == 2
    assert ResearchStep.objects.get(pk=step.id).status == "succeeded"


def test_every_search_that_returns_a_source_records_its_rank_once(store, run):
    urls = ("https://stats.example.org/heat", "https://news.example.com/a")
    first = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q1")
    store.record_candidates(str(run.pk), step_id=first.id, candidates=candidates(*urls))
    second = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q2")
    for _ in range(2):  # a retried search is still one search
        store.record_candidates(
            str(run.pk), step_id=second.id, candidates=candidates(urls[1], urls[0])
        )
    ranks = {s.url: s.search_ranks for s in store.list_sources(str(run.pk))}
    assert ranks[urls[0]] == [1, 2]
    assert ranks[urls[1]] == [2, 1]


def test_search_output_is_stored_with_the_step_and_read_back(store, run):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    output = {"results": 3, "kept": 1, "dropped": {"private address not allowed": 2}}
    store.record_candidates(
        str(run.pk),
        step_id=step.id,
        candidates=candidates("https://ok.example.org/"),
        summary="3 results; 2 dropped: private address not allowed",
        output=output,
    )
    assert ResearchStep.objects.get(pk=step.id).output == output
    (listed,) = store.list_steps(str(run.pk))
    assert listed.output == output
    assert listed.summary == "3 results; 2 dropped: private address not allowed"


def test_non_web_candidates_are_skipped(store, run):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    recorded = store.record_candidates(
        str(run.pk),
        step_id=step.id,
        candidates=candidates("ftp://files.example.org/x", "https://ok.example.org/"),
    )
    assert [s.url for s in recorded] == ["https://ok.example.org/"]


def test_acquired_snapshot_round_trips_with_headings_and_pages(store, run):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    (source,) = store.record_candidates(
        str(run.pk), step_id=step.id, candidates=candidates("https://stats.example.org/heat")
    )
    quality = SourceQuality(source_class="official", authority="high")
    record = store.record_acquisition(str(run.pk), source.id, document=document(), quality=quality)
    assert record.status == "fetched" and record.quality.source_class == "official"
    loaded = store.load_snapshot(str(run.pk), source.id)
    assert loaded.text == TEXT
    assert [h.text for h in loaded.headings] == ["Sales", "Outlook"]
    assert loaded.pages[0].end == len(TEXT)
    assert ResearchSource.objects.get(pk=source.id).source_class == "official"


def test_failure_is_recorded_with_its_reason(store, run):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    (source,) = store.record_candidates(
        str(run.pk), step_id=step.id, candidates=candidates("https://x.example.org/")
    )
    record = store.record_failure(
        str(run.pk), source.id, kind="blocked", reason="The address is private."
    )
    assert (record.status, record.status_reason) == ("blocked", "The address is private.")
    assert store.load_snapshot(str(run.pk), source.id) is None


def test_evidence_insert_is_idempotent_and_foreign_evidence_is_ignored(store, run, owner):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    (source,) = store.record_candidates(
        str(run.pk), step_id=step.id, candidates=candidates("https://stats.example.org/heat")
    )
    store.record_acquisition(str(run.pk), source.id, document=document(), quality=SourceQuality())
    item = evidence_for(run, source.id)
    assert store.add_evidence(str(run.pk), step_id=step.id, evidence=[item]) == [item]
    assert store.add_evidence(str(run.pk), step_id=step.id, evidence=[item]) == []
    other = make_run(owner)
    foreign = evidence_for(other, source.id, "Growth slowed")
    assert store.add_evidence(str(run.pk), step_id=step.id, evidence=[foreign]) == []
    assert [e.id for e in store.list_evidence(str(run.pk))] == [item.id]


def test_out_of_scope_evidence_is_kept_but_not_listed(store, run):
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    (source,) = store.record_candidates(
        str(run.pk), step_id=step.id, candidates=candidates("https://stats.example.org/heat")
    )
    store.record_acquisition(str(run.pk), source.id, document=document(), quality=SourceQuality())
    store.add_evidence(str(run.pk), step_id=step.id, evidence=[evidence_for(run, source.id)])
    assert store.mark_out_of_scope(str(run.pk), question_ids_kept=["q2"]) == 1
    assert store.list_evidence(str(run.pk)) == []
    assert ResearchEvidence.objects.filter(run=run, out_of_scope=True).count() == 1


def test_transition_is_compare_and_set(store, run):
    assert not store.transition(str(run.pk), expected="queued", to="researching")
    assert store.transition(
        str(run.pk), expected="researching", to="paused", reason="Paused by a user."
    )
    run.refresh_from_db()
    assert (run.status, run.resume_phase) == ("paused", "researching")
    with pytest.raises(IllegalTransition):
        store.transition(str(run.pk), expected="paused", to="completed")


def test_failure_records_the_phase_to_retry(store, run):
    store.transition(
        str(run.pk), expected="researching", to="failed", reason="Every search provider failed."
    )
    run.refresh_from_db()
    assert (run.resume_phase, run.last_error) == ("researching", "Every search provider failed.")


def test_cancel_cancels_unfinished_steps(store, run):
    step = store.begin_step(str(run.pk), kind="read", dedupe_key="read:x")
    store.transition(
        str(run.pk), expected="researching", to="cancelled", reason="Cancelled by a user."
    )
    assert ResearchStep.objects.get(pk=step.id).status == "cancelled"


def test_checkpoint_stores_state_and_usage(store, run):
    store.save_checkpoint(
        str(run.pk), state=WorkingState(iteration=3), usage=Usage(searches=2, model_calls=5)
    )
    snapshot = store.load_run(str(run.pk))
    assert snapshot.state.iteration == 3
    assert (snapshot.usage.searches, snapshot.usage.model_calls) == (2, 5)


def test_worker_that_lost_its_lease_writes_nothing(run):
    assert claim_run(run.pk, "worker-a", needs_slot=False)
    store = DjangoStore(lease_owner="worker-a")
    step = store.begin_step(str(run.pk), kind="search", dedupe_key="search:q")
    ResearchRun.objects.filter(pk=run.pk).update(
        lease_expires_at=timezone.now() - timedelta(seconds=1)
    )
    assert claim_run(run.pk, "worker-b", needs_slot=False)
    with pytest.raises(LeaseLost):
        store.begin_step(str(run.pk), kind="search", dedupe_key="search:other")
    with pytest.raises(LeaseLost):
        store.record_candidates(
            str(run.pk), step_id=step.id, candidates=candidates("https://a.example.org/")
        )
    with pytest.raises(LeaseLost):
        store.transition(str(run.pk), expected="researching", to="synthesizing")
    with pytest.raises(LeaseLost):
        store.heartbeat(str(run.pk))
    assert ResearchStep.objects.filter(run=run).count() == 1
    assert not ResearchSource.objects.filter(run=run).exists()
    run.refresh_from_db()
    assert run.status == "researching"
