"""The engine's rules working together over in-memory ports: search, read, verify, cluster,
detect a conflict, pass the finish gate, validate and render the report. The orchestrator loop
composes these same calls."""

from research.engine.citations import render_markdown
from research.engine.contracts import (
    EvidenceScope,
    ReadAction,
    Report,
    SearchAction,
    SourcePolicy,
    SourceQuality,
    SourceSummary,
    Usage,
    WorkingState,
)
from research.engine.guards import (
    BudgetLedger,
    advance_iteration,
    budget_for,
    compute_coverage,
    evaluate_finish_gate,
    validate_actions,
)
from research.engine.ledger import (
    assign_independence_clusters,
    find_contradictions,
    find_duplicate,
    verify_candidates,
)
from research.engine.ports import AcquisitionError
from research.engine.review import finalize_report
from tests.engine.clock import FakeClock
from tests.engine.factories import make_candidate, make_document, make_plan
from tests.engine.fakes import MemoryWeb
from tests.engine.memory_store import MemoryStore

RUN = "run-1"
OFFICIAL = "https://insee.fr/en/gdp-2023"
PRESS = "https://news.example.org/economy/gdp"
MIRROR = "https://mirror.example.net/gdp-copy"
PRESS_TEXT = "Economy desk. France's GDP grew 1.1% in 2023, according to early estimates."
PAGES = {
    OFFICIAL: make_document(
        "National accounts. In 2023, GDP grew by 0.9% in volume (revised estimate).",
        url=OFFICIAL,
        publisher="INSEE",
    ),
    PRESS: make_document(PRESS_TEXT, url=PRESS, publisher="Example News"),
    MIRROR: make_document(PRESS_TEXT, url=MIRROR, publisher="Mirror Site"),
}
CLASSES = {OFFICIAL: "official", PRESS: "reputable_secondary", MIRROR: "aggregator"}
EXTRACTIONS = {
    OFFICIAL: [
        make_candidate(
            "In 2023, GDP grew by 0.9% in volume",
            claim_key="France GDP growth 2023",
            normalized_value="0.9%",
            scope=EvidenceScope(as_of="2023", methodology="revised estimate"),
        ),
        make_candidate("GDP grew by 3.0% in 2023", claim_key="France GDP growth 2023"),
    ],
    PRESS: [
        make_candidate(
            "France’s GDP grew 1.1% in 2023",
            claim_key="france gdp growth 2023",
            normalized_value="1.1 %",
            scope=EvidenceScope(as_of="2023", methodology="early estimate"),
        )
    ],
    MIRROR: [make_candidate("France's GDP grew 1.1% in 2023", claim_key="france gdp growth 2023")],
}


