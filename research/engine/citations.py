"""Claim → evidence → source: citation validation, numbering and rendering.

A report cites evidence ids only. This module checks every id against the run's verified
evidence and every finding against what its excerpts say (:mod:`research.engine.support`),
numbers citations (one number per source + locator) and renders the validated report to
Markdown in which every string is escaped and every link is built by the server. What happens
to the problems found — the repair round, the verifier, demotion to caveats — is
:mod:`research.engine.review`.
"""

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from research.engine.contracts import (
    Evidence,
    PdfLocator,
    Report,
    SourceSummary,
    Statement,
    TextLocator,
)
from research.engine.markdown_text import (
    escape_markdown,
    escape_markdown_lines,
    markdown_code,
    markdown_url,
)
from research.engine.quality import FIRST_PARTY_LABEL
from research.engine.support import Support, check_support
from research.engine.urls import is_document_url, safe_source_url

EvidenceLink = Callable[[Evidence], str]


@dataclass(frozen=True)
class CitationProblem:
    """One thing wrong with a report's citations; ``claim_id`` is ``None`` for contradictions."""

    claim_id: str | None
    message: str


def _id_problem(
    where: str, claim_id: str | None, evidence_id: str, item: Evidence | None, run_id: str
) -> CitationProblem | None:
    if item is None:
        return CitationProblem(claim_id, f"{where} cites {evidence_id}, which does not exist.")
    if item.run_id != run_id:
        return CitationProblem(
            claim_id, f"{where} cites {evidence_id}, which belongs to another run."
        )
    return None


def is_valid_citation(evidence_id: str, evidence: Mapping[str, Evidence], run_id: str) -> bool:
    """Whether ``evidence_id`` names verified evidence of ``run_id``."""
    item = evidence.get(evidence_id)
    return item is not None and item.run_id == run_id


def check_citations(
    report: Report,
    *,
    run_id: str,
    evidence: Mapping[str, Evidence],
    known_text: Sequence[str] = (),
) -> list[CitationProblem]:
    """List every citation problem of ``report``.

    ``evidence`` maps ids to the run's verified evidence (evidence only exists once its
    excerpt was found in the snapshot). Every finding must cite at least one evidence id of
    ``run_id``; no statement or contradiction may cite an unknown id or another run's evidence.
    """
    problems: list[CitationProblem] = []
    for statement in report.statements():
        where = f"{statement.kind.capitalize()} {statement.claim_id}"
        if statement.kind == "finding" and not statement.evidence_ids:
            problems.append(CitationProblem(statement.claim_id, f"{where} cites no evidence."))
        for evidence_id in statement.evidence_ids:
            problem = _id_problem(
                where, statement.claim_id, evidence_id, evidence.get(evidence_id), run_id
            )
            if problem:
                problems.append(problem)
        support = finding_support(statement, evidence, run_id, known_text)
        if support is not None and not support.supported:
            problems.append(
                CitationProblem(
                    statement.claim_id,
                    f"{where} says what its cited excerpts do not: "
                    f"{'; '.join(support.mismatches)}. Restate it as the excerpts put it, "
                    "or cite the excerpt that says it.",
                )
            )
    for number, contradiction in enumerate(report.contradictions, start=1):
        for evidence_id in contradiction.evidence_ids:
            problem = _id_problem(
                f"Contradiction {number}", None, evidence_id, evidence.get(evidence_id), run_id
            )
            if problem:
                problems.append(problem)
    return problems


def said_by(item: Evidence) -> str:
    """What a piece of evidence says: its excerpt, under the heading the page puts it under
    (shown with the excerpt, and what a statement may name as its context)."""
    heading = getattr(item.locator, "heading", None) or ""
    return f"{heading}\n{item.excerpt}" if heading else item.excerpt


def cited_excerpts(
    statement: Statement, evidence: Mapping[str, Evidence], run_id: str
) -> list[str]:
    """What the valid citations of ``statement`` say (:func:`said_by`), each once."""
    return [
        said_by(evidence[eid])
        for eid in dict.fromkeys(statement.evidence_ids)
        if is_valid_citation(eid, evidence, run_id)
    ]


# The checks of a statement are asked for twice per report, when problems are listed and
# when the rules are enforced; the answer depends only on the text, so it is computed once.
# The bound holds the findings of several reports at a time.
@lru_cache(maxsize=4096)
def checked_support(text: str, excerpts: tuple[str, ...], known_text: tuple[str, ...]) -> Support:
    """:func:`~research.engine.support.check_support`, computed once per text."""
    return check_support(text, excerpts, known_text=known_text)


def finding_support(
    statement: Statement,
    evidence: Mapping[str, Evidence],
    run_id: str,
    known_text: Sequence[str],
) -> Support | None:
    """The support checks of a finding with valid citations; None for anything else."""
    if statement.kind != "finding":
        return None
    excerpts = cited_excerpts(statement, evidence, run_id)
    if not excerpts:
        return None
    return checked_support(statement.text, tuple(excerpts), tuple(known_text))


