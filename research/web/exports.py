"""A run's report with its citations resolved, as the report page and the exports show it.

The stored report cites evidence ids only. ``report_document`` loads the cited evidence and
its sources in two queries, numbers the citations (one number per source and locator, in
order of first appearance) and returns plain data the templates render. The Markdown export
uses the engine's own renderer; the PDF export renders the print template with WeasyPrint,
which is never allowed to fetch anything.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from django.contrib.staticfiles import finders
from django.template.loader import render_to_string
from django.utils import timezone
from pydantic import ValidationError

from research.engine.citations import (
    CitationIndex,
    describe_locator,
    escape_markdown,
    number_citations,
    render_markdown,
    statement_blocks,
)
from research.engine.contracts import (
    Evidence,
    Report,
    ReportContradiction,
    ReportSection,
    SourceSummary,
    Statement,
    StatementVerdict,
    SupportCheck,
    Usage,
)
from research.engine.urls import safe_source_url
from research.models import ResearchEvidence, ResearchRun, ResearchSource
from research.report_templates import REPORT_TEMPLATES, template_sections
from research.worker.store import evidence_from_row

logger = logging.getLogger(__name__)

EvidenceURL = Callable[[str, int | None], str]

_SOURCE_FIELDS = (
    "source__id",
    "source__url",
    "source__canonical_url",
    "source__title",
    "source__publisher",
    "source__domain",
    "source__published_at",
    "source__source_class",
    "source__status",
    "source__kind",
    "source__quality",
    "source__metadata",
)
_EVIDENCE_FIELDS = (
    "id",
    "run_id",
    "source_id",
    "excerpt",
    "locator",
    "question_ids",
    "stance",
    "claim_key",
    "normalized_value",
    "scope",
    "relevance_bp",
    "confidence_bp",
    "evidence_hash",
)


@dataclass(frozen=True)
class CiteRef:
    number: int
    evidence_id: str
    url: str


@dataclass
class StatementView:
    text: str
    kind: str
    confidence: str
    cites: list[CiteRef]
    # The support checks run on a finding (research/engine/support.py): name, passed, detail.
    checks: list[SupportCheck]
    # Every cited excerpt is a code block of its page: the statement is shown as code.
    code: bool = False
    # The verifier model's verdict (research/engine/verification.py); None when none ran.
    verdict: StatementVerdict | None = None

    @property
    def verdict_summary(self) -> str:
        """One line: what the verifier judged and, when not supported, which part."""
        if self.verdict is None:
            return ""
        label = self.verdict.verdict.replace("_", " ")
        line = f"Verifier: {label} by its excerpts"
        if self.verdict.unsupported_part:
            line += f"; not borne out: “{self.verdict.unsupported_part}”"
        return line + "."

    @property
    def checks_summary(self) -> str:
        """One line: what was checked and, for a check that failed, what did not match."""
        if not self.checks:
            return ""
        failed = [check for check in self.checks if not check.passed]
        if not failed:
            names = ", ".join(check.name for check in self.checks)
            return f"Checked against its excerpts: {names} — all agree."
        return "Checked against its excerpts: " + "; ".join(
            f"{check.name}: {check.detail}" for check in failed
        )


@dataclass
class BlockView:
    """Consecutive statements of a section under one sub-heading ("Answer", a side of a
    comparison); ``label`` is empty for statements shown under none."""

    label: str
    statements: list[StatementView]


@dataclass
class SectionView:
    anchor: str
    title: str
    statements: list[StatementView]
    blocks: list[BlockView] = field(default_factory=list)


@dataclass
class ContradictionSide:
    label: str
    cites: list[CiteRef]
    # The first cited passage of this side, shown beside the other side's.
    quote: str = ""


@dataclass
class ContradictionView:
    summary: str
    resolution: str | None
    sides: list[ContradictionSide]


@dataclass
class GapView:
    question: str
    description: str


@dataclass
class CitationEntry:
    """One numbered citation: the excerpt, where it is, and the source it comes from."""

    number: int
    evidence: ResearchEvidence
    source: ResearchSource
    locator: str
    link: str | None
    url: str
    alias_ids: list[str] = field(default_factory=list)


@dataclass
class UsageSummary:
    searches: int
    sources_read: int
    evidence_items: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost: Decimal
    elapsed_seconds: float


@dataclass
class ReportDocument:
    run: ResearchRun
    report: Report
    summary: list[StatementView]
    sections: list[SectionView]
    contradictions: list[ContradictionView]
    gaps: list[GapView]
    methodology: list[str]
    citations: list[CitationEntry]
    usage: UsageSummary
    missing_sections: list[str]
    template_label: str

    @property
    def extractive(self) -> bool:
        return self.report.mode == "extractive"

    @property
    def document_citations(self) -> list[CitationEntry]:
        """Citations of uploaded documents, listed apart from the web's."""
        return [c for c in self.citations if c.source.kind == ResearchSource.Kind.UPLOAD]

    @property
    def web_citations(self) -> list[CitationEntry]:
        return [c for c in self.citations if c.source.kind != ResearchSource.Kind.UPLOAD]

    @property
    def citation_groups(self) -> list[tuple[str, list[CitationEntry]]]:
        """(heading, citations): documents first, then the web ("Sources" when alone)."""
        documents, web = self.document_citations, self.web_citations
        groups = [("Documents", documents), ("Web sources" if documents else "Sources", web)]
        return [(heading, entries) for heading, entries in groups if entries]


