"""The report written from verified quotations, grouped by research question: the report of the
extractive backend, and the one the engine writes itself when no model budget is left for
synthesis (``write_extractive_report(request, note=…)``).

No sentence of this report is written by a program or a model: every finding is a verbatim
evidence excerpt, cited by its evidence id. Near-identical excerpts from different sources
become one finding citing all of them; questions without evidence become stated gaps. Each
section leads with the quotations that answer its question directly
(:mod:`research.engine.answer_order`), and the executive summary holds each required
question's best answer, or its gap.
"""

import re
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from research.engine.answer_order import (
    ANSWER_LABEL,
    after_announcers,
    answer_first,
    by_side,
    comparison_sides,
    defines_focus,
    holds_quoted,
    quotes_code,
    with_announced,
    with_siblings,
)
from research.engine.contracts import (
    BASIS_POINTS,
    ContradictionCandidate,
    Evidence,
    PlanQuestion,
    Report,
    ReportGap,
    ReportSection,
    SourceSummary,
    Statement,
    SynthesisRequest,
)
from research.engine.gaps import stated_gap, unanswered, unnamed_subject
from research.engine.ledger import content_order
from research.engine.pool_rank import PoolRanking, rank_pool
from research.engine.question_echo import asks
from research.engine.question_terms import (
    NEAR_DUPLICATE,
    SUPPORTS_RELEVANCE,
    TermWeights,
    answer_type_terms,
    jaccard,
    question_terms,
)
from research.engine.report_conflicts import (
    conflict_caveat,
    is_value_conflict,
    report_contradictions,
)
from research.engine.text import content_terms, fold, term_under

MAX_FINDINGS_PER_QUESTION = 6
# A report answering one question has room for more of its quotations.
MAX_FINDINGS_SOLE_QUESTION = 10
MIN_FINDINGS_SHOWN = 2
_STRONG_CLASSES = frozenset({"primary", "official"})
_RELEVANT_BP = round(SUPPORTS_RELEVANCE * BASIS_POINTS)

METHODOLOGY = (
    "Extractive report: no language model is configured, so this report quotes the retrieved "
    "sources verbatim instead of summarising them.",
    "For each research question, passages were ranked by keyword relevance (BM25 and "
    "idf-weighted coverage of the question's terms) and spread for diversity, then ranked "
    "again against the question's other passages, those naming its subject first; "
    "near-identical "
    "passages from different sources are cited together as one finding.",
    "Quotations are not reconciled or interpreted: where sources disagree, read the cited "
    "passages side by side.",
    "Where the heading a quotation stands under gives a date or figure the quotation lacks, "
    "or names the term (an option, a function) the quotation describes without naming it, "
    "the heading is quoted before it.",
    "Each question's section leads with the passages that answer it directly (Answer), then "
    "supporting and contrasting ones; a comparison shows one block per side.",
)


def _quote(excerpt: str) -> str:
    """The excerpt in quotation marks, as the page shows it: an excerpt of consecutive blocks
    (table rows, list items) keeps its line breaks and the tabs between table cells."""
    lines = [
        "\t".join(" ".join(cell.split()) for cell in line.split("\t"))
        for line in excerpt.splitlines()
        if line.strip()
    ]
    joined = "\n".join(lines)
    return f"\u201c{joined}\u201d"


_HEADING_SHOWN_CHARS = 120
# "2.1 Method", "IV. Results": a section's number is not a figure.
_SECTION_NUMBER = re.compile(r"^(?:\d+(?:\.\d+)*\.?|[IVXLC]+\.)\s+")