def test_research_rules_compose_into_a_cited_report() -> None:
    plan = make_plan(("q1", "required"))
    policy = SourcePolicy(excluded_domains=["spam.example"])
    store = MemoryStore(RUN, budget=budget_for("quick"))
    web = MemoryWeb(
        PAGES, {"france gdp growth 2023": [PRESS, OFFICIAL, MIRROR, "https://spam.example/x"]}
    )
    clock = FakeClock()
    ledger = BudgetLedger(store.run.budget, clock=clock)
    state = WorkingState()

    # Search: validated, reserved, executed, settled; the excluded domain never becomes a source.
    (verdict,) = validate_actions(
        [SearchAction(query="France GDP growth 2023", question_ids=["q1"], rationale="start")],
        run_id=RUN,
        iteration=0,
        plan=plan,
        policy=policy,
        sources={},
        seen_fingerprints=state.query_fingerprints,
    )
    assert verdict.accepted
    ledger.reserve(verdict.dedupe_key, Usage(searches=1))
    step = store.begin_step(RUN, kind="search", dedupe_key=verdict.dedupe_key)
    results = web.discover("france gdp growth 2023", policy=policy)
    usable = [c for c in results if web.screen(c.url, policy=policy) is None]
    assert [web.screen(c.url, policy=policy) for c in results if c not in usable] == [
        "excluded domain"
    ]
    sources = store.record_candidates(RUN, step_id=step.id, candidates=usable)
    ledger.settle(verdict.dedupe_key, Usage(searches=1))
    assert len(sources) == 3

    # Read all three candidates; the mirror is detected as a duplicate by content hash.
    reads = [ReadAction(source_id=s.id, question_ids=["q1"], rationale="read") for s in sources]
    verdicts = validate_actions(
        reads,
        run_id=RUN,
        iteration=1,
        plan=plan,
        policy=policy,
        sources={s.id: s for s in store.list_sources(RUN)},
        seen_fingerprints=[],
    )
    assert all(v.accepted for v in verdicts)
    rejected = 0
    for verdict, source in zip(verdicts, sources, strict=True):
        ledger.reserve(verdict.dedupe_key, Usage(fetched_sources=1))
        try:
            document = web.acquire(
                source.url, policy=policy, max_bytes=store.run.budget.bytes_per_source
            )
        except AcquisitionError as error:  # pragma: no cover - every page exists here
            store.record_failure(RUN, source.id, kind=error.kind, reason=error.reason)
            continue
        duplicate = find_duplicate(document, store.list_sources(RUN), source_id=source.id)
        store.record_acquisition(
            RUN,
            source.id,
            document=document,
            quality=SourceQuality(source_class=CLASSES[source.url]),  # type: ignore[arg-type]
            duplicate_of=duplicate.source_id if duplicate else None,
        )
        ledger.settle(
            verdict.dedupe_key, Usage(fetched_sources=1, bytes_fetched=document.content_bytes)
        )
        outcome = verify_candidates(
            EXTRACTIONS[source.url],
            run_id=RUN,
            source_id=source.id,
            document=document,
            question_ids=set(plan.question_ids),
            known_hashes={e.evidence_hash for e in store.list_evidence(RUN)},
        )
        rejected += outcome.rejected_count
        store.add_evidence(RUN, step_id=step.id, evidence=outcome.evidence)

    # The invented "3.0%" excerpt was rejected; the mirror's copy is a duplicate source.
    assert rejected == 1
    statuses = {s.url: s.status for s in store.list_sources(RUN)}
    assert statuses[MIRROR] == "duplicate"

    # Independence clusters: the mirror joins the press cluster.
    clusters = assign_independence_clusters(store.list_sources(RUN))
    assert clusters[sources[0].id] == clusters[sources[2].id]
    for record in store.list_sources(RUN):
        store.sources[record.id] = record.model_copy(
            update={
                "quality": record.quality.model_copy(
                    update={"independence_cluster": clusters[record.id]}
                )
            }
        )

    evidence = store.list_evidence(RUN)
    coverage = compute_coverage(plan, evidence, {s.id: s for s in store.list_sources(RUN)})
    assert coverage["q1"].has_primary
    assert len(coverage["q1"].clusters) == 2  # INSEE and the press cluster; the mirror adds none

    # The two growth figures conflict, side by side, with their differing methodology.
    (conflict,) = find_contradictions(evidence)
    assert sorted(p.value or "" for p in conflict.positions) == ["0.9%", "1.1 %"]
    assert conflict.scope_differences == {"methodology": ["early estimate", "revised estimate"]}

    gate = evaluate_finish_gate(plan, coverage, [conflict])
    assert not gate.passed
    state, gain = advance_iteration(
        state, coverage=coverage, new_evidence=evidence, source_classes=["official"]
    )
    assert gain.any
    assert evaluate_finish_gate(plan, coverage, [conflict], followed_up={conflict.key}).passed

    # Synthesis cites evidence ids only; one invented id is repaired away by demotion.
    official_ev = next(e for e in evidence if e.normalized_value == "0.9%")
    press_ev = next(e for e in evidence if e.normalized_value == "1.1 %")
    draft = Report.model_validate(
        {
            "title": "French GDP growth in 2023",
            "executive_summary": [
                {
                    "claim_id": "c1",
                    "kind": "finding",
                    "text": "In 2023 GDP grew by 0.9% in volume.",
                    "evidence_ids": [official_ev.id],
                    "confidence": "high",
                },
                {
                    "claim_id": "c2",
                    "kind": "finding",
                    "text": "Growth was 3%.",
                    "evidence_ids": ["ev-made-up"],
                },
            ],
            "contradictions": [
                {
                    "summary": "Early and revised estimates differ.",
                    "evidence_ids": [official_ev.id, press_ev.id],
                    "resolution": "The revised estimate supersedes the early one.",
                }
            ],
        }
    )
    validated = finalize_report(draft, run_id=RUN, evidence={e.id: e for e in evidence})
    assert validated.demoted_claim_ids == ["c2"]
    summaries = {
        s.id: SourceSummary(id=s.id, title=s.title or s.url, url=s.url, publisher=s.publisher)
        for s in store.list_sources(RUN)
    }
    markdown = render_markdown(
        validated.report, evidence={e.id: e for e in evidence}, sources=summaries
    )
    assert "[\\[1\\]]" in markdown and "[\\[2\\]]" in markdown
    assert "(https://insee.fr/en/gdp-2023)" in markdown
    assert ledger.usage().searches == 1 and ledger.usage().fetched_sources == 3
