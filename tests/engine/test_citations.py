import re
from collections.abc import Sequence

from research.engine.citations import (
    CitationProblem,
    check_citations,
    escape_markdown,
    number_citations,
    render_markdown,
)
from research.engine.contracts import (
    Evidence,
    PdfLocator,
    Report,
    ScholarlyMetadata,
    SourceSummary,
)
from research.engine.ports import ModelError
from research.engine.review import UNSUPPORTED_LABEL, finalize_report
from research.engine.works import reference_text
from tests.engine.factories import make_evidence

GDP = make_evidence("France's GDP was 2.8 trillion euros in 2023.", source_id="s1", claim_key="gdp")
GROWTH = make_evidence("Growth slowed to 0.9% in 2023.", source_id="s2", start=100)
FOREIGN = make_evidence("Borrowed from an older run.", run_id="run-0", source_id="s9")
EVIDENCE = {item.id: item for item in (GDP, GROWTH, FOREIGN)}
SOURCES = {
    "s1": SourceSummary(
        id="s1",
        title="National accounts 2023",
        url="https://insee.fr/en/accounts",
        publisher="INSEE",
    ),
    "s2": SourceSummary(id="s2", title="Economic outlook", url="https://oecd.org/outlook#top"),
}


def report(*statements: dict, **extra: object) -> Report:
    return Report.model_validate(
        {
            "title": "The French economy in 2023",
            "sections": [{"id": "economy", "title": "Economy", "statements": list(statements)}],
            **extra,
        }
    )


def finding(claim_id: str, *evidence_ids: str, text: str | None = None) -> dict:
    """A finding citing ``evidence_ids``; by default it says what the first one says (these
    tests are about citations; tests/engine/test_support.py is about what findings say)."""
    if text is None:
        first = EVIDENCE.get(evidence_ids[0]) if evidence_ids else None
        text = first.excerpt if first else "A finding."
    return {
        "claim_id": claim_id,
        "kind": "finding",
        "text": text,
        "evidence_ids": list(evidence_ids),
    }


# Validation -------------------------------------------------------------------------------------


def test_finding_citing_verified_evidence_of_the_run_is_valid() -> None:
    assert check_citations(report(finding("c1", GDP.id)), run_id="run-1", evidence=EVIDENCE) == []


def test_finding_without_evidence_is_a_problem() -> None:
    (problem,) = check_citations(report(finding("c1")), run_id="run-1", evidence=EVIDENCE)
    assert problem == CitationProblem("c1", "Finding c1 cites no evidence.")


def test_evidence_from_another_run_is_refused() -> None:
    (problem,) = check_citations(
        report(finding("c1", FOREIGN.id)), run_id="run-1", evidence=EVIDENCE
    )
    assert problem.message == f"Finding c1 cites {FOREIGN.id}, which belongs to another run."


def test_unknown_evidence_id_is_refused() -> None:
    (problem,) = check_citations(
        report(finding("c1", "ev-invented")), run_id="run-1", evidence=EVIDENCE
    )
    assert problem.message == "Finding c1 cites ev-invented, which does not exist."


def test_caveats_and_analysis_may_stand_without_evidence() -> None:
    statements = [
        {"claim_id": "c1", "kind": "caveat", "text": "Data for 2024 is provisional."},
        {"claim_id": "c2", "kind": "analysis", "text": "Growth is slowing."},
    ]
    assert check_citations(report(*statements), run_id="run-1", evidence=EVIDENCE) == []


def test_contradictions_citing_foreign_evidence_are_problems() -> None:
    bad = report(
        finding("c1", GDP.id),
        contradictions=[{"summary": "Sources differ.", "evidence_ids": [FOREIGN.id]}],
    )
    (problem,) = check_citations(bad, run_id="run-1", evidence=EVIDENCE)
    assert problem.claim_id is None


# Repair and demotion -----------------------------------------------------------------------------


def test_valid_report_is_not_sent_for_repair() -> None:
    def repair(_: Report, __: Sequence[CitationProblem]) -> Report:
        raise AssertionError("repair must not be called")

    result = finalize_report(
        report(finding("c1", GDP.id)), run_id="run-1", evidence=EVIDENCE, repair=repair
    )
    assert result.problems == [] and not result.repaired


