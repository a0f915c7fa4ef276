"""Builders for runs in every state, with steps, sources, evidence and a report, written
straight to the database so page tests do not need the engine to run."""

from __future__ import annotations

import hashlib
import itertools
import secrets
from typing import Any

from django.utils import timezone

from accounts.models import User
from research.engine.contracts import Report
from research.models import ResearchEvidence, ResearchRun, ResearchSource, ResearchStep

_counter = itertools.count(1)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def plan_data(questions: int = 3, **overrides: Any) -> dict[str, Any]:
    plan: dict[str, Any] = {
        "objective": "Estimate the size of the European heat-pump market in 2023.",
        "audience": "Energy policy analysts",
        "assumptions": ["Figures are in euros."],
        "scope": {
            "included_topics": ["residential heat pumps"],
            "excluded_topics": ["industrial heat"],
            "timeframe": {"start": "2020", "end": "2023"},
            "geographies": ["European Union"],
        },
        "questions": [
            {
                "id": f"q{n}",
                "text": f"Sub-question number {n} about heat pumps?",
                "priority": "required" if n == 1 else "supporting",
            }
            for n in range(1, questions + 1)
        ],
        "deliverable": {"requested_sections": ["Market size"]},
        "completion_criteria": {"required_question_ids": ["q1"]},
    }
    plan.update(overrides)
    return plan


def make_run(owner: User, **fields: Any) -> ResearchRun:
    fields.setdefault("question", "How large is the European heat-pump market?")
    fields.setdefault("title", fields["question"][:200])
    if fields.get("visibility") == ResearchRun.Visibility.LINK:
        fields.setdefault("share_token", secrets.token_urlsafe(24))
    return ResearchRun.objects.create(owner=owner, **fields)


def awaiting_run(owner: User, **fields: Any) -> ResearchRun:
    fields.setdefault("status", ResearchRun.Status.AWAITING_APPROVAL)
    fields.setdefault("plan", plan_data())
    fields.setdefault("plan_version", 1)
    return make_run(owner, **fields)


def make_step(run: ResearchRun, kind: str = "search", **fields: Any) -> ResearchStep:
    payload = fields.pop("payload", {})
    number = next(_counter)
    fields.setdefault("status", ResearchStep.Status.SUCCEEDED)
    fields.setdefault("dedupe_key", f"{kind}:{number}")
    fields.setdefault("started_at", timezone.now() - timezone.timedelta(seconds=4))
    if fields["status"] != ResearchStep.Status.RUNNING:
        fields.setdefault("completed_at", timezone.now())
    return ResearchStep.objects.create(
        run=run,
        kind=kind,
        input={"rationale": fields.pop("rationale", ""), "payload": payload},
        **fields,
    )


def make_source(run: ResearchRun, **fields: Any) -> ResearchSource:
    number = next(_counter)
    domain = fields.pop("domain", f"site{number}.example.org")
    url = fields.pop("url", f"https://{domain}/page-{number}")
    fields.setdefault("status", ResearchSource.Status.FETCHED)
    fields.setdefault("title", f"Source page {number}")
    fields.setdefault("publisher", "Example Agency")
    fields.setdefault("published_at", "2023-05-01")
    fields.setdefault("source_class", "official")
    fields.setdefault(
        "quality",
        {"source_class": fields["source_class"], "authority": "high", "recency": "current"},
    )
    return ResearchSource.objects.create(
        run=run,
        url=url,
        canonical_url=url,
        canonical_url_hash=sha(url),
        domain=domain,
        **fields,
    )


def evidence_row(run: ResearchRun, source: ResearchSource, **fields: Any) -> ResearchEvidence:
    """An unsaved evidence row (for bulk_create) with a valid locator and hash."""
    number = next(_counter)
    excerpt = fields.pop("excerpt", f"Heat-pump sales reached {number} thousand units in 2023.")
    digest = sha(f"{run.pk}:{source.pk}:{excerpt}:{number}")
    heading = fields.pop("heading", "Market overview")
    fields.setdefault("question_ids", ["q1"])
    fields.setdefault("stance", "supports")
    fields.setdefault("relevance_bp", 8000)
    fields.setdefault("confidence_bp", 7000)
    return ResearchEvidence(
        id=fields.pop("id", f"ev-{digest[:20]}"),
        run=run,
        source=source,
        excerpt=excerpt,
        locator={
            "kind": "html",
            "start": 0,
            "end": len(excerpt),
            "heading": heading,
            "snapshot_hash": sha(f"snapshot:{source.pk}"),
        },
        evidence_hash=digest,
        **fields,
    )


def make_evidence(run: ResearchRun, source: ResearchSource, **fields: Any) -> ResearchEvidence:
    row = evidence_row(run, source, **fields)
    row.save()
    return row


def report_data(evidence: list[ResearchEvidence], **overrides: Any) -> dict[str, Any]:
    """A report whose findings cite ``evidence`` (two per statement)."""
    statements = [
        {
            "claim_id": f"c{n}",
            "kind": "finding",
            "text": f"Finding {n}: {item.excerpt}",
            "evidence_ids": [item.pk],
            "confidence": "high",
        }
        for n, item in enumerate(evidence, start=1)
    ]
    report: dict[str, Any] = {
        "title": "The European heat-pump market",
        "executive_summary": statements[:1],
        "sections": [{"id": "s1", "title": "Market size", "statements": statements[1:]}],
        "contradictions": [],
        "gaps": [{"question_id": "q2", "description": "No source gave regional figures."}],
        "methodology": ["Searched official statistics and trade press."],
        "mode": "model",
    }
    report.update(overrides)
    return Report.model_validate(report).model_dump(mode="json")


def completed_run(owner: User, *, sources: int = 3, **fields: Any) -> ResearchRun:
    """A completed run with steps, ``sources`` fetched sources (one excerpt each) and a report."""
    fields.setdefault("status", ResearchRun.Status.COMPLETED)
    fields.setdefault("plan", plan_data())
    fields.setdefault("plan_version", 2)
    fields.setdefault(
        "usage",
        {
            "searches": 4,
            "fetched_sources": sources,
            "model_calls": 9,
            "elapsed_seconds": 75.0,
            "input_tokens": 12000,
            "output_tokens": 3000,
        },
    )
    fields.setdefault("completed_at", timezone.now())
    run = make_run(owner, **fields)
    make_step(run, "plan", payload={})
    make_step(run, "search", payload={"query": "heat pump sales 2023"}, summary="8 results")
    made = [make_source(run) for _ in range(sources)]
    evidence = [make_evidence(run, source) for source in made]
    make_step(
        run,
        "read",
        payload={"source_id": str(made[0].pk), "url": made[0].url},
        summary="2 verified excerpts",
    )
    make_step(run, "synthesize", summary="Report with 3 findings")
    run.report = report_data(evidence)
    run.save(update_fields=["report"])
    return run
