import uuid

import pytest
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from tests.conftest import make_run

HASH_A = "a" * 64
HASH_B = "b" * 64


def make_source(run: ResearchRun, url_hash: str | None = HASH_A, **fields) -> ResearchSource:
    return ResearchSource.objects.create(
        run=run,
        url=fields.pop("url", "https://example.org/a"),
        canonical_url_hash=url_hash,
        snapshot_text=fields.pop("snapshot_text", "Heat pumps sold: 2.6 million in 2023."),
        **fields,
    )


def make_evidence(
    source: ResearchSource, evidence_hash: str = HASH_A, **fields
) -> ResearchEvidence:
    return ResearchEvidence.objects.create(
        id=fields.pop("id", f"ev-{uuid.uuid4().hex[:20]}"),
        run=source.run,
        source=source,
        excerpt=fields.pop("excerpt", "2.6 million in 2023"),
        locator=fields.pop(
            "locator", {"kind": "html", "start": 17, "end": 36, "snapshot_hash": HASH_B}
        ),
        evidence_hash=evidence_hash,
        **fields,
    )


def test_duplicate_canonical_url_hash_in_one_run_is_refused(private_run):
    make_source(private_run)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_source(private_run, url="https://example.org/a?utm_source=x")


def test_same_canonical_url_hash_in_two_runs_is_fine(owner, private_run):
    other_run = make_run(owner)
    make_source(private_run)
    make_source(other_run)
    assert ResearchSource.objects.filter(canonical_url_hash=HASH_A).count() == 2


def test_many_sources_without_canonical_hash_are_allowed(private_run):
    make_source(private_run, url_hash=None)
    make_source(private_run, url_hash=None)
    assert private_run.sources.count() == 2


def test_duplicate_evidence_hash_in_one_run_is_refused(private_run):
    source = make_source(private_run)
    make_evidence(source)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_evidence(source)


def test_same_evidence_hash_in_two_runs_is_fine(owner, private_run):
    make_evidence(make_source(private_run))
    make_evidence(make_source(make_run(owner)))
    assert ResearchEvidence.objects.filter(evidence_hash=HASH_A).count() == 2


def test_duplicate_step_dedupe_key_in_one_run_is_refused(owner, private_run):
    ResearchStep.objects.create(run=private_run, kind="search", dedupe_key="search:gdp france")
    with pytest.raises(IntegrityError), transaction.atomic():
        ResearchStep.objects.create(run=private_run, kind="search", dedupe_key="search:gdp france")
    ResearchStep.objects.create(run=make_run(owner), kind="search", dedupe_key="search:gdp france")


def test_excerpt_longer_than_1000_characters_is_refused_by_the_database(private_run):
    source = make_source(private_run)
    with pytest.raises(IntegrityError), transaction.atomic():
        make_evidence(source, excerpt="x" * 1001)


def test_team_visibility_without_team_is_refused_by_the_database(owner):
    with pytest.raises(IntegrityError), transaction.atomic():
        ResearchRun.objects.create(owner=owner, question="q", visibility="team")


def test_link_visibility_without_token_is_refused_by_the_database(owner):
    with pytest.raises(IntegrityError), transaction.atomic():
        ResearchRun.objects.create(owner=owner, question="q", visibility="link")


def test_invalid_source_policy_is_refused_naming_the_field(owner):
    with pytest.raises(ValidationError) as excinfo, transaction.atomic():
        ResearchRun.objects.create(
            owner=owner, question="q", source_policy={"mode": "anything_goes"}
        )
    assert "source_policy" in str(excinfo.value)
    assert "mode" in str(excinfo.value)
    assert not ResearchRun.objects.exists()


def test_schema_validation_also_guards_queryset_update(private_run):
    with pytest.raises(ValidationError) as excinfo:
        ResearchRun.objects.filter(pk=private_run.pk).update(budget={"searches": "many"})
    assert "budget" in str(excinfo.value)


def test_json_fields_are_stored_with_schema_defaults(owner):
    run = ResearchRun.objects.create(
        owner=owner,
        question="q",
        source_policy={"mode": "only_domains", "domains": ["Example.ORG"]},
    )
    run.refresh_from_db()
    assert run.source_policy["mode"] == "only_domains"
    assert run.source_policy["domains"] == ["example.org"]
    assert run.source_policy["schema_version"] >= 1


def test_invalid_locator_is_refused(private_run):
    source = make_source(private_run)
    with pytest.raises(ValidationError) as excinfo:
        make_evidence(source, locator={"kind": "html", "start": "here"})
    assert "locator" in str(excinfo.value)


def test_run_statuses_match_the_engine_lifecycle():
    from research.engine import states

    assert set(ResearchRun.Status.values) == {str(s) for s in states.RunStatus}


def test_step_kinds_and_statuses_match_the_engine_contracts():
    from typing import get_args

    from research.engine.contracts import SourceStatus, StepRecord, StepStatus

    assert set(ResearchStep.Status.values) == set(get_args(StepStatus))
    assert set(ResearchStep.Kind.values) == set(
        get_args(StepRecord.model_fields["kind"].annotation)
    )
    assert set(ResearchSource.Status.values) == set(get_args(SourceStatus))


def test_source_classes_match_the_engine_contracts():
    from typing import get_args

    from research.engine.contracts import SourceClass as EngineSourceClass
    from research.models import SourceClass

    assert set(SourceClass.values) == set(get_args(EngineSourceClass))


def test_the_outcome_migration_copies_stop_reasons_runs_kept_in_their_working_state(owner):
    from importlib import import_module

    from django.apps import apps

    migration = import_module("research.migrations.0002_run_outcome")
    dry = make_run(
        owner, status="budget_exhausted", working_state={"stop_reason": "diminishing_returns"}
    )
    # A failure used to keep its sentence there: that is not a stop reason.
    failed = make_run(
        owner, status="failed", working_state={"stop_reason": "The decision model failed: x."}
    )
    paused = make_run(owner, status="paused", working_state={"stop_reason": "budget_exhausted"})

    migration.copy_stop_reasons(apps, None)

    stored = dict(ResearchRun.objects.values_list("pk", "stop_reason"))
    assert stored == {dry.pk: "diminishing_returns", failed.pk: "", paused.pk: ""}
