"""One self-contained JSON document per run, so an outside harness can score it.

The document carries what a reader of the report needs to check it without the database:
the plan, the validated report, every citation resolved to its evidence excerpt, locator
and source, the text the locator points at in the stored snapshot, every source with its
independence cluster, usage and the step log. ``python manage.py research --format json``
prints it and ``evals`` scores it; neither trusts the engine's own bookkeeping for the
checks it can redo from these facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from research.engine.citations import number_citations, render_markdown
from research.engine.contracts import Report, SourceRecord, SourceSummary
from research.engine.ledger import assign_independence_clusters, snapshot_content_hash
from research.engine.steps import StepInput
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep
from research.worker.store import DjangoStore, evidence_from_row

DOCUMENT_SCHEMA = "deep-research/run-document"
DOCUMENT_VERSION = 1


def _iso(value: Any) -> str | None:
    return value.isoformat() if value is not None else None


def source_summaries(sources: Iterable[ResearchSource]) -> dict[str, SourceSummary]:
    """Source metadata as the report renderer wants it, keyed by source id."""
    return {str(source.pk): source.summary() for source in sources}


def render_run_markdown(run: ResearchRun) -> str | None:
    """The run's validated report as Markdown, or ``None`` while it has none."""
    if not run.report:
        return None
    report = Report.model_validate(run.report)
    rows = ResearchEvidence.objects.filter(run=run)
    evidence = {row.pk: evidence_from_row(row) for row in rows}
    sources = source_summaries(
        ResearchSource.objects.filter(run=run).defer("snapshot_text", "snapshot_blocks")
    )
    return render_markdown(report, evidence=evidence, sources=sources)


def _step_entry(step: ResearchStep, urls: dict[str, str]) -> dict[str, Any]:
    stored = StepInput.read(step.input)
    payload = stored.payload
    source_id = payload.target_source_id
    return {
        "id": str(step.pk),
        "kind": step.kind,
        "status": step.status,
        "iteration": step.iteration,
        "attempt": step.attempt,
        "query": payload.target_query or None,
        "url": payload.url or urls.get(source_id),
        "source_id": source_id or None,
        "refused": payload.refused,
        "rationale": stored.rationale,
        "summary": step.summary,
        "error": step.error,
        "started_at": _iso(step.started_at),
        "completed_at": _iso(step.completed_at),
    }


def _source_entry(
    source: ResearchSource, record: SourceRecord | None, cluster: str | None
) -> dict[str, Any]:
    return {
        "id": str(source.pk),
        "run_id": str(source.run_id),
        "url": source.url,
        "canonical_url": source.canonical_url,
        "domain": source.domain,
        "title": source.title,
        "publisher": source.publisher,
        "published_at": source.published_at or None,
        "class": source.source_class,
        "status": source.status,
        "kind": source.kind,
        "content_hash": source.content_hash or None,
        "duplicate_of": str(source.duplicate_of_id) if source.duplicate_of_id else None,
        "declared_canonical_url": record.declared_canonical_url if record else None,
        "independence_cluster": cluster,
        # Whether the stored snapshot still hashes to the content hash recorded at acquisition
        # (``None`` for sources that were never acquired).
        "snapshot_intact": snapshot_content_hash(source.snapshot_text) == source.content_hash
        if source.content_hash
        else None,
        "discovered_by_step": str(source.discovered_by_step_id)
        if source.discovered_by_step_id
        else None,
        "status_reason": source.last_error,
    }


def _evidence_entry(row: ResearchEvidence, snapshot: str) -> dict[str, Any]:
    locator = row.locator or {}
    start, end = locator.get("start"), locator.get("end")
    in_bounds = (
        isinstance(start, int) and isinstance(end, int) and 0 <= start < end <= len(snapshot)
    )
    return {
        "id": row.pk,
        "run_id": str(row.run_id),
        "source_id": str(row.source_id),
        "excerpt": row.excerpt,
        "locator": locator,
        # What the locator points at in the stored snapshot; a scorer compares it with the
        # excerpt instead of trusting that the excerpt was verified.
        "locator_text": snapshot[start:end] if in_bounds else None,
        "question_ids": row.question_ids or [],
        "stance": row.stance,
        "claim_key": row.claim_key or None,
        "normalized_value": row.normalized_value or None,
        "scope": row.scope or {},
        "relevance_bp": row.relevance_bp,
        "confidence_bp": row.confidence_bp,
        "out_of_scope": row.out_of_scope,
    }