def _finding_text(item: Evidence, source: SourceSummary | None = None) -> str:
    """The quotation of ``item``, led by the heading it stands under when that heading carries
    a date or figure the quotation lacks: under "From 5 January 2025", "The adult single fare
    rises…" means nothing without the date. Likewise when the quotation describes a term of a
    definition list that it does not name: "Return the square root of X." says what it
    describes only under "Math Functions › sqrt(X)", as an option's description does only
    under its option (the heading the ledger gives such a text, ``under_term``). The heading
    is the source's own text too; the page's title heading is not repeated (the sources list
    names it). A code sample is its code as the page has it, which the report shows as a code
    block."""
    if item.locator.code:
        return item.excerpt.strip("\n")
    heading = " ".join((item.locator.heading or "").split())
    unnumbered = _SECTION_NUMBER.sub("", heading)
    missing = _numbers(unnumbered) - _numbers(item.excerpt)
    title = " ".join((source.title if source else "").split()).casefold()
    is_title = bool(title) and (heading.casefold() in title or title in heading.casefold())
    term = term_under(heading)
    spelled = term.removesuffix("…").strip() if term else ""
    unnamed = bool(spelled) and fold(spelled) not in fold(" ".join(item.excerpt.split()))
    if heading and (missing or unnamed) and not is_title:
        if len(heading) <= _HEADING_SHOWN_CHARS:
            return f"Under {_quote(heading)}: {_quote(item.excerpt)}"
        if term and not missing:  # the term alone when section and term are too long to show
            return f"Under {_quote(term)}: {_quote(item.excerpt)}"
    return _quote(item.excerpt)


def _best_relevance(group: list[Evidence]) -> int:
    return max(item.relevance_bp for item in group)


def _confidence(group: list[Evidence], sources: dict[str, SourceSummary]) -> str:
    if _best_relevance(group) < _RELEVANT_BP:
        return "low"
    source_ids = {item.source_id for item in group}
    strong = any(
        sources[sid].source_class in _STRONG_CLASSES for sid in source_ids if sid in sources
    )
    return "high" if strong or len(source_ids) >= 2 else "medium"


_NUMBER = re.compile(r"\d[\d,.]*\d|\d")


def _numbers(text: str) -> frozenset[str]:
    return frozenset(number.replace(",", "") for number in _NUMBER.findall(text))


def _group_near_duplicates(items: list[Evidence]) -> list[list[Evidence]]:
    """Groups of excerpts saying nearly the same thing, best first; a group's first item leads.

    Excerpts whose figures differ are never grouped, however alike their words: "worth 1.2
    billion" and "worth 1.9 billion" are two sides of a conflict, and each must be shown.
    """
    groups: list[tuple[frozenset[str], list[Evidence]]] = []
    for item in items:
        terms = frozenset(content_terms(item.excerpt))
        for lead_terms, members in groups:
            if jaccard(terms, lead_terms) >= NEAR_DUPLICATE and _numbers(item.excerpt) == _numbers(
                members[0].excerpt
            ):
                if all(member.source_id != item.source_id for member in members):
                    members.append(item)
                break
        else:
            groups.append((terms, [item]))
    return [members for _, members in groups]


def _affinities(request: SynthesisRequest) -> dict[tuple[str, str], float]:
    """How specifically each excerpt speaks to each question it was extracted for."""
    terms = {item.id: frozenset(content_terms(item.excerpt)) for item in request.evidence}
    weights = TermWeights(terms.values())
    # Per question: its weighted terms and the words naming the kind of answer it wants.
    questions = {
        question.id: (question_terms(question.text)[0], answer_type_terms(question.text))
        for question in request.plan.questions
    }
    found = {}
    for item in request.evidence:
        for question_id in item.question_ids:
            if question_id not in questions:
                continue
            query, answer_types = questions[question_id]
            # "On which dates…" is answered by a quotation carrying a date (or standing under
            # a dated heading), not by one repeating the word.
            answered = {
                term
                for term, shape in answer_types.items()
                if shape.search(item.excerpt) or shape.search(item.locator.heading or "")
            }
            found[(question_id, item.id)] = weights.coverage(query, terms[item.id] | answered)
    return found