def test_one_repair_round_receives_the_problems() -> None:
    calls: list[list[str]] = []

    def repair(broken: Report, problems: Sequence[CitationProblem]) -> Report:
        calls.append([p.message for p in problems])
        return report(finding("c1", GDP.id))

    result = finalize_report(
        report(finding("c1", FOREIGN.id)), run_id="run-1", evidence=EVIDENCE, repair=repair
    )
    assert calls == [[f"Finding c1 cites {FOREIGN.id}, which belongs to another run."]]
    assert result.repaired
    assert result.report.statements()[0].kind == "finding"
    assert result.demoted_claim_ids == []


def test_finding_still_unsupported_after_repair_becomes_a_labelled_caveat() -> None:
    calls = 0

    def repair(broken: Report, _: Sequence[CitationProblem]) -> Report:
        nonlocal calls
        calls += 1
        return broken

    result = finalize_report(
        report(finding("c1", FOREIGN.id, text="GDP tripled.")),
        run_id="run-1",
        evidence=EVIDENCE,
        repair=repair,
    )
    assert calls == 1
    (statement,) = result.report.statements()
    assert statement.kind == "caveat"
    assert statement.text == f"{UNSUPPORTED_LABEL} GDP tripled."
    assert statement.evidence_ids == []
    assert result.demoted_claim_ids == ["c1"]


def test_failed_repair_call_keeps_the_original_and_demotes() -> None:
    def repair(_: Report, __: Sequence[CitationProblem]) -> Report:
        raise ModelError("The model timed out.", retryable=True)

    result = finalize_report(
        report(finding("c1")), run_id="run-1", evidence=EVIDENCE, repair=repair
    )
    assert not result.repaired
    assert result.report.statements()[0].kind == "caveat"


def test_invalid_ids_are_dropped_but_valid_ones_keep_the_finding() -> None:
    result = finalize_report(
        report(finding("c1", GDP.id, "ev-invented", FOREIGN.id)), run_id="run-1", evidence=EVIDENCE
    )
    (statement,) = result.report.statements()
    assert statement.kind == "finding"
    assert statement.evidence_ids == [GDP.id]


def test_contradiction_left_without_evidence_is_dropped() -> None:
    broken = report(
        finding("c1", GDP.id),
        contradictions=[
            {"summary": "Invented conflict.", "evidence_ids": ["ev-invented"]},
            {"summary": "Real conflict.", "evidence_ids": [GDP.id, GROWTH.id, FOREIGN.id]},
        ],
    )
    result = finalize_report(broken, run_id="run-1", evidence=EVIDENCE)
    assert result.dropped_contradictions == 1
    (kept,) = result.report.contradictions
    assert kept.evidence_ids == [GDP.id, GROWTH.id]


# Numbering -------------------------------------------------------------------------------------------


def test_citations_are_numbered_by_first_appearance() -> None:
    index = number_citations(
        report(finding("c1", GROWTH.id), finding("c2", GDP.id, GROWTH.id)), evidence=EVIDENCE
    )
    assert index.number_of == {GROWTH.id: 1, GDP.id: 2}
    assert index.numbers_for([GDP.id, GROWTH.id]) == [2, 1]


def test_same_source_and_locator_share_one_number() -> None:
    twin = GDP.model_copy(update={"id": "ev-twin", "claim_key": "gdp_level"})
    other_place = GDP.model_copy(
        update={
            "id": "ev-later",
            "locator": GDP.locator.model_copy(update={"start": 500, "end": 540}),
        }
    )
    evidence = {**EVIDENCE, twin.id: twin, other_place.id: other_place}
    index = number_citations(
        report(finding("c1", GDP.id, twin.id), finding("c2", other_place.id)), evidence=evidence
    )
    assert index.number_of == {GDP.id: 1, twin.id: 1, other_place.id: 2}
    assert index.citations[0].evidence_ids == (GDP.id, twin.id)