def stored_report(run: ResearchRun) -> Report | None:
    """The run's report as the contract, or None when there is none (or it is unreadable)."""
    if not run.report:
        return None
    try:
        return run.report_contract
    except ValidationError:
        logger.warning("The stored report of run %s does not validate.", run.pk, exc_info=True)
        return None


def _cited_ids(report: Report) -> list[str]:
    ids = [eid for statement in report.statements() for eid in statement.evidence_ids]
    ids += [eid for item in report.contradictions for eid in item.evidence_ids]
    return list(dict.fromkeys(ids))


def evidence_contract(row: ResearchEvidence) -> Evidence | None:
    """A stored evidence row as the engine's contract (None if the row does not validate)."""
    try:
        return evidence_from_row(row)
    except ValidationError:
        return None


def _load_cited(
    run: ResearchRun, report: Report
) -> tuple[dict[str, ResearchEvidence], dict[str, Evidence]]:
    rows = (
        ResearchEvidence.objects.filter(run=run, pk__in=_cited_ids(report))
        .select_related("source")
        .only(*_EVIDENCE_FIELDS, *_SOURCE_FIELDS)
    )
    by_id = {row.pk: row for row in rows}
    contracts = {eid: c for eid, row in by_id.items() if (c := evidence_contract(row)) is not None}
    return by_id, contracts


def _cites(ids: list[str], index: CitationIndex, url: EvidenceURL) -> list[CiteRef]:
    refs: dict[int, CiteRef] = {}
    for evidence_id in ids:
        number = index.number_of.get(evidence_id)
        if number is not None and number not in refs:
            refs[number] = CiteRef(number, evidence_id, url(evidence_id, number))
    return list(refs.values())


def _statement(
    statement: Statement,
    index: CitationIndex,
    url: EvidenceURL,
    rows: dict[str, ResearchEvidence],
) -> StatementView:
    cited = [rows.get(eid) for eid in statement.evidence_ids]
    code = bool(cited) and all(row is not None and (row.locator or {}).get("code") for row in cited)
    return StatementView(
        text=statement.text,
        kind=statement.kind,
        confidence=statement.confidence,
        cites=_cites(statement.evidence_ids, index, url),
        checks=list(statement.checks),
        code=code,
        verdict=statement.verdict,
    )


def _section_view(
    section: ReportSection,
    index: CitationIndex,
    url: EvidenceURL,
    rows: dict[str, ResearchEvidence],
) -> SectionView:
    blocks = [
        BlockView(label, [_statement(s, index, url, rows) for s in statements])
        for label, statements in statement_blocks(section.statements)
    ]
    return SectionView(
        anchor=f"section-{section.id}",
        title=section.title,
        statements=[view for block in blocks for view in block.statements],
        blocks=blocks,
    )