def _homes(
    evidence: list[Evidence],
    affinity: dict[tuple[str, str], float],
    order: dict[str, int],
    limit: int,
    quotable: Callable[[str, Evidence], bool] = lambda qid, item: not item.locator.code,
) -> dict[str, str]:
    """The question each quotation is shown under: the one it speaks to most specifically,
    unless that section is full and another question it answers has room. Strongest
    quotations choose first, so a full section never pushes out its best ones. A quotation is
    shown only under a question it is ``quotable`` for (question id, item): a code sample
    under one it answers as code (:func:`research.engine.answer_order.quotes_code`)."""
    homes: dict[str, str] = {}
    load: dict[str, int] = defaultdict(int)

    def best_affinity(item: Evidence) -> float:
        return max((affinity.get((qid, item.id), 0.0) for qid in item.question_ids), default=0.0)

    for item in sorted(
        evidence, key=lambda e: (-e.relevance_bp, -best_affinity(e), content_order(e))
    ):
        candidates = sorted(
            (qid for qid in item.question_ids if qid in order and quotable(qid, item)),
            key=lambda qid: (-affinity.get((qid, item.id), 0.0), order[qid]),
        )
        if not candidates:
            continue
        chosen = next((qid for qid in candidates if load[qid] < limit), candidates[0])
        homes[item.id] = chosen
        load[chosen] += 1
    return homes


def _said(item: Evidence, sources: dict[str, SourceSummary]) -> str:
    """What names the subject of a quotation: its excerpt, heading and source's title."""
    source = sources.get(item.source_id)
    title = source.title if source else ""
    return f"{item.excerpt}\n{item.locator.heading or ''}\n{title}"


def _answers_directly(
    group: list[Evidence],
    question: str,
    sources: dict[str, SourceSummary],
    relevance: float,
    named: Callable[[Evidence], bool] | None = None,
) -> bool:
    """Whether a group's lead quotation answers ``question`` directly: it is relevant (its
    ``relevance``, 0–1, reaches :data:`SUPPORTS_RELEVANCE`), carries the kind of value the
    question asks for and names the subject the question names (the checks that otherwise
    make a stated gap, :func:`research.engine.gaps.unanswered`; ``named`` as there). A
    quotation that only asks questions (a forum post's question, a FAQ's heading) answers
    nothing, however well it matches; one holding a string the question quotes (the error
    message asked about, and what the page says of it) answers, however loosely it matches."""
    lead = group[0]
    if asks(lead.excerpt):
        return False
    if holds_quoted(question, lead.excerpt):
        return True
    if relevance < SUPPORTS_RELEVANCE:
        return False
    return not unanswered(question, [lead], sources, named)


@dataclass(frozen=True)
class _Chosen:
    """The quotations one section shows: its pool's ranking, the groups shown (in pool order)
    and the lead ids of the groups it answers with but has no room for (its overflow)."""

    pool: PoolRanking
    groups: list[list[Evidence]]
    overflow: frozenset[str]