def test_pdf_pages_distinguish_citations() -> None:
    page_1 = GDP.model_copy(
        update={
            "id": "ev-p1",
            "locator": PdfLocator(page=1, start=0, end=10, snapshot_hash="a" * 64),
        }
    )
    page_2 = GDP.model_copy(
        update={
            "id": "ev-p2",
            "locator": PdfLocator(page=2, start=0, end=10, snapshot_hash="a" * 64),
        }
    )
    index = number_citations(
        report(finding("c1", page_1.id, page_2.id)), evidence={page_1.id: page_1, page_2.id: page_2}
    )
    assert index.numbers_for([page_1.id, page_2.id]) == [1, 2]


# Rendering ------------------------------------------------------------------------------------------


def _valid_report() -> Report:
    return finalize_report(
        report(
            finding("c1", GDP.id, text="France's economy reached 2.8 trillion euros."),
            finding("c2", GROWTH.id, GDP.id, text="Growth slowed."),
            {"claim_id": "c3", "kind": "caveat", "text": "2024 data is provisional."},
            executive_summary=[
                finding("s1", GDP.id, text="A large economy: GDP was 2.8 trillion euros.")
            ],
            gaps=[{"question_id": "q2", "description": "No regional breakdown was found."}],
            methodology=["Searched official statistics."],
        ),
        run_id="run-1",
        evidence=EVIDENCE,
    ).report


def test_markdown_has_numbered_citations_and_a_sources_list() -> None:
    markdown = render_markdown(_valid_report(), evidence=EVIDENCE, sources=SOURCES)
    assert markdown.startswith("# The French economy in 2023\n")
    assert (
        f"- A large economy: GDP was 2.8 trillion euros\\. [\\[1\\]](#evidence-{GDP.id})"
        not in markdown
    )  # dots are not escaped
    assert (
        f"- A large economy: GDP was 2.8 trillion euros. [\\[1\\]](#evidence-{GDP.id})" in markdown
    )
    assert (
        f"- Growth slowed. [\\[2\\]](#evidence-{GROWTH.id})[\\[1\\]](#evidence-{GDP.id})"
        in markdown
    )
    assert "- *Caveat:* 2024 data is provisional." in markdown
    assert "1. [National accounts 2023](https://insee.fr/en/accounts) — INSEE" in markdown
    assert "2. [Economic outlook](https://oecd.org/outlook):" in markdown
    assert "## Gaps\n\n- (q2) No regional breakdown was found." in markdown


def test_the_bibliography_lists_the_doi_and_says_when_only_the_abstract_was_read() -> None:
    work = ScholarlyMetadata(
        doi="10.5555/na.2023", title="National accounts", authors=["A. Author"], year=2023
    )
    sources = {
        **SOURCES,
        "s1": SOURCES["s1"].model_copy(
            update={"reference": reference_text(work), "abstract_only": True}
        ),
    }
    markdown = render_markdown(_valid_report(), evidence=EVIDENCE, sources=sources)
    line = next(line for line in markdown.splitlines() if line.startswith("1. "))
    # Markdown escapes: rendered, the line reads "A. Author (2023). … https://doi.org/…".
    assert "A. Author \\(2023\\)" in line and "doi.org/10.5555/na.2023" in line
    assert "— abstract only" in line


def test_uploaded_documents_are_listed_apart_from_web_sources() -> None:
    sources = {
        **SOURCES,
        "s2": SOURCES["s2"].model_copy(update={"url": "document://lib-1/doc-1"}),
    }
    markdown = render_markdown(_valid_report(), evidence=EVIDENCE, sources=sources)
    documents = markdown.index("## Documents")
    web = markdown.index("## Web sources")
    assert "## Sources" not in markdown
    assert documents < markdown.index("2. Economic outlook") < web
    assert web < markdown.index("1. [National accounts 2023]")


def test_evidence_url_builder_is_used_for_citation_links() -> None:
    markdown = render_markdown(
        _valid_report(),
        evidence=EVIDENCE,
        sources=SOURCES,
        evidence_url=lambda e: f"/evidence/{e.id}/",
    )
    assert f"[\\[1\\]](/evidence/{GDP.id}/)" in markdown