def _sides(
    item: ReportContradiction,
    rows: dict[str, ResearchEvidence],
    index: CitationIndex,
    url: EvidenceURL,
) -> list[ContradictionSide]:
    """Group a contradiction's evidence by the value (or stance) each item states: the sides
    the report names when it names them (the no-model writer does; its evidence rows carry no
    stated value), otherwise each row's own stated value or stance."""
    ids = item.evidence_ids
    groups: dict[str, list[str]] = {}
    for side in item.sides:
        members = [eid for eid in side.evidence_ids if eid in rows]
        if members:
            groups.setdefault(side.value, []).extend(members)
    if len(groups) < 2:
        groups = {}
        for evidence_id in ids:
            row = rows.get(evidence_id)
            if row is None:
                continue
            key = row.normalized_value or row.get_stance_display()
            groups.setdefault(key, []).append(evidence_id)
    if len(groups) < 2:
        # No stated values to tell the sides apart: each cited passage is its own side.
        return [
            ContradictionSide(
                label=f"Passage {n}", cites=[ref], quote=rows[ref.evidence_id].excerpt
            )
            for n, ref in enumerate(_cites(ids, index, url), start=1)
        ]
    return [
        ContradictionSide(
            label=value, cites=_cites(members, index, url), quote=rows[members[0]].excerpt
        )
        for value, members in groups.items()
    ]


def usage_summary(run: ResearchRun) -> UsageSummary:
    try:
        usage = run.usage_contract
    except ValidationError:
        usage = Usage()
    return UsageSummary(
        searches=usage.searches,
        sources_read=usage.fetched_sources,
        evidence_items=run.evidence.filter(out_of_scope=False).count(),
        model_calls=usage.model_calls,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cost=usage.cost,
        elapsed_seconds=usage.elapsed_seconds,
    )


def _missing_sections(run: ResearchRun, report: Report) -> list[str]:
    written = {section.title.casefold() for section in report.sections}
    wanted = list(template_sections(run.report_template))
    plan = run.plan_contract
    wanted += plan.deliverable.requested_sections if plan else []
    return [s for s in dict.fromkeys(wanted) if s.casefold() not in written]


def report_document(run: ResearchRun, *, evidence_url: EvidenceURL) -> ReportDocument | None:
    """The run's report with every citation resolved, or None when it has no report."""
    report = stored_report(run)
    if report is None:
        return None
    rows, contracts = _load_cited(run, report)
    index = number_citations(report, evidence=contracts)
    plan = run.plan_contract
    questions = {q.id: q.text for q in plan.questions} if plan else {}
    citations = []
    for citation in index.citations:
        first = rows[citation.evidence_ids[0]]
        citations.append(
            CitationEntry(
                number=citation.number,
                evidence=first,
                source=first.source,
                locator=describe_locator(contracts[first.pk]),
                link=safe_source_url(first.source.canonical_url or first.source.url),
                url=evidence_url(first.pk, citation.number),
                alias_ids=list(citation.evidence_ids[1:]),
            )
        )
    template = REPORT_TEMPLATES.get(run.report_template)
    return ReportDocument(
        run=run,
        report=report,
        summary=[_statement(s, index, evidence_url, rows) for s in report.executive_summary],
        sections=[_section_view(section, index, evidence_url, rows) for section in report.sections],
        contradictions=[
            ContradictionView(
                summary=item.summary,
                resolution=item.resolution,
                sides=_sides(item, rows, index, evidence_url),
            )
            for item in report.contradictions
        ],
        gaps=[
            GapView(
                question=questions.get(gap.question_id, "") if gap.question_id else "",
                description=gap.description,
            )
            for gap in report.gaps
        ],
        methodology=list(report.methodology),
        citations=citations,
        usage=usage_summary(run),
        missing_sections=_missing_sections(run, report),
        template_label=template.label if template else "",
    )