def build_run_document(run: ResearchRun) -> dict[str, Any]:
    """Everything needed to read and score ``run``, as JSON-ready data."""
    run.refresh_from_db()
    run_id = str(run.pk)
    sources = list(ResearchSource.objects.filter(run=run))
    snapshots = {str(source.pk): source.snapshot_text for source in sources}
    records = {record.id: record for record in DjangoStore().list_sources(run_id)}
    clusters = assign_independence_clusters(records.values())
    urls = {str(source.pk): source.canonical_url or source.url for source in sources}
    rows = list(ResearchEvidence.objects.filter(run=run))
    evidence = {row.pk: _evidence_entry(row, snapshots.get(str(row.source_id), "")) for row in rows}
    source_entries = {
        str(source.pk): _source_entry(
            source, records.get(str(source.pk)), clusters.get(str(source.pk))
        )
        for source in sources
    }

    report: dict[str, Any] | None = run.report or None
    citations: list[dict[str, Any]] = []
    markdown: str | None = None
    if report is not None:
        validated = Report.model_validate(report)
        contracts = {row.pk: evidence_from_row(row) for row in rows}
        index = number_citations(validated, evidence=contracts)
        cited = [eid for s in validated.statements() for eid in s.evidence_ids]
        cited += [eid for c in validated.contradictions for eid in c.evidence_ids]
        # An id of another run's evidence is shown as what it is, so a scorer can say so.
        foreign = {
            row.pk: (
                _evidence_entry(row, row.source.snapshot_text),
                _source_entry(row.source, None, None),
            )
            for row in ResearchEvidence.objects.filter(
                pk__in=[eid for eid in cited if eid not in evidence]
            ).select_related("source")
        }
        for evidence_id in dict.fromkeys(cited):
            item = evidence.get(evidence_id)
            source = source_entries.get(item["source_id"]) if item else None
            if item is None and evidence_id in foreign:
                item, source = foreign[evidence_id]
            citations.append(
                {
                    "evidence_id": evidence_id,
                    "number": index.number_of.get(evidence_id),
                    "resolved": item is not None,
                    "evidence": item,
                    "source": source,
                }
            )
        markdown = render_markdown(validated, evidence=contracts, sources=source_summaries(sources))

    steps = [_step_entry(step, urls) for step in ResearchStep.objects.filter(run=run)]
    working_state = run.working_state or {}
    counters = ("iteration", "rejected_excerpts", "invalid_decisions", "information_gain")
    return {
        "schema": DOCUMENT_SCHEMA,
        "version": DOCUMENT_VERSION,
        "run_id": run_id,
        "question": run.question,
        "depth": run.depth,
        "owner": run.owner.get_username(),
        "status": run.status,
        "terminal_reason": run.terminal_reason,
        "last_error": run.last_error,
        "plan_version": run.plan_version,
        "plan": run.plan,
        "source_policy": run.source_policy,
        "budget": run.budget,
        "usage": run.usage,
        "coverage": working_state.get("coverage", {}),
        "stop_reason": run.stop_reason or None,
        "stop_limit": run.stop_limit or None,
        "outcome": run.outcome.as_data(),
        "research_counters": {name: working_state.get(name, 0) for name in counters},
        "report": report,
        "report_markdown": markdown,
        "citations": citations,
        "evidence": list(evidence.values()),
        "sources": list(source_entries.values()),
        "steps": steps,
        "timing": {
            "created_at": _iso(run.created_at),
            "approved_at": _iso(run.approved_at),
            "started_at": _iso(run.started_at),
            "completed_at": _iso(run.completed_at),
        },
    }