def test_unsafe_evidence_url_falls_back_to_the_anchor() -> None:
    markdown = render_markdown(
        _valid_report(),
        evidence=EVIDENCE,
        sources=SOURCES,
        evidence_url=lambda e: "javascript:alert(1)",
    )
    assert "javascript:" not in markdown
    assert f"[\\[1\\]](#evidence-{GDP.id})" in markdown


def test_source_links_are_http_only() -> None:
    sources = {
        **SOURCES,
        "s1": SOURCES["s1"].model_copy(update={"url": "javascript:alert(document.cookie)"}),
    }
    markdown = render_markdown(_valid_report(), evidence=EVIDENCE, sources=sources)
    assert "javascript" not in markdown
    assert "1. National accounts 2023 — INSEE" in markdown


def test_malicious_text_is_inert_in_markdown() -> None:
    attack = "[click](javascript:alert(1)) <script>x</script> ![img](https://evil.example/p.png) see https://evil.example"
    hostile = report(finding("c1", GDP.id, text=attack), title="# Injected\n## Heading")
    markdown = render_markdown(hostile, evidence=EVIDENCE, sources=SOURCES)
    assert "](javascript:" not in markdown
    assert "<script>" not in markdown
    assert "![img](" not in markdown
    assert "https://evil.example" not in markdown
    assert markdown.splitlines()[0] == "# \\# Injected \\#\\# Heading"


def test_fake_citation_markers_in_text_are_not_links() -> None:
    markdown = render_markdown(
        report(finding("c1", GDP.id, text="Proven [1](https://evil.example) [2]")),
        evidence=EVIDENCE,
        sources=SOURCES,
    )
    assert re.search(r"(?<!\\)\[1\]\(https", markdown) is None


def test_escape_markdown_neutralises_block_markers() -> None:
    assert escape_markdown("1. not a list") == "1\\. not a list"
    assert escape_markdown("> not a quote") == "\\> not a quote"
    assert escape_markdown("- not an item") == "\\- not an item"


def test_partial_report_is_labelled() -> None:
    partial = _valid_report().model_copy(update={"partial": True})
    assert "partial report" in render_markdown(partial, evidence=EVIDENCE, sources=SOURCES)


def test_labelled_statements_render_as_sub_headed_blocks() -> None:
    labelled = report(
        {**finding("c1", GDP.id), "label": "Answer"},
        {**finding("c2", GROWTH.id), "label": "Supporting"},
        {"claim_id": "c3", "kind": "caveat", "text": "2024 data is provisional."},
    )

    markdown = render_markdown(labelled, evidence=EVIDENCE, sources=SOURCES)

    answer = markdown.index("### Answer\n\n- France's GDP")
    supporting = markdown.index("### Supporting\n\n- Growth slowed")
    assert answer < supporting < markdown.index("- *Caveat:* 2024 data")
    side = report({**finding("c1", GDP.id), "label": "<b>#1</b> [x](javascript:y)"})
    assert "### \\<b\\>\\#1\\</b\\> \\[x\\]\\(javascript:y\\)\n" in render_markdown(
        side, evidence=EVIDENCE, sources=SOURCES
    )
    # A report stored before labels existed renders as before, with no sub-heading.
    assert "###" not in render_markdown(_valid_report(), evidence=EVIDENCE, sources=SOURCES)


def test_a_finding_quoting_code_renders_as_a_fenced_block() -> None:
    code = make_evidence("for row in rows:\n    print(`row`)", source_id="s2", start=500)
    code = code.model_copy(update={"locator": code.locator.model_copy(update={"code": True})})
    evidence = {**EVIDENCE, code.id: code}

    markdown = render_markdown(
        report(finding("c1", code.id, text=code.excerpt)), evidence=evidence, sources=SOURCES
    )

    assert f"- Code sample [\\[1\\]](#evidence-{code.id}):" in markdown
    # Indentation kept, nothing escaped, the fence longer than any backtick run inside.
    assert "\n  ```\n  for row in rows:\n      print(`row`)\n  ```" in markdown


def test_report_contract_offers_no_place_for_urls() -> None:
    def fields(model: type) -> set[str]:
        return set(model.model_fields)  # type: ignore[attr-defined]

    assert not any("url" in name for name in fields(Report))
    assert isinstance(GDP, Evidence)
