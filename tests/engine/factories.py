"""Small builders for engine contracts, so tests state only what matters to them."""

import hashlib
from datetime import UTC, datetime
from typing import Any

from research.engine.contracts import (
    Evidence,
    EvidenceCandidate,
    EvidenceScope,
    Heading,
    PageSpan,
    PlanQuestion,
    ResearchPlan,
    SourceDocument,
    SourceQuality,
    SourceRecord,
    TextLocator,
)
from research.engine.ledger import evidence_hash, evidence_id_for, snapshot_content_hash
from research.engine.urls import canonical_url, url_hash

RUN = "run-1"


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def make_plan(*questions: tuple[str, str], **overrides: Any) -> ResearchPlan:
    """A plan with the given (id, priority) questions; defaults to q1 and q2 required."""
    pairs = questions or (("q1", "required"), ("q2", "required"))
    data: dict[str, Any] = {
        "objective": "How large is the French economy?",
        "questions": [
            PlanQuestion(id=qid, text=f"Question {qid}?", priority=priority)  # type: ignore[arg-type]
            for qid, priority in pairs
        ],
    }
    data.update(overrides)
    return ResearchPlan(**data)


def make_document(
    text: str,
    *,
    url: str = "https://example.org/report",
    kind: str = "html",
    headings: list[Heading] | None = None,
    pages: list[PageSpan] | None = None,
    **overrides: Any,
) -> SourceDocument:
    canonical = canonical_url(url)
    data: dict[str, Any] = {
        "requested_url": url,
        "final_url": url,
        "canonical_url": canonical,
        "canonical_url_hash": url_hash(canonical),
        "content_hash": snapshot_content_hash(text),
        "mime_type": "application/pdf" if kind == "pdf" else "text/html",
        "kind": kind,
        "title": "A report",
        "text": text,
        "headings": headings or [],
        "pages": pages or [],
        "content_bytes": len(text.encode()),
        "retrieved_at": datetime(2025, 1, 1, tzinfo=UTC),
    }
    data.update(overrides)
    return SourceDocument(**data)


def make_candidate(excerpt: str, **overrides: Any) -> EvidenceCandidate:
    data: dict[str, Any] = {
        "excerpt": excerpt,
        "question_ids": ["q1"],
        "stance": "supports",
        "relevance": 0.9,
        "confidence": 0.8,
    }
    data.update(overrides)
    return EvidenceCandidate(**data)


def make_evidence(
    excerpt: str = "France's GDP was 2.8 trillion euros in 2023.",
    *,
    run_id: str = RUN,
    source_id: str = "s1",
    question_ids: list[str] | None = None,
    claim_key: str | None = None,
    value: str | None = None,
    stance: str = "supports",
    start: int = 0,
    scope: EvidenceScope | None = None,
    relevance_bp: int = 9000,
) -> Evidence:
    digest = evidence_hash(run_id, source_id, excerpt, claim_key)
    return Evidence(
        id=evidence_id_for(digest),
        run_id=run_id,
        source_id=source_id,
        excerpt=excerpt,
        locator=TextLocator(
            kind="html", start=start, end=start + len(excerpt), snapshot_hash=sha(source_id)
        ),
        question_ids=question_ids or ["q1"],
        stance=stance,  # type: ignore[arg-type]
        claim_key=claim_key,
        normalized_value=value,
        scope=scope or EvidenceScope(),
        relevance_bp=relevance_bp,
        confidence_bp=8000,
        evidence_hash=digest,
    )


def make_source(
    source_id: str,
    url: str,
    *,
    status: str = "fetched",
    source_class: str = "reputable_secondary",
    publisher: str | None = None,
    content: str | None = None,
    cluster: str = "",
    **overrides: Any,
) -> SourceRecord:
    canonical = canonical_url(url)
    data: dict[str, Any] = {
        "id": source_id,
        "run_id": RUN,
        "status": status,
        "url": url,
        "canonical_url": canonical,
        "canonical_url_hash": url_hash(canonical),
        "content_hash": snapshot_content_hash(content) if content is not None else sha(url),
        "title": f"Source {source_id}",
        "publisher": publisher,
        "quality": SourceQuality(source_class=source_class, independence_cluster=cluster),  # type: ignore[arg-type]
    }
    data.update(overrides)
    return SourceRecord(**data)