# --------------------------------------------------------------------------------------------
# Markdown
# --------------------------------------------------------------------------------------------


def _source_summaries(rows: dict[str, ResearchEvidence]) -> dict[str, SourceSummary]:
    return {str(row.source.pk): row.source.summary() for row in rows.values()}


def report_markdown(run: ResearchRun) -> str | None:
    """The report as Markdown: a header with the question, mode and usage, then the report
    with numbered citations and its sources list. None when the run has no report."""
    report = stored_report(run)
    if report is None:
        return None
    rows, contracts = _load_cited(run, report)
    body = render_markdown(report, evidence=contracts, sources=_source_summaries(rows))
    usage = usage_summary(run)
    title, _, rest = body.partition("\n")
    header = [
        title,
        "",
        f"*Question:* {escape_markdown(run.question)}",
        "",
    ]
    if report.mode == "extractive":
        header += [
            "> Extractive report: written without a language model. Every finding quotes a "
            "verified passage of a stored source.",
            "",
        ]
    header += [
        f"*Status:* {run.outcome.label} · *Depth:* {run.get_depth_display()} · "
        f"*Exported:* {timezone.now():%Y-%m-%d %H:%M} UTC",
        "",
        f"*Usage:* {usage.searches} searches, {usage.sources_read} sources read, "
        f"{usage.evidence_items} verified excerpts, {usage.model_calls} model calls, "
        f"{usage.input_tokens:,} input and {usage.output_tokens:,} output tokens.",
    ]
    outcome = run.outcome
    if outcome.partial:
        header += ["", f"> {escape_markdown(outcome.sentence)}"]
    return "\n".join(header) + "\n" + rest


# --------------------------------------------------------------------------------------------
# PDF
# --------------------------------------------------------------------------------------------


@functools.cache
def pdf_unavailable_reason() -> str | None:
    """Why PDF export cannot work on this server, or None when it can."""
    try:
        import weasyprint  # noqa: F401 - importing loads Pango, which is what may be missing
    except ImportError:
        return (
            "PDF export needs the WeasyPrint package, which is not installed on this server. "
            "Export Markdown instead, or ask the administrator to install it."
        )
    except OSError as exc:
        logger.warning("WeasyPrint cannot load its system libraries: %s", exc)
        return (
            "PDF export needs the Pango text-layout library (Debian package libpango-1.0-0), "
            "which is missing on this server. Export Markdown instead, or ask the "
            "administrator to install it."
        )
    return None


def _refuse_fetch(url: str, *args: object, **kwargs: object) -> None:
    # A report is rendered from stored text only; nothing in it may make the server fetch.
    raise ValueError(f"{url} was not loaded: PDF export fetches no resources.")


def report_pdf(document: ReportDocument) -> bytes:
    """The report as a PDF; raises RuntimeError when PDF export is unavailable here."""
    reason = pdf_unavailable_reason()
    if reason is not None:
        raise RuntimeError(reason)
    from weasyprint import CSS, HTML

    html = render_to_string("research/report_print.html", {"doc": document})
    stylesheet_path = finders.find("css/print.css")
    stylesheets = (
        [CSS(filename=stylesheet_path, url_fetcher=_refuse_fetch)] if stylesheet_path else []
    )
    return HTML(string=html, url_fetcher=_refuse_fetch, base_url=None).write_pdf(
        stylesheets=stylesheets
    )


def statements_citing(run: ResearchRun, evidence_id: str) -> list[StatementView]:
    """The report's statements that cite ``evidence_id``, with what was checked of each and
    the verifier's verdict (for the evidence panel). Citation numbers are not needed there."""
    report = stored_report(run)
    if report is None:
        return []
    return [
        StatementView(
            text=statement.text,
            kind=statement.kind,
            confidence=statement.confidence,
            cites=[],
            checks=list(statement.checks),
            verdict=statement.verdict,
        )
        for statement in report.statements()
        if evidence_id in statement.evidence_ids
    ]