def _choose(
    question: PlanQuestion,
    items: list[Evidence],
    sources: dict[str, SourceSummary],
    affinity: dict[tuple[str, str], float],
    home: dict[str, str],
    limit: int,
    spill: frozenset[str] = frozenset(),
) -> _Chosen:
    """Which of ``items`` the section of ``question`` shows, at most ``limit`` groups. A group
    whose lead is in ``spill`` (another section's overflow) counts as the section's own."""
    # The pool's own order (:mod:`research.engine.pool_rank`): the selector's relevance is
    # page-local, so the question's passages are ranked against each other.
    pool = rank_pool(
        question.text,
        items,
        sources,
        {item.id: affinity.get((question.id, item.id), 0.0) for item in items},
    )
    ranked = pool.ordered
    groups = _group_near_duplicates(ranked)

    def is_own(group: list[Evidence]) -> bool:
        return home.get(group[0].id) == question.id or group[0].id in spill

    # Each quotation is shown under the question it speaks to most specifically (or, when that
    # section is full, under another it answers); another question repeats it only when it
    # would otherwise show fewer than two.
    own = [group for group in groups if is_own(group)]
    borrowed = [group for group in groups if not is_own(group)]
    groups = own + borrowed[: max(0, MIN_FINDINGS_SHOWN - len(own))]

    # The quotations that answer come first; loose matches fill the room they leave, after
    # them (a section of five answers had left its other places empty while a loose match
    # held what the question asked).
    # A quotation answers when it names the question's subject and is relevant on the
    # selector's page-local scale, or on the pool's (BM25 against the pool's best, a relative
    # scale on which some passage always leads) while also carrying the kind of value the
    # question asks for: the pool's scale alone would let a passage repeating the question's
    # words ("how much the grant pays") pass for an answer. A quotation holding a string the
    # question quotes answers too: it is where the message the asker saw comes from, whether
    # or not it repeats the name of what printed it. One opening with the definition of what
    # the question asks the meaning of answers that question (below).
    quoting = {id(group) for group in groups if holds_quoted(question.text, group[0].excerpt)}
    defining = {id(group) for group in groups if defines_focus(question.text, group[0].excerpt)}

    def answers(group: list[Evidence]) -> bool:
        if id(group) in quoting:
            return True
        if not pool.names_subject(group[0]):
            return False
        if _best_relevance(group) >= _RELEVANT_BP or id(group) in defining:
            return True
        return any(
            pool.relevance(item) >= SUPPORTS_RELEVANCE
            and not unanswered(question.text, [item], sources, pool.names_subject)
            for item in group
        )

    answering = [group for group in groups if answers(group)]
    answer_ids = {id(group) for group in answering}
    if len(answering) >= MIN_FINDINGS_SHOWN:
        groups = answering + [group for group in groups if id(group) not in answer_ids]
    # Answer shape before rank when room runs out: a quotation that passes the gap check
    # (carries the kind of value asked for, a figure for "how many" or a date for "when", and
    # names the subject) keeps its place ahead of better-matching ones that do not. For a
    # question asking no kind of value only the naming counts, which the pool already ranks
    # first, so its order stands.
    groups.sort(
        key=lambda group: (
            id(group) not in answer_ids,
            bool(unanswered(question.text, group[:1], sources, pool.names_subject)),
        )
    )
    # A quotation holding a string the question quotes (the error message asked about) is
    # where that string comes from: it keeps its place and leads, whatever the pool's order.
    # For a question asking what something is, a quotation opening with its definition (a
    # short subject naming it, then the copula) is the answer, as in the selector
    # (:func:`research.engine.answer_order.defines_focus`): it comes next, whatever words
    # of the question other quotations repeat (``quoting`` and ``defining``, above).
    def lead(group: list[Evidence]) -> tuple[bool, bool]:
        return id(group) not in quoting, id(group) not in defining

    groups.sort(key=lead)
    beyond = groups[limit:]
    groups = groups[:limit]
    groups.sort(
        key=lambda group: (*lead(group), id(group) not in answer_ids, ranked.index(group[0]))
    )
    # Each quotation brings its siblings, the alternatives its page lists in the same words,
    # and one ending in a colon the passages it announces, right after it.
    groups = with_announced(with_siblings(groups, own), own)
    shown = {group[0].id for group in groups}
    overflow = frozenset(
        group[0].id
        for group in beyond
        if home.get(group[0].id) == question.id and group[0].id not in shown
    )
    return _Chosen(pool=pool, groups=groups, overflow=overflow)