def problems_as_text(problems: Sequence[CitationProblem]) -> list[str]:
    """Problems as sentences, for ``SynthesisRequest.problems`` in the repair round."""
    return [problem.message for problem in problems]


# --------------------------------------------------------------------------------------------
# Numbering
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Citation:
    """One numbered citation: a source and a place in it, possibly several evidence items."""

    number: int
    source_id: str
    evidence_ids: tuple[str, ...]


@dataclass
class CitationIndex:
    """Citation numbers of a report, in order of first appearance."""

    citations: list[Citation]
    number_of: dict[str, int]

    def numbers_for(self, evidence_ids: Sequence[str]) -> list[int]:
        """The distinct citation numbers for ``evidence_ids``, in order."""
        numbers = [self.number_of[eid] for eid in evidence_ids if eid in self.number_of]
        return list(dict.fromkeys(numbers))


def _locator_key(item: Evidence) -> tuple[object, ...]:
    locator = item.locator
    page = locator.page if isinstance(locator, PdfLocator) else None
    return (item.source_id, locator.kind, page, locator.start, locator.end)


def number_citations(report: Report, *, evidence: Mapping[str, Evidence]) -> CitationIndex:
    """Number citations by first appearance (statements, then contradictions). Evidence items
    with the same source and locator share a number; unknown ids get none."""
    by_key: dict[tuple[object, ...], int] = {}
    members: dict[int, list[str]] = {}
    sources: dict[int, str] = {}
    number_of: dict[str, int] = {}
    cited = [eid for s in report.statements() for eid in s.evidence_ids]
    cited += [eid for c in report.contradictions for eid in c.evidence_ids]
    for evidence_id in cited:
        item = evidence.get(evidence_id)
        if item is None or evidence_id in number_of:
            continue
        key = _locator_key(item)
        number = by_key.setdefault(key, len(by_key) + 1)
        number_of[evidence_id] = number
        members.setdefault(number, []).append(evidence_id)
        sources[number] = item.source_id
    citations = [
        Citation(number=n, source_id=sources[n], evidence_ids=tuple(members[n]))
        for n in sorted(members)
    ]
    return CitationIndex(citations=citations, number_of=number_of)


# --------------------------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------------------------


def evidence_anchor(evidence_id: str) -> str:
    """The fragment id an evidence item is rendered under: ``evidence-<id>``."""
    return "evidence-" + re.sub(r"[^A-Za-z0-9_.:-]", "-", evidence_id)


def _evidence_href(item: Evidence, evidence_url: EvidenceLink | None) -> str:
    default = "#" + evidence_anchor(item.id)
    if evidence_url is None:
        return default
    href = evidence_url(item)
    # Only fragments, same-site paths and http(s) URLs; never javascript:, data: or //host.
    if href.startswith("#") or (href.startswith("/") and not href.startswith("//")):
        return href
    return safe_source_url(href) or default


def describe_locator(item: Evidence) -> str:
    """Where in the source an excerpt is, for people: page and/or nearest heading."""
    locator = item.locator
    parts: list[str] = []
    if isinstance(locator, PdfLocator) and locator.page is not None:
        parts.append(f"page {locator.page}")
    if isinstance(locator, TextLocator | PdfLocator) and locator.heading:
        parts.append(f"under “{locator.heading}”")
    return ", ".join(parts)


@dataclass
class _RenderContext:
    evidence: Mapping[str, Evidence]
    sources: Mapping[str, SourceSummary]
    index: CitationIndex
    evidence_url: EvidenceLink | None

    def first_item(self, number: int) -> Evidence:
        citation = self.index.citations[number - 1]
        return self.evidence[citation.evidence_ids[0]]


def _context(
    report: Report,
    evidence: Mapping[str, Evidence],
    sources: Mapping[str, SourceSummary],
    evidence_url: EvidenceLink | None,
) -> _RenderContext:
    return _RenderContext(
        evidence=evidence,
        sources=sources,
        index=number_citations(report, evidence=evidence),
        evidence_url=evidence_url,
    )


_PARTIAL_NOTE = (
    "This is a partial report: research stopped before every planned question was covered."
)


def render_markdown(
    report: Report,
    *,
    evidence: Mapping[str, Evidence],
    sources: Mapping[str, SourceSummary],
    evidence_url: EvidenceLink | None = None,
) -> str:
    """Render a validated report as Markdown with numbered citations and a sources list.

    Citation links point to ``#evidence-<id>`` or to ``evidence_url(evidence)``; source links
    are http(s) only. Pass the report returned by :func:`finalize_report`.
    """
    ctx = _context(report, evidence, sources, evidence_url)
    out: list[str] = [f"# {escape_markdown(report.title)}", ""]
    if report.partial:
        out += [f"> {_PARTIAL_NOTE}", ""]
    if report.executive_summary:
        out += ["## Executive summary", ""]
        out += [_md_statement(s, ctx) for s in report.executive_summary] + [""]
    for section in report.sections:
        out += [f"## {escape_markdown(section.title)}", ""]
        for label, statements in statement_blocks(section.statements):
            if label:
                out += [f"### {escape_markdown(label)}", ""]
            out += [_md_statement(s, ctx) for s in statements] + [""]
    if report.contradictions:
        out += ["## Conflicting evidence", ""]
        for item in report.contradictions:
            line = f"- {escape_markdown(item.summary)}{_md_cites(item.evidence_ids, ctx)}"
            if item.resolution:
                line += f" Resolution: {escape_markdown(item.resolution)}"
            out.append(line)
        out.append("")
    if report.gaps:
        out += ["## Gaps", ""]
        for gap in report.gaps:
            prefix = f"({escape_markdown(gap.question_id)}) " if gap.question_id else ""
            out.append(f"- {prefix}{escape_markdown(gap.description)}")
        out.append("")
    if report.methodology:
        out += ["## Methodology", ""]
        out += [f"- {escape_markdown(line)}" for line in report.methodology] + [""]
    documents = [c for c in ctx.index.citations if _is_document(c, ctx)]
    web = [c for c in ctx.index.citations if not _is_document(c, ctx)]
    # Uploaded documents are listed apart from the web: a reader checks them in their own
    # library, not by following a link.
    for heading, citations in (
        ("Documents", documents),
        ("Web sources" if documents else "Sources", web),
    ):
        if citations:
            out += [f"## {heading}", ""]
            out += [_md_source(citation, ctx) for citation in citations] + [""]
    return "\n".join(out).rstrip() + "\n"


def _is_document(citation: Citation, ctx: _RenderContext) -> bool:
    source = ctx.sources.get(citation.source_id)
    return source is not None and is_document_url(source.url)


def _md_cites(evidence_ids: Sequence[str], ctx: _RenderContext) -> str:
    links = [
        f"[\\[{n}\\]]({markdown_url(_evidence_href(ctx.first_item(n), ctx.evidence_url))})"
        for n in ctx.index.numbers_for(evidence_ids)
    ]
    return (" " + "".join(links)) if links else ""


def statement_blocks(statements: Sequence[Statement]) -> list[tuple[str, list[Statement]]]:
    """Consecutive statements sharing a label, as (label, statements) blocks in order: the
    sub-headed blocks a section is shown in (``Statement.label``)."""
    blocks: list[tuple[str, list[Statement]]] = []
    for statement in statements:
        if blocks and blocks[-1][0] == statement.label:
            blocks[-1][1].append(statement)
        else:
            blocks.append((statement.label, [statement]))
    return blocks


def is_code_statement(statement: Statement, evidence: Mapping[str, Evidence]) -> bool:
    """Whether every excerpt ``statement`` cites is a whole code block of its page: the
    statement is then shown as code, line breaks and indentation kept."""
    cited = [evidence.get(eid) for eid in statement.evidence_ids]
    return bool(cited) and all(item is not None and item.locator.code for item in cited)


def _md_statement(statement: Statement, ctx: _RenderContext) -> str:
    label = "*Caveat:* " if statement.kind == "caveat" else ""
    cites = _md_cites(statement.evidence_ids, ctx)
    if is_code_statement(statement, ctx.evidence):
        return f"- {label}Code sample{cites}:" + markdown_code(statement.text, indent=2)
    text = escape_markdown_lines(statement.text, indent=2)
    return f"- {label}{text}{cites}"


def _md_source(citation: Citation, ctx: _RenderContext) -> str:
    source = ctx.sources.get(citation.source_id)
    item = ctx.evidence[citation.evidence_ids[0]]
    title = escape_markdown((source.title if source else "") or "Untitled source")
    url = safe_source_url(source.url if source else None)
    line = f"{citation.number}. " + (f"[{title}]({markdown_url(url)})" if url else title)
    if source and source.reference:
        line += f" — {escape_markdown(source.reference)}"
    elif source and source.publisher:
        line += f" — {escape_markdown(source.publisher)}"
    if source and source.source_class == "primary":
        # Only the first-party heuristic gives this class (research/engine/quality.py).
        line += f" · {FIRST_PARTY_LABEL}"
    if source and source.abstract_only:
        line += " — abstract only"
    where = describe_locator(item)
    if where:
        line += f" ({escape_markdown(where)})"
    indent = len(f"{citation.number}. ")
    if item.locator.code:
        return line + ":" + markdown_code(item.excerpt, indent=indent)
    return line + f": “{escape_markdown_lines(item.excerpt, indent=indent)}”"