def _section(
    question: PlanQuestion,
    chosen: _Chosen,
    sources: dict[str, SourceSummary],
    position: int,
    conflicts: Sequence[ContradictionCandidate] = (),
    answerable: bool = True,
) -> tuple[ReportSection, list[Statement]]:
    """The section of ``question`` and its findings, the quotations ``chosen`` for it answer
    first (:mod:`research.engine.answer_order`). With ``answerable`` false (the question's
    evidence never names a subject it asks about) no quotation is labelled an answer."""
    # Claim ids derive from the section's position: question ids may already be 64 characters.
    prefix = f"s{position}"
    pool, groups, ranked = chosen.pool, chosen.groups, chosen.pool.ordered
    sides = comparison_sides(question.text)
    if sides:
        placed = by_side(groups, sides, lambda item: _said(item, sources))
    else:
        placed = answer_first(
            groups,
            answers_directly=lambda group: answerable
            and _answers_directly(
                group, question.text, sources, pool.relevance(group[0]), pool.names_subject
            ),
            conflicts=conflicts,
        )
    # What a lead-in ending in a colon announces reads right after it.
    placed = after_announcers(placed)
    statements = [
        Statement(
            claim_id=f"{prefix}-{number}",
            kind="finding",
            text=_finding_text(block.group[0], sources.get(block.group[0].source_id)),
            evidence_ids=[item.id for item in block.group],
            confidence=_confidence(block.group, sources),  # type: ignore[arg-type]
            label=block.label,
        )
        for number, block in enumerate(placed, start=1)
    ]
    findings = list(statements)
    cited_sources = {item.source_id for group in groups for item in group}
    if len(cited_sources) == 1:
        statements.append(
            Statement(
                claim_id=f"{prefix}-single-source",
                kind="caveat",
                text="All quoted evidence for this question comes from a single source.",
                confidence="low",
            )
        )
    if all(item.relevance_bp < _RELEVANT_BP for item in ranked):
        statements.append(
            Statement(
                claim_id=f"{prefix}-loose-match",
                kind="caveat",
                text="The passages found only touch on this question; they may not answer it.",
                confidence="low",
            )
        )
    title = question.text if len(question.text) <= 300 else question.text[:297] + "…"
    return ReportSection(id=question.id, title=title, statements=statements), findings


def _summary_lead(
    question_id: str,
    findings: list[Statement],
    summary: list[Statement],
    gaps: list[ReportGap],
    conflicts: Sequence[ContradictionCandidate],
) -> Statement | None:
    """What the executive summary says for one required question: its best direct answer not
    already summarised (both sides, when that answer's value is disputed); its strongest
    finding when the quotations together answer it though none does alone; else the gap
    sentence saying why it is unanswered. None when its answers are already summarised."""
    summarised = {tuple(statement.evidence_ids) for statement in summary}
    fresh = [f for f in findings if tuple(f.evidence_ids) not in summarised]
    gap = next((g for g in gaps if g.question_id == question_id), None)
    answers = [f for f in fresh if f.label == ANSWER_LABEL]
    lead = answers[0] if answers else (fresh[0] if fresh and gap is None else None)
    if lead is None:
        if gap is None:
            return None
        return Statement(
            claim_id="summary-gap", kind="caveat", text=gap.description, confidence="low"
        )
    conflict = next(
        (
            c
            for c in conflicts
            if is_value_conflict(c) and set(lead.evidence_ids) & set(c.evidence_ids)
        ),
        None,
    )
    if conflict is not None:
        return conflict_caveat(conflict, "summary-conflict")
    return lead.model_copy(update={"label": ""})


def _overflow(
    questions: Sequence[PlanQuestion],
    shown: dict[str, list[Evidence]],
    sources: dict[str, SourceSummary],
    affinity: dict[tuple[str, str], float],
    home: dict[str, str],
    limit: int,
) -> frozenset[str]:
    """The quotations that answer the question they are shown under but find no room there,
    that section's pool order having filled it: each may be shown under another question
    whose pool holds it (it was extracted for that one too). The homes are chosen before any
    pool is ranked (:func:`_homes`), so a section can be full of its own quotations while a
    sibling question shows one or two."""
    return frozenset(
        lead
        for question in questions
        if shown[question.id]
        for lead in _choose(question, shown[question.id], sources, affinity, home, limit).overflow
    )


def write_extractive_report(request: SynthesisRequest, *, note: str | None = None) -> Report:
    """The extractive report for ``request``: quotations per question, gaps, contradictions.

    ``note`` says why a report that would have been a model's quotes the evidence instead
    (the engine's own report): it leads the executive summary as a caveat and replaces the
    first methodology line, which says that no model is configured."""
    plan = request.plan
    sources = {source.id: source for source in request.sources}
    known = {item.id for item in request.evidence}
    by_question: dict[str, list[Evidence]] = defaultdict(list)
    for item in request.evidence:
        for question_id in item.question_ids:
            by_question[question_id].append(item)

    sections: list[ReportSection] = []
    summary: list[Statement] = []
    notes = (
        [Statement(claim_id="summary-note", kind="caveat", text=note, confidence="low")]
        if note
        else []
    )
    gaps: list[ReportGap] = list(request.gaps)
    gap_questions = {gap.question_id for gap in gaps if gap.question_id}
    required = set(plan.required_question_ids)
    affinity = _affinities(request)
    order = {question.id: place for place, question in enumerate(plan.questions)}
    limit = MAX_FINDINGS_SOLE_QUESTION if len(plan.questions) == 1 else MAX_FINDINGS_PER_QUESTION
    texts = {question.id: question.text for question in plan.questions}

    # A code sample answers a question about usage, or one quoting a string it holds (the
    # error message asked about); for any other question it stays in the evidence list but is
    # quoted as no finding.
    def quotable(question_id: str, item: Evidence) -> bool:
        return not item.locator.code or quotes_code(texts[question_id], item.excerpt)

    home = _homes(request.evidence, affinity, order, limit, quotable)
    shown = {
        question.id: [
            item for item in by_question.get(question.id, []) if quotable(question.id, item)
        ]
        for question in plan.questions
    }
    spill = _overflow(plan.questions, shown, sources, affinity, home, limit)
    for question in plan.questions:
        items = by_question.get(question.id, [])
        findings: list[Statement] = []
        if not items:
            description = f"No verified evidence was found for: {question.text}"
        elif not shown[question.id]:
            description = (
                "The evidence found is code, quoted only for usage questions or when it holds "
                f"a string the question quotes: {question.text}"
            )
        else:
            chosen = _choose(question, shown[question.id], sources, affinity, home, limit, spill)
            section, findings = _section(
                question,
                chosen,
                sources,
                position=len(sections) + 1,
                conflicts=request.contradictions,
                # A subject none of the question's evidence names leaves it unanswered however
                # well a quotation fits its other words: no "Answer" then, and the summary
                # states the gap rather than a quotation.
                answerable=not unnamed_subject(question.text, shown[question.id], sources),
            )
            sections.append(section)
            quoted = [
                item
                for item in shown[question.id]
                if any(item.id in f.evidence_ids for f in findings)
            ]
            description = stated_gap(question.text, quoted, sources, shown[question.id])
        if description and question.id not in gap_questions:
            gaps.append(ReportGap(question_id=question.id, description=description))
        if question.id in required:
            lead = _summary_lead(question.id, findings, summary, gaps, request.contradictions)
            if lead is not None:
                summary.append(lead.model_copy(update={"claim_id": f"summary-{len(summary) + 1}"}))

    covered = sum(1 for question in plan.questions if by_question.get(question.id))
    used_sources = {item.source_id for item in request.evidence}
    methodology = [
        *((note, *METHODOLOGY[1:]) if note else METHODOLOGY),
        f"{len(request.evidence)} verified excerpts from {len(used_sources)} sources; "
        f"{covered} of {len(plan.questions)} research questions have evidence.",
    ]
    if request.partial:
        methodology.append(
            "Research stopped before every question was covered, so this report is partial."
        )
    # The engine's own report keeps the plan's objective as its title.
    title = plan.objective if note else f"Extractive report: {plan.objective}"
    return Report(
        title=title if len(title) <= 300 else title[:299] + "…",
        executive_summary=[*notes, *summary],
        sections=sections,
        contradictions=report_contradictions(request.contradictions, known),
        gaps=gaps,
        methodology=methodology,
        partial=request.partial,
        mode="extractive",
    )
