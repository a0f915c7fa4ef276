"""The research loop (DESIGN §5): planning, program-controlled research and synthesis.

The orchestrator talks to the world only through the ports (``Store``, ``ModelClient``,
``SourceAdapter``, ``EventSink``, ``Clock``) and decides everything with the engine's own
rules: the decision model proposes actions, :func:`validate_actions` and the
:class:`BudgetLedger` decide which run, every action becomes a durable step before it runs,
and every excerpt is verified against the stored snapshot before it counts.

Threads: searches, fetches and model extraction calls run on a small thread pool; every
store call happens on the calling thread, because the Django store keeps one database
connection per thread. The store may raise :class:`LeaseLost` from any write; it is never
caught here, so a worker that lost its run stops writing at once.
"""

import logging
import unicodedata
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from research.engine.citations import CitationProblem, finalize_report, problems_as_text
from research.engine.contracts import (
    CandidateSummary,
    ContradictionCandidate,
    ContradictionPosition,
    CountsUpdated,
    Evidence,
    EvidenceSummary,
    ExtractionRequest,
    FailedSource,
    FinishAction,
    PhaseChanged,
    PlanReady,
    PlanRequest,
    ProgressEvent,
    ProgressPhase,
    QuestionCoverage,
    ReadAction,
    Report,
    ReportGap,
    ReportReady,
    ReportSection,
    ResearchBrief,
    ResearchPlan,
    RunSnapshot,
    SearchAction,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
    SourceQuality,
    SourceRecord,
    SourceSummary,
    SourceUpdated,
    Statement,
    StepFinished,
    StepKind,
    StepRecord,
    StepStarted,
    SynthesisRequest,
    Usage,
    WorkingState,
)
from research.engine.guards import (
    MAX_CONCURRENT_FETCHES,
    MAX_CONCURRENT_SEARCHES,
    PRIMARY_CLASSES,
    STOP_MESSAGES,
    SYSTEMIC_FAILURE_LIMIT,
    Action,
    ActionVerdict,
    BudgetLedger,
    BudgetRefused,
    FinishGateResult,
    StopReason,
    action_dedupe_key,
    advance_iteration,
    central_contradictions,
    compute_coverage,
    estimate_tokens,
    evaluate_finish_gate,
    fingerprint_query,
    plan_fetch_waves,
    research_stop_reason,
    validate_actions,
)
from research.engine.ledger import (
    assign_independence_clusters,
    clip_blocks,
    find_contradictions,
    find_duplicate,
    verify_candidates,
)
from research.engine.outcomes import BUDGET_STOPS, NOTHING_NEW_STOPS
from research.engine.ports import (
    AcquisitionError,
    CandidateDrop,
    Clock,
    EventSink,
    LeaseLost,
    ModelClient,
    ModelError,
    SourceAdapter,
    Store,
    fetch_counted,
)
from research.engine.states import IllegalTransition, RunStatus
from research.engine.urls import (
    UnsupportedURLError,
    canonical_url,
    evaluate_domain_policy,
    hostname,
    registrable_domain,
)

logger = logging.getLogger(__name__)

_S = RunStatus

# --------------------------------------------------------------------------------------------
# Model-call allowances
# --------------------------------------------------------------------------------------------

# A client may repair invalid output once (DESIGN §5: repair calls count as model calls), so
# one request can cost two calls; reservations assume the worst so limits hold.
CALLS_PER_REQUEST = 2
# System prompt and framing the client wraps around each request.
PROMPT_OVERHEAD_TOKENS = 1_500
OUTPUT_TOKEN_CAPS: dict[str, int] = {
    "plan": 4_000,
    "decide": 1_500,
    "extract": 4_000,
    "synthesize": 16_000,
}
# Below this many output tokens a synthesis call cannot produce a useful report; the program
# writes the report from the evidence itself instead.
MIN_SYNTHESIS_OUTPUT_TOKENS = 800
# A snapshot is cut to fit the token budget, but never below this many characters.
MIN_EXTRACTION_CHARS = 2_000
# Reading a source with less than this many bytes of budget left is not worth a fetch.
MIN_SOURCE_BYTES = 2_000

RECENT_QUERIES_KEPT = 20
BRIEF_CANDIDATES = 30
BRIEF_EVIDENCE = 80
BRIEF_FAILED_SOURCES = 20
_FOLLOW_UP_QUALIFIERS = (
    "official figures",
    "official statistics",
    "primary source",
    "methodology",
    "latest data",
)


def call_allowance(
    request_text: str, *, output_tokens: int, calls: int = CALLS_PER_REQUEST
) -> Usage:
    """The most one model request may consume: what the budget reserves before the call.

    ``request_text`` is the request contract as JSON; ``output_tokens`` is the output cap
    passed to the client (``max_output_tokens``). A repair resends the prompt and the first
    answer, hence the multiplication. Token counts are the engine's generous estimate
    (:func:`estimate_tokens`); clients are expected to stay within them.
    """
    prompt = estimate_tokens(request_text) + PROMPT_OVERHEAD_TOKENS
    return Usage(
        model_calls=calls,
        input_tokens=calls * prompt + (calls - 1) * output_tokens,
        output_tokens=calls * output_tokens,
    )


# --------------------------------------------------------------------------------------------
# Source quality
# --------------------------------------------------------------------------------------------


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


# Address-based labels; a heuristic that the sources list shows as such.
_OFFICIAL_SUFFIXES = tuple(
    sorted(_names(".gov .mil .int .europa.eu .gouv.fr .gc.ca .govt.nz .gov.uk .gov.au .bund.de"))
)
_OFFICIAL_DOMAINS = _names(
    """europa.eu un.org who.int oecd.org imf.org worldbank.org insee.fr destatis.de
    ons.gov.uk census.gov ecb.europa.eu admin.ch"""
)
_ACADEMIC_SUFFIXES = tuple(sorted(_names(".edu .ac.uk .ac.jp .edu.au .ac.nz")))
_ACADEMIC_DOMAINS = _names(
    """arxiv.org doi.org nature.com science.org sciencedirect.com springer.com wiley.com
    jstor.org plos.org ssrn.com nber.org biorxiv.org medrxiv.org semanticscholar.org"""
)
_USER_GENERATED_DOMAINS = _names(
    """reddit.com quora.com medium.com substack.com stackexchange.com stackoverflow.com
    twitter.com x.com facebook.com youtube.com tiktok.com blogspot.com wordpress.com
    tumblr.com linkedin.com"""
)
_AGGREGATOR_DOMAINS = _names(
    "wikipedia.org news.google.com msn.com yahoo.com flipboard.com statista.com"
)
_REPUTABLE_SECONDARY_DOMAINS = _names(
    """reuters.com apnews.com bbc.co.uk bbc.com nytimes.com ft.com economist.com
    theguardian.com wsj.com bloomberg.com lemonde.fr washingtonpost.com npr.org"""
)


def _matches(host: str, domains: Iterable[str]) -> bool:
    return any(host == domain or host.endswith("." + domain) for domain in domains)


def classify_source(document: SourceDocument, *, now: datetime | None = None) -> SourceQuality:
    """Label an acquired document from its address and metadata (a heuristic, shown as such).

    Government and intergovernmental sites are ``official``; universities, preprint servers
    and journals ``academic``; forums, social networks and blog platforms
    ``user_generated``; encyclopedias and news aggregators ``aggregator``; a short list of
    wire services and newspapers ``reputable_secondary``; everything else ``unknown``.
    Recency compares the publication year with ``now``.
    """
    try:
        host = hostname(document.final_url)
    except UnsupportedURLError:
        host = ""
    if _matches(host, _OFFICIAL_DOMAINS) or host.endswith(_OFFICIAL_SUFFIXES):
        source_class, authority = "official", "high"
    elif _matches(host, _ACADEMIC_DOMAINS) or host.endswith(_ACADEMIC_SUFFIXES):
        source_class, authority = "academic", "high"
    elif _matches(host, _USER_GENERATED_DOMAINS):
        source_class, authority = "user_generated", "low"
    elif _matches(host, _AGGREGATOR_DOMAINS):
        source_class, authority = "aggregator", "medium"
    elif _matches(host, _REPUTABLE_SECONDARY_DOMAINS):
        source_class, authority = "reputable_secondary", "medium"
    else:
        source_class, authority = "unknown", "unknown"
    recency = "unknown"
    year = (document.published_at or "")[:4]
    if year.isdigit() and now is not None:
        recency = "current" if now.year - int(year) <= 2 else "dated"
    notes = ["Classified from the web address; not a judgement of accuracy."]
    if document.truncated:
        notes.append("Only the first part of the page was kept (size limit).")
    return SourceQuality(
        source_class=source_class,  # type: ignore[arg-type]
        authority=authority,  # type: ignore[arg-type]
        proximity="direct" if source_class in PRIMARY_CLASSES else "unknown",
        recency=recency,  # type: ignore[arg-type]
        notes=notes,
    )


SourceClassifier = Callable[[SourceDocument], SourceQuality]


# --------------------------------------------------------------------------------------------
# Small helpers
# --------------------------------------------------------------------------------------------


def display_text(text: str, limit: int = 160) -> str:
    """Text fit for a progress line: control and invisible characters removed, whitespace
    collapsed, cut at a word boundary with an ellipsis when longer than ``limit``."""
    kept = "".join(
        " " if unicodedata.category(char) in ("Cc", "Zl", "Zp") else char
        for char in text
        if unicodedata.category(char) != "Cf"
    )
    line = " ".join(kept.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut + "…"


def _domain_of(url: str) -> str:
    try:
        return hostname(url)
    except UnsupportedURLError:
        return "an unknown site"


def _site_of(url: str) -> str:
    try:
        return registrable_domain(hostname(url))
    except UnsupportedURLError:
        return url


def follow_up_query(question_text: str, seen_fingerprints: Iterable[str]) -> str | None:
    """A targeted search for a question whose evidence conflicts, or ``None``.

    Built from the plan's question text (which the user approved) and a qualifier asking
    for authoritative figures; never from page text, so a page cannot steer the search. The
    first variant not equivalent to an earlier search wins.
    """
    seen = set(seen_fingerprints)
    base = display_text(question_text.rstrip("?"), 240)
    for qualifier in _FOLLOW_UP_QUALIFIERS:
        query = f"{base} {qualifier}"
        fingerprint = fingerprint_query(query)
        if not fingerprint.empty and fingerprint.key not in seen:
            return query
    return None


def contradiction_resolved(
    contradiction: ContradictionCandidate,
    evidence: Mapping[str, Evidence],
    sources: Mapping[str, SourceRecord],
) -> bool:
    """Whether a followed-up contradiction counts as resolved: its values differ in scope
    (date, place, definition, method — not a genuine conflict), or exactly one position is
    backed by a primary or official source."""
    if contradiction.scope_differences:
        return True
    backed = 0
    for position in contradiction.positions:
        classes = set()
        for evidence_id in position.evidence_ids:
            item = evidence.get(evidence_id)
            source = sources.get(item.source_id) if item else None
            if source is not None:
                classes.add(source.quality.source_class)
        if classes & PRIMARY_CLASSES:
            backed += 1
    return backed == 1


def fallback_report(
    plan: ResearchPlan,
    evidence: Sequence[Evidence],
    sources: Mapping[str, SourceSummary],
    *,
    gaps: Sequence[ReportGap] = (),
    partial: bool = False,
    note: str,
) -> Report:
    """A report the program writes itself from verified quotations, used when no model
    budget is left for synthesis. Every finding quotes one evidence item and cites it."""
    by_question: dict[str, list[Evidence]] = {qid: [] for qid in plan.question_ids}
    for item in sorted(evidence, key=lambda e: (-e.relevance_bp, -e.confidence_bp, e.id)):
        for qid in item.question_ids:
            if qid in by_question and len(by_question[qid]) < 3:
                by_question[qid].append(item)
                break
    sections: list[ReportSection] = []
    for position, question in enumerate(plan.questions, start=1):
        # Claim ids derive from the section's position, not the question id: a valid question
        # id may already be 64 characters, the longest an id may be. Positions are unique and
        # the same for the same plan.
        prefix = f"s{position}"
        statements = []
        for number, item in enumerate(by_question[question.id], start=1):
            source = sources.get(item.source_id)
            origin = (source.title if source and source.title else "") or "A source"
            statements.append(
                Statement(
                    claim_id=f"{prefix}-e{number}",
                    kind="finding",
                    text=f"{display_text(origin, 200)} states: “{item.excerpt}”",
                    evidence_ids=[item.id],
                    confidence="medium",
                )
            )
        if not statements:
            statements.append(
                Statement(
                    claim_id=f"{prefix}-gap",
                    kind="caveat",
                    text="No verified evidence was found for this question.",
                    confidence="low",
                )
            )
        sections.append(
            ReportSection(
                id=question.id, title=display_text(question.text, 300), statements=statements
            )
        )
    return Report(
        title=display_text(plan.objective, 300),
        executive_summary=[
            Statement(claim_id="summary-note", kind="caveat", text=note, confidence="low")
        ],
        sections=sections,
        gaps=list(gaps),
        partial=partial,
        mode="extractive",
    )


class PlanningFailed(Exception):
    """Drafting or revising the plan failed; the run is ``failed`` with this reason."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return self.reason


# --------------------------------------------------------------------------------------------
# Internal state of one advance() call
# --------------------------------------------------------------------------------------------


@dataclass
class _Run:
    """What one phase of one run works with; the working state is checkpointed from here."""

    id: str
    snapshot: RunSnapshot
    plan: ResearchPlan
    ledger: BudgetLedger
    state: WorkingState

    @property
    def policy(self) -> SourcePolicy:
        return self.snapshot.policy


@dataclass
class _View:
    """The run's sources and evidence as the rules see them right now."""

    sources: list[SourceRecord]
    by_id: dict[str, SourceRecord]
    evidence: list[Evidence]
    coverage: dict[str, QuestionCoverage]
    contradictions: list[ContradictionCandidate]
    central: list[ContradictionCandidate]
    gate: FinishGateResult


@dataclass
class _Fetch:
    """One read step in flight: the source, the pending fetch or the stored snapshot."""

    step: StepRecord
    source: SourceRecord
    max_bytes: int
    future: "Future[SourceDocument] | None" = None
    document: SourceDocument | None = None
    usage: Usage = field(default_factory=Usage)


@dataclass
class _Batch:
    """The steps of one iteration still to run, and what happened to those that ran."""

    searches: list[StepRecord] = field(default_factory=list)
    reads: list[StepRecord] = field(default_factory=list)
    queued_sources: set[str] = field(default_factory=set)
    successes: int = 0
    systemic_failures: int = 0

    def add_read(self, step: StepRecord) -> None:
        self.reads.append(step)
        self.queued_sources.add(str(step.payload.get("source_id", "")))


@dataclass(frozen=True)
class _Halt:
    """Why the research loop left: a stop (go to synthesis), a control, or a failure.

    ``stop`` is the :class:`StopReason` value (for a failure too, when it has one) and
    ``limit`` the budget counter that ran out, for a budget stop."""

    kind: Literal["stop", "pause", "cancel", "fail"]
    reason: str = ""
    stop: str | None = None
    limit: str | None = None


_PAUSE = _Halt("pause")
_CANCEL = _Halt("cancel")


# --------------------------------------------------------------------------------------------
# The orchestrator
# --------------------------------------------------------------------------------------------


class Orchestrator:
    """Runs research runs through their lifecycle using only the ports.

    ``advance(run_id)`` does whatever the run's status calls for and returns when the run
    needs a person (awaiting approval, paused, failed, budget exhausted) or is finished.
    It is safe to call again after a crash: steps are found by their dedupe keys, sources
    by canonical URL and evidence by hash, so nothing is done or counted twice.

    Options: ``max_parallel_searches`` (1–2) and ``max_parallel_fetches`` (1–3) may only
    lower the design's limits; ``max_parallel_extractions`` bounds concurrent extraction
    calls (set it to the model endpoint's concurrency); ``search_results`` is the number of
    results asked of a search; ``extraction_max_items`` caps evidence per source;
    ``calls_per_request`` is how many model calls one request may cost (2 for a client that
    repairs invalid output once, 1 for one that never retries, such as the extractive
    backend); ``classify`` labels acquired documents (default :func:`classify_source`).
    """

    def __init__(
        self,
        *,
        store: Store,
        model: ModelClient,
        sources: SourceAdapter,
        events: EventSink,
        clock: Clock,
        max_parallel_searches: int = MAX_CONCURRENT_SEARCHES,
        max_parallel_fetches: int = MAX_CONCURRENT_FETCHES,
        max_parallel_extractions: int = 3,
        search_results: int = 8,
        extraction_max_items: int = 12,
        calls_per_request: int = CALLS_PER_REQUEST,
        classify: SourceClassifier | None = None,
    ) -> None:
        if not 1 <= max_parallel_searches <= MAX_CONCURRENT_SEARCHES:
            raise ValueError(
                f"max_parallel_searches must be between 1 and {MAX_CONCURRENT_SEARCHES}."
            )
        if not 1 <= max_parallel_fetches <= MAX_CONCURRENT_FETCHES:
            raise ValueError(
                f"max_parallel_fetches must be between 1 and {MAX_CONCURRENT_FETCHES}."
            )
        if max_parallel_extractions < 1:
            raise ValueError("max_parallel_extractions must be at least 1.")
        if not 1 <= calls_per_request <= 3:
            raise ValueError("calls_per_request must be between 1 and 3.")
        if not 1 <= extraction_max_items <= 40:
            raise ValueError("extraction_max_items must be between 1 and 40.")
        self._store = store
        self._model = model
        self._sources = sources
        self._events = events
        self._clock = clock
        self._max_searches = max_parallel_searches
        self._max_fetches = max_parallel_fetches
        self._max_extractions = max_parallel_extractions
        self._search_results = search_results
        self._extraction_max_items = extraction_max_items
        self._calls = calls_per_request
        self._classify = classify or (lambda document: classify_source(document, now=clock.now()))

    # ----------------------------------------------------------------------------------------
    # Public API
    # ----------------------------------------------------------------------------------------

    def advance(self, run_id: str) -> RunStatus:
        """Do the work the run's status calls for until it needs a person or is finished.

        created/planning → a plan (awaiting_approval, or failed); queued/researching →
        research, then synthesis (completed, or budget_exhausted with a partial report);
        synthesizing → synthesis from stored evidence. Any other status is returned as is.
        Pause and cancel requests are honoured at every safe boundary.
        """
        run = self._store.load_run(run_id)
        while True:
            self._store.heartbeat(run_id)
            status = run.status
            if status in (_S.CREATED, _S.PLANNING):
                self._plan_phase(run)
            elif status in (_S.QUEUED, _S.RESEARCHING):
                self._research_phase(run)
            elif status == _S.SYNTHESIZING:
                self._synthesis_phase(run)
            else:
                return status
            run = self._store.load_run(run_id)
            if run.status == status:
                # Nothing moved (another worker or a control changed the run under us).
                return run.status

    def revise_plan(self, run_id: str, instruction: str) -> ResearchPlan:
        """Revise the plan of a paused run (or one awaiting approval) with ``instruction``.

        The planner sees the previous plan and the instruction; the new plan gets the next
        version and the run returns to awaiting_approval. Steps that have not run are
        cancelled (they belonged to the old plan) and evidence addressing no question of
        the new plan is marked out of scope, never deleted. Raises
        :class:`IllegalTransition` when the run is in another status and
        :class:`PlanningFailed` (the run is then ``failed``) when the planner fails.
        """
        run = self._store.load_run(run_id)
        if run.status in (_S.PAUSED, _S.AWAITING_APPROVAL):
            if not self._transition(run_id, run.status, _S.PLANNING, "Revising the plan."):
                raise IllegalTransition(self._store.load_run(run_id).status, _S.PLANNING)
        elif run.status != _S.PLANNING:
            raise IllegalTransition(run.status, _S.PLANNING)
        self._store.cancel_pending_steps(run_id)
        run = self._store.load_run(run_id)
        return self._draft_plan(run, refinement=instruction.strip() or None)

    # ----------------------------------------------------------------------------------------
    # Planning
    # ----------------------------------------------------------------------------------------

    def _plan_phase(self, run: RunSnapshot) -> None:
        if run.status == _S.CREATED and not self._transition(
            run.id, _S.CREATED, _S.PLANNING, "Planning started."
        ):
            return
        if self._honour_controls(run.id, _S.PLANNING) is not None:
            return
        steps = {step.dedupe_key: step for step in self._store.list_steps(run.id)}
        drafted = steps.get(f"plan:v{run.plan_version}")
        if (
            run.plan is not None
            and f"plan:v{run.plan_version + 1}" not in steps
            and drafted is not None
            and drafted.status == "succeeded"
        ):
            # The plan was saved just before an interruption; only the transition is missing.
            # (A failed revision has a step for the next version and is drafted again.)
            self._plan_ready(run.id, run.plan_version)
            return
        try:
            self._draft_plan(run, refinement=None)
        except PlanningFailed:
            return  # recorded: the run is failed with the reason

    def _draft_plan(self, run: RunSnapshot, *, refinement: str | None) -> ResearchPlan:
        """Ask the planner, store the plan as the next version and await approval. Raises
        :class:`PlanningFailed` after recording the failure (the run is then failed)."""
        # Elapsed time is measured from here, so the whole phase counts against the budget.
        ledger = self._ledger(run)
        version = run.plan_version + 1
        revising = run.plan is not None
        message = "Revising the research plan" if revising else "Drafting the research plan"
        self._phase(run.id, "planning", _S.PLANNING, message)
        step = self._store.begin_step(
            run.id,
            kind="plan",
            dedupe_key=f"plan:v{version}",
            rationale=display_text(refinement or "", 400),
            payload={"refinement": refinement},
            iteration=run.state.iteration,
        )
        # A retried revision keeps the instruction it was given the first time.
        refinement = refinement or step.payload.get("refinement") or None
        step = self._store.start_step(step.id)
        self._step_started(run.id, step.id, "plan", message)
        self._count_retry(ledger, step)

        def fail(reason: str, usage: Usage, stop: str | None = None) -> PlanningFailed:
            self._store.finish_step(step.id, status="failed", usage=usage, error=reason)
            self._step_finished(run.id, step.id, "plan", "failed", "Planning failed")
            self._store.save_checkpoint(run.id, state=run.state, usage=ledger.usage())
            self._fail(run.id, _S.PLANNING, reason, stop=stop)
            return PlanningFailed(reason)

        if not run.objective.strip():
            raise fail("The run has no question to plan research for.", Usage())
        request = PlanRequest(
            objective=run.objective[:4000],
            policy=run.policy,
            depth=run.depth,
            budget=run.budget,
            previous_plan=run.plan,
            refinement=refinement,
            requested_sections=run.requested_sections,
            max_output_tokens=OUTPUT_TOKEN_CAPS["plan"],
        )
        key = f"plan:v{version}#{uuid.uuid4().hex[:12]}"
        try:
            ledger.reserve(key, self._allowance(request.model_dump_json(), "plan"))
        except BudgetRefused as refusal:
            raise fail(
                f"The research plan could not be drafted: {refusal.reason}", Usage()
            ) from None
        try:
            result = self._model.plan(request)
        except ModelError as error:
            ledger.settle(key, error.usage)
            raise fail(
                f"The research plan could not be drafted: {error.reason}",
                error.usage,
                _outage(error),
            ) from None
        ledger.settle(key, result.usage)
        plan = _with_requested_sections(
            _with_required_question(result.value), run.requested_sections
        )
        if not self._store.save_plan(run.id, plan=plan, expected_version=run.plan_version):
            raise fail("The plan was changed by someone else while it was drafted.", result.usage)
        if revising:
            self._store.mark_out_of_scope(run.id, question_ids_kept=plan.question_ids)
        self._store.finish_step(
            step.id,
            status="succeeded",
            usage=result.usage,
            summary=f"Plan version {version} with {len(plan.questions)} questions",
        )
        self._step_finished(
            run.id,
            step.id,
            "plan",
            "succeeded",
            f"Plan with {len(plan.questions)} questions drafted",
        )
        self._store.save_checkpoint(run.id, state=run.state, usage=ledger.usage())
        self._plan_ready(run.id, version)
        return plan

    def _plan_ready(self, run_id: str, version: int) -> None:
        if self._transition(run_id, _S.PLANNING, _S.AWAITING_APPROVAL, "The plan is ready."):
            self._emit(
                PlanReady(
                    run_id=run_id, plan_version=version, message="The plan is ready for review"
                )
            )
            self._phase(run_id, "plan_ready", _S.AWAITING_APPROVAL, "The plan is ready for review")

    # ----------------------------------------------------------------------------------------
    # Research
    # ----------------------------------------------------------------------------------------

    def _research_phase(self, snapshot: RunSnapshot) -> None:
        run_id = snapshot.id
        ledger = self._ledger(snapshot)
        if snapshot.status == _S.QUEUED:
            if self._honour_controls(run_id, _S.QUEUED) is not None:
                return
            if not self._transition(run_id, _S.QUEUED, _S.RESEARCHING, "Research started."):
                return
            self._phase(run_id, "searching", _S.RESEARCHING, "Research started")
            snapshot = self._store.load_run(run_id)
        if snapshot.plan is None:
            self._fail(run_id, _S.RESEARCHING, "The run has no approved plan to research.")
            return
        run = self._context(snapshot, ledger)
        if run.state.stop_reason:
            # Researching again after research had stopped (a retry, or more budget): the
            # person asked for more, so earlier streaks do not stop it at once.
            run.state = run.state.model_copy(
                update={
                    "stop_reason": None,
                    "stop_limit": None,
                    "zero_gain_streak": 0,
                    "duplicate_proposal_streak": 0,
                    "systemic_failure_streak": 0,
                }
            )
        self._settle_finished_steps(run)
        halt = self._research_loop(run)
        if halt.kind == "stop":
            halt = self._follow_up_before_synthesis(run) or halt
        if halt.kind == "pause":
            self._checkpoint(run)
            self._pause(run_id, _S.RESEARCHING)
        elif halt.kind == "cancel":
            self._checkpoint(run)
            self._cancel(run_id, _S.RESEARCHING)
        elif halt.kind == "fail":
            run.state = run.state.model_copy(update={"stop_reason": halt.stop, "stop_limit": None})
            self._checkpoint(run)
            self._fail(run_id, _S.RESEARCHING, halt.reason, stop=halt.stop)
        else:
            stop = self._explained_stop(run, halt.stop)
            message = _stop_message(stop)
            for step in self._store.list_steps(run_id):
                if step.kind in ("search", "read") and step.status in ("pending", "running"):
                    self._skip(run, step, f"Research stopped first. {message}")
            run.state = run.state.model_copy(update={"stop_reason": stop, "stop_limit": halt.limit})
            self._checkpoint(run)
            if self._transition(run_id, _S.RESEARCHING, _S.SYNTHESIZING, message):
                self._phase(
                    run_id, "synthesizing", _S.SYNTHESIZING, f"{message} Writing the report."
                )

    def _explained_stop(self, run: _Run, stop: str | None) -> str | None:
        """The stop reason a person can act on. Research that ran dry without a single
        readable source did not run out of things to learn: nothing could be read at all."""
        if stop is None or _as_stop(stop) not in NOTHING_NEW_STOPS:
            return stop
        readable = any(
            s.status in ("fetched", "duplicate") for s in self._store.list_sources(run.id)
        )
        return stop if readable else StopReason.NO_READABLE_SOURCES.value

    def _research_loop(self, run: _Run) -> _Halt:
        while True:
            self._store.heartbeat(run.id)
            control = self._pending_control(run.id)
            if control is not None:
                return control
            halt = self._iteration(run)
            if halt is not None:
                return halt

    def _iteration(self, run: _Run) -> _Halt | None:
        """One iteration: decide (or pick up a decision made before an interruption), run
        the accepted steps, measure what they added. Returns why to leave the loop, if so."""
        number = run.state.iteration
        decided = next(
            (
                step
                for step in self._store.list_steps(run.id)
                if step.dedupe_key == f"decide:{number}" and step.status == "succeeded"
            ),
            None,
        )
        iteration_key = f"iteration:{number}"
        finishing = False
        new_steps: list[str] = []
        if decided is not None:
            # Decided before an interruption: make sure every step it accepted exists.
            finishing = bool(decided.payload.get("finish"))
            self._reserve_logical(run, iteration_key, Usage(iterations=1), strict=False)
            new_steps = self._persist_steps(run, number, decided.payload.get("steps", []))
        else:
            stop = _stop_reason(run)
            if stop is not None:
                return self._stop_halt(run, stop)
            try:
                self._reserve_logical(run, iteration_key, Usage(iterations=1))
            except BudgetRefused as refusal:
                return _budget_halt(refusal)
            outcome = self._decide_iteration(run, number)
            if isinstance(outcome, _Halt):
                run.ledger.release(iteration_key)
                return outcome
            finishing, new_steps = outcome
        batch = self._unfinished_batch(run, also=new_steps)
        control = self._run_batch(run, batch)
        if control is not None:
            return control
        self._close_iteration(run, batch, iteration_key)
        if finishing:
            return _Halt("stop", stop=StopReason.FINISH_GATE_PASSED.value)
        return None

    def _stop_halt(self, run: _Run, stop: StopReason) -> _Halt:
        """Leave the loop for ``stop``: a budget stop names the limit that ran out, and
        failing providers fail the run (a retry continues once they answer again) instead
        of writing a partial report that more budget could not improve."""
        if stop is StopReason.PROVIDER_FAILURES:
            return _Halt("fail", reason=self._provider_failure_reason(run), stop=stop.value)
        limit = run.ledger.research_blocked() if stop in BUDGET_STOPS else None
        return _Halt("stop", stop=stop.value, limit=limit)

    def _provider_failure_reason(self, run: _Run) -> str:
        """The outage sentence, with what the last failed search or read said."""
        last = next(
            (
                step.error
                for step in reversed(self._store.list_steps(run.id))
                if step.kind in ("search", "read") and step.status == "failed" and step.error
            ),
            "",
        )
        reason = STOP_MESSAGES[StopReason.PROVIDER_FAILURES]
        return f"{reason} The last failure: {last}" if last else reason

    # -- deciding --------------------------------------------------------------------------

    def _decide_iteration(self, run: _Run, number: int) -> "_Halt | tuple[bool, list[str]]":
        """Ask for actions, validate and reserve them, persist them as pending steps.

        Returns whether research finishes after this iteration and the ids of the steps to
        run, or a halt (budget, a decision model that is down or keeps answering nonsense)."""
        view = self._view(run)
        brief = self._brief(run, view, number)
        self._phase(
            run.id, "reviewing_sources", _S.RESEARCHING, "Choosing what to search and read next"
        )
        decision = self._decide(run, brief)
        if isinstance(decision, _Halt):
            return decision
        verdicts = validate_actions(
            decision,
            run_id=run.id,
            iteration=number,
            plan=run.plan,
            policy=run.policy,
            sources=view.by_id,
            seen_fingerprints=run.state.query_fingerprints,
        )
        accepted: list[tuple[ActionVerdict, dict[str, Any]]] = []
        refused: list[tuple[Action, str]] = []
        finish_requested = False
        gate_passed = False
        for verdict in verdicts:
            action = verdict.action
            if isinstance(action, FinishAction):
                finish_requested = True
                if view.gate.passed:
                    gate_passed = True
                else:
                    refused.append((action, "Not finished yet: " + " ".join(view.gate.unmet)))
                continue
            if not verdict.accepted:
                refused.append((action, verdict.reason))
                continue
            try:
                payload = self._reserve_action(run, verdict, view)
            except BudgetRefused as refusal:
                refused.append((action, refusal.reason))
                continue
            accepted.append((verdict, payload))
        if gate_passed:
            # Finishing wins: whatever else was proposed would only spend budget.
            for verdict, _ in accepted:
                run.ledger.release(verdict.dedupe_key)
                refused.append((verdict.action, "Research is finishing: the finish gate passed."))
            accepted = []
        else:
            accepted += self._program_follow_ups(run, view, accepted)
        equivalent_only = not accepted and any(
            isinstance(action, SearchAction)
            and fingerprint_query(action.query).key in run.state.query_fingerprints
            for action, _ in refused
        )
        run.state = run.state.model_copy(
            update={
                "duplicate_proposal_streak": run.state.duplicate_proposal_streak + 1
                if equivalent_only
                else 0,
                "recent_refusals": [
                    display_text(f"{_describe(action)}: {reason}", 300)
                    for action, reason in refused
                ][-6:],
            }
        )
        specs = [self._accept(run, verdict, payload) for verdict, payload in accepted]
        summary = _decision_summary(accepted, refused, gate_passed, finish_requested)
        # The decision is stored with the steps it accepted, so that a run interrupted
        # before they were all written recreates them instead of deciding again.
        step = self._store.begin_step(
            run.id,
            kind="decide",
            dedupe_key=f"decide:{number}",
            payload={"finish": gate_passed, "steps": specs},
            iteration=number,
        )
        step = self._store.start_step(step.id)
        self._store.finish_step(step.id, status="succeeded", summary=summary)
        for index, (action, reason) in enumerate(refused):
            self._record_refusal(run, number, index, action, reason)
        new_steps = self._persist_steps(run, number, specs)
        self._checkpoint(run)
        return gate_passed, new_steps

    def _decide(self, run: _Run, brief: ResearchBrief) -> "list[Action] | _Halt":
        """Call the decision model, once more if it fails. A halt means the budget gave out,
        the endpoint is down (the run fails; a retry continues) or the model answered with
        unusable decisions twice (research stops). A decision that failed is recorded as a
        failed decide step with the reason, so the timeline shows it."""
        last_error: ModelError | None = None
        spent = Usage()
        for _ in range(2):
            key = f"decide:{brief.iteration}#{uuid.uuid4().hex[:12]}"
            try:
                run.ledger.reserve(key, self._allowance(brief.model_dump_json(), "decide"))
            except BudgetRefused as refusal:
                return _budget_halt(refusal)
            try:
                result = self._model.decide(brief)
            except ModelError as error:
                run.ledger.settle(key, error.usage)
                spent = spent + error.usage
                last_error = error
                continue
            run.ledger.settle(key, result.usage)
            return list(result.value.actions)
        assert last_error is not None
        if last_error.retryable:
            reason = f"The decision model failed: {last_error.reason}"
            self._record_failed_decision(run, brief.iteration, reason, spent)
            return _Halt("fail", reason=reason, stop=StopReason.PROVIDER_FAILURES.value)
        reason = (
            "The decision model twice returned decisions that could not be used: "
            f"{last_error.reason}"
        )
        logger.info("Run %s: invalid decisions twice: %s", run.id, last_error.reason)
        self._record_failed_decision(run, brief.iteration, reason, spent)
        run.state = run.state.model_copy(
            update={"invalid_decisions": run.state.invalid_decisions + 1}
        )
        return _Halt("stop", stop=StopReason.INVALID_DECISIONS.value)

    def _record_failed_decision(self, run: _Run, number: int, reason: str, usage: Usage) -> None:
        """A failed decide step for iteration ``number``. It has a key of its own, so the
        decision a retry makes for the same iteration is stored afresh."""
        failed = sum(
            1
            for step in self._store.list_steps(run.id)
            if step.dedupe_key.startswith(f"decide:{number}:failed:")
        )
        step = self._store.begin_step(
            run.id,
            kind="decide",
            dedupe_key=f"decide:{number}:failed:{failed + 1}",
            payload={"failed": True},
            iteration=number,
        )
        step = self._store.start_step(step.id)
        self._step_started(run.id, step.id, "decide", "Choosing what to search and read next")
        self._store.finish_step(
            step.id,
            status="failed",
            summary="No usable decision",
            usage=usage,
            error=display_text(reason, 1000),
        )
        self._step_finished(run.id, step.id, "decide", "failed", display_text(reason, 200))

    def _reserve_action(self, run: _Run, verdict: ActionVerdict, view: _View) -> dict[str, Any]:
        """Reserve budget for an accepted action and return the payload its step keeps."""
        action = verdict.action
        if isinstance(action, SearchAction):
            self._reserve_logical(run, verdict.dedupe_key, Usage(searches=1))
            return {
                "query": action.query,
                "question_ids": list(action.question_ids),
                "fingerprint": verdict.fingerprint.key if verdict.fingerprint else "",
                "follow_up": self._follow_up_target(run, view, action),
            }
        assert isinstance(action, ReadAction)
        max_bytes = self._reserve_read(run, verdict.dedupe_key)
        source = view.by_id[action.source_id]
        return {
            "source_id": action.source_id,
            "question_ids": list(action.question_ids),
            "url": source.url,
            "max_bytes": max_bytes,
        }

    def _follow_up_target(self, run: _Run, view: _View, action: SearchAction) -> str | None:
        """The open central contradiction a decider's search follows up: one about a
        question the search targets."""
        for contradiction in view.central:
            if contradiction.key in run.state.followed_up_contradictions:
                continue
            if set(contradiction.question_ids) & set(action.question_ids):
                return contradiction.key
        return None

    def _program_follow_ups(
        self, run: _Run, view: _View, accepted: list[tuple[ActionVerdict, dict[str, Any]]]
    ) -> list[tuple[ActionVerdict, dict[str, Any]]]:
        """A targeted search for the first central contradiction nobody follows up yet
        (one per iteration, so follow-ups cannot crowd out the decider's plan)."""
        covered = {payload.get("follow_up") for _, payload in accepted}
        pending = {
            step.payload.get("follow_up")
            for step in self._store.list_steps(run.id)
            if step.kind == "search" and step.status in ("pending", "running")
        }
        for contradiction in view.central:
            key = contradiction.key
            if key in run.state.followed_up_contradictions or key in covered or key in pending:
                continue
            verdict = self._follow_up_verdict(run, contradiction, accepted)
            if verdict is None:
                # Every targeted variant was searched already: that was the follow-up.
                self._mark_followed_up(run, key)
                continue
            try:
                self._reserve_logical(run, verdict.dedupe_key, Usage(searches=1))
            except BudgetRefused:
                return []
            action = verdict.action
            assert isinstance(action, SearchAction)
            return [
                (
                    verdict,
                    {
                        "query": action.query,
                        "question_ids": list(action.question_ids),
                        "fingerprint": verdict.fingerprint.key if verdict.fingerprint else "",
                        "follow_up": key,
                        "program": True,
                    },
                )
            ]
        return []

    def _follow_up_verdict(
        self,
        run: _Run,
        contradiction: ContradictionCandidate,
        accepted: list[tuple[ActionVerdict, dict[str, Any]]],
    ) -> ActionVerdict | None:
        questions = [
            q for q in run.plan.questions if q.id in contradiction.question_ids
        ] or run.plan.questions[:1]
        seen = [*run.state.query_fingerprints]
        seen += [v.fingerprint.key for v, _ in accepted if v.fingerprint is not None]
        query = follow_up_query(questions[0].text, seen)
        if query is None:
            return None
        action = SearchAction(
            query=query[:300],
            question_ids=[q.id for q in questions],
            rationale=f"Checking the conflicting evidence for {questions[0].id}.",
        )
        fingerprint = fingerprint_query(action.query)
        return ActionVerdict(
            action=action,
            accepted=True,
            reason="Follow-up of conflicting evidence.",
            dedupe_key=action_dedupe_key(
                run.id, action, iteration=run.state.iteration, fingerprint=fingerprint
            ),
            fingerprint=fingerprint,
        )

    def _record_refusal(
        self, run: _Run, number: int, index: int, action: Action, reason: str
    ) -> None:
        kind: StepKind = "decide" if isinstance(action, FinishAction) else action.type
        step = self._store.begin_step(
            run.id,
            kind=kind,
            dedupe_key=f"refused:{number}:{index}",
            rationale=display_text(action.rationale, 400),
            payload={"action": action.model_dump(), "refused": True},
            iteration=number,
        )
        if step.status == "pending":
            self._store.finish_step(
                step.id, status="skipped", summary=display_text(f"Refused: {reason}", 300)
            )
        self._step_finished(run.id, step.id, kind, "rejected", f"Not done: {_describe(action)}")

    def _accept(self, run: _Run, verdict: ActionVerdict, payload: dict[str, Any]) -> dict[str, Any]:
        """Note an accepted action in the working state; returns the spec of its step."""
        action = verdict.action
        assert isinstance(action, SearchAction | ReadAction)
        if isinstance(action, SearchAction) and verdict.fingerprint is not None:
            queries = [*run.state.recent_queries, display_text(action.query, 300)]
            run.state = run.state.model_copy(
                update={
                    "query_fingerprints": [
                        *run.state.query_fingerprints,
                        verdict.fingerprint.key,
                    ],
                    "recent_queries": queries[-RECENT_QUERIES_KEPT:],
                }
            )
        return {
            "kind": action.type,
            "dedupe_key": verdict.dedupe_key,
            "rationale": display_text(action.rationale, 400),
            "payload": payload,
        }

    def _persist_steps(self, run: _Run, number: int, specs: Sequence[dict[str, Any]]) -> list[str]:
        """Write accepted actions as pending steps (idempotent by dedupe key); returns the
        ids of those to run. One proposed again after a refinement cancelled it runs again;
        one already finished holds no budget."""
        runnable: list[str] = []
        for spec in specs:
            step = self._store.begin_step(
                run.id,
                kind=spec["kind"],
                dedupe_key=spec["dedupe_key"],
                rationale=spec["rationale"],
                payload=spec["payload"],
                iteration=number,
            )
            if step.status in ("succeeded", "failed", "skipped"):
                run.ledger.release(step.dedupe_key)
            else:
                runnable.append(step.id)
        return runnable

    # -- the brief ---------------------------------------------------------------------------

    def _brief(self, run: _Run, view: _View, number: int) -> ResearchBrief:
        """The compact state the decision model decides from.

        It carries structure (coverage, ids, stances, source classes, budget) and search
        results' titles and snippets, but no text taken from pages: excerpts, claim keys,
        values and scopes come from untrusted pages via the extractor, and leaving them out
        means no page can speak to the decision model."""
        fetched = [s for s in view.sources if s.status in ("fetched", "duplicate")]
        unread = []
        for source in view.sources:
            if source.status != "candidate":
                continue
            decision = evaluate_domain_policy(source.url, run.policy)
            if decision.allowed:
                unread.append((source, decision.preferred))
        candidates = [
            # A read source's title is the page's own <title>: untrusted page text the
            # decider does not need, so only its id, status and domain are shown.
            CandidateSummary(source_id=s.id, status=s.status, domain=s.domain, preferred=False)
            for s in fetched
        ] + [
            CandidateSummary(
                source_id=s.id,
                status=s.status,
                title=display_text(s.title, 200),
                domain=s.domain,
                snippet=display_text(s.snippet, 300),
                preferred=preferred,
            )
            for s, preferred in unread[:BRIEF_CANDIDATES]
        ]
        ranked = sorted(view.evidence, key=lambda e: (-e.relevance_bp, e.id))[:BRIEF_EVIDENCE]
        evidence = [
            EvidenceSummary(
                id=item.id,
                source_id=item.source_id,
                question_ids=list(item.question_ids),
                stance=item.stance,
            )
            for item in ranked
        ]
        mix: dict[str, int] = {}
        for source in view.sources:
            if source.status == "fetched":
                mix[source.quality.source_class] = mix.get(source.quality.source_class, 0) + 1
        failed = [
            FailedSource(source_id=s.id, status=s.status, reason=display_text(s.status_reason, 200))
            for s in view.sources
            if s.status in ("blocked", "failed", "unsupported")
        ][-BRIEF_FAILED_SOURCES:]
        open_conflicts = [
            _opaque_contradiction(number_, item)
            for number_, item in enumerate(view.contradictions, start=1)
            if item.key not in run.state.resolved_contradictions
        ]
        return ResearchBrief(
            plan=run.plan,
            iteration=number,
            coverage=[view.coverage[qid] for qid in run.plan.question_ids],
            evidence=evidence,
            source_class_mix=mix,
            candidates=candidates,
            open_contradictions=open_conflicts,
            failed_sources=failed,
            recent_queries=list(run.state.recent_queries[-12:]),
            remaining=run.ledger.remaining(phase="research"),
            unmet_finish_criteria=list(view.gate.unmet),
            recent_refusals=list(run.state.recent_refusals),
            max_output_tokens=OUTPUT_TOKEN_CAPS["decide"],
        )

    # -- running steps -----------------------------------------------------------------------

    def _unfinished_batch(self, run: _Run, *, also: Sequence[str] = ()) -> _Batch:
        """Every search and read step that has not finished, in creation order: the steps
        of this iteration and any interrupted earlier (a pause, a crash). ``also`` names
        steps to run whatever their status (a cancelled step proposed again)."""
        batch = _Batch()
        wanted = set(also)
        for step in self._store.list_steps(run.id):
            if step.status not in ("pending", "running") and step.id not in wanted:
                continue
            if step.payload.get("refused"):
                # A refusal interrupted before it was recorded as skipped.
                self._store.finish_step(step.id, status="skipped", summary="Refused")
                continue
            if step.kind == "search":
                batch.searches.append(step)
                fingerprint = str(step.payload.get("fingerprint", ""))
                if fingerprint and fingerprint not in run.state.query_fingerprints:
                    run.state = run.state.model_copy(
                        update={"query_fingerprints": [*run.state.query_fingerprints, fingerprint]}
                    )
            elif step.kind == "read":
                batch.add_read(step)
        return batch

    def _run_batch(self, run: _Run, batch: _Batch) -> _Halt | None:
        """Run searches (at most two at once) and reads (at most three fetches at once, one
        per site) round by round, committing each round in proposal order. Pause and cancel
        are checked between rounds; steps not started stay pending for the resume."""
        if not batch.searches and not batch.reads:
            return None
        workers = self._max_searches + self._max_fetches + self._max_extractions
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="research") as pool:
            first = True
            while batch.searches or batch.reads:
                if not first:
                    self._store.heartbeat(run.id)
                    control = self._pending_control(run.id)
                    if control is not None:
                        return control
                first = False
                searches = batch.searches[: self._max_searches]
                del batch.searches[: self._max_searches]
                wave = self._next_wave(batch)
                started = [
                    job
                    for job in (self._start_search(run, step, pool) for step in searches)
                    if job is not None
                ]
                fetches = [
                    job
                    for job in (self._start_read(run, step, pool) for step in wave)
                    if job is not None
                ]
                for step, future in started:
                    self._finish_search(run, batch, step, future)
                readable = [
                    job for job in fetches if self._finish_fetch(run, batch, job) is not None
                ]
                self._extract_all(run, batch, pool, readable)
                self._checkpoint(run)
                self._emit_counts(run)
        return None

    def _next_wave(self, batch: _Batch) -> list[StepRecord]:
        if not batch.reads:
            return []
        waves = plan_fetch_waves(batch.reads, lambda step: str(step.payload.get("url", "")))
        wave = waves[0][: self._max_fetches]
        chosen = {step.id for step in wave}
        batch.reads = [step for step in batch.reads if step.id not in chosen]
        return wave

    def _start_search(
        self, run: _Run, step: StepRecord, pool: ThreadPoolExecutor
    ) -> "tuple[StepRecord, Future[list[SearchCandidate]]] | None":
        query = str(step.payload.get("query", ""))
        try:
            self._reserve_logical(run, step.dedupe_key, Usage(searches=1))
            self._check_time(run, step.dedupe_key)
        except BudgetRefused as refusal:
            self._skip(run, step, refusal.reason)
            return None
        step = self._store.start_step(step.id)
        self._count_retry(run.ledger, step)
        self._phase(run.id, "searching", _S.RESEARCHING, f"Searching “{display_text(query, 120)}”")
        self._step_started(run.id, step.id, "search", f"Searching “{display_text(query, 120)}”")
        future = pool.submit(
            self._sources.discover, query, policy=run.policy, limit=self._search_results
        )
        return step, future

    def _finish_search(
        self,
        run: _Run,
        batch: _Batch,
        step: StepRecord,
        future: "Future[list[SearchCandidate]]",
    ) -> None:
        usage = Usage(searches=1)
        follow_up = step.payload.get("follow_up")
        try:
            candidates = future.result()
        except AcquisitionError as error:
            run.ledger.settle(step.dedupe_key, usage)
            batch.systemic_failures += 1
            reason = display_text(error.reason, 300)
            self._store.finish_step(
                step.id, status="failed", usage=usage, summary="The search failed", error=reason
            )
            self._step_finished(run.id, step.id, "search", "failed", f"The search failed: {reason}")
            self._mark_followed_up(run, follow_up)
            return
        usable, dropped = self._screen_candidates(run, candidates)
        run.ledger.settle(step.dedupe_key, usage)
        summary = search_summary(len(candidates), dropped)
        records = self._store.record_candidates(
            run.id,
            step_id=step.id,
            candidates=usable,
            summary=summary,
            usage=usage,
            output={"results": len(candidates), "kept": len(usable), "dropped": dict(dropped)},
        )
        batch.successes += 1
        for record in records:
            if record.status == "candidate":
                self._source_updated(run.id, record, f"Found {record.domain}")
        self._step_finished(run.id, step.id, "search", "succeeded", f"Found {summary}")
        self._mark_followed_up(run, follow_up)
        if follow_up and step.payload.get("program"):
            self._queue_follow_up_read(run, batch, step, records)

    def _screen_candidates(
        self, run: _Run, candidates: Sequence[SearchCandidate]
    ) -> tuple[list[SearchCandidate], dict[CandidateDrop, int]]:
        """Keep the results the source adapter would fetch; count the others by reason.

        Whether a URL may be fetched is the adapter's decision (it knows the operator's
        allow-list); the engine only insists on an address it can store."""
        usable: list[SearchCandidate] = []
        dropped: dict[CandidateDrop, int] = {}
        for candidate in candidates:
            reason: CandidateDrop | None
            try:
                canonical_url(candidate.url)
            except UnsupportedURLError:
                reason = "not a web address"
            else:
                reason = self._sources.screen(candidate.url, policy=run.policy)
            if reason is None:
                usable.append(candidate)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return usable, dropped

    def _mark_followed_up(self, run: _Run, key: object) -> None:
        if isinstance(key, str) and key and key not in run.state.followed_up_contradictions:
            run.state = run.state.model_copy(
                update={"followed_up_contradictions": [*run.state.followed_up_contradictions, key]}
            )

    def _queue_follow_up_read(
        self, run: _Run, batch: _Batch, search: StepRecord, records: Sequence[SourceRecord]
    ) -> None:
        """Read the best new result of a program follow-up search in the same iteration."""
        question_ids = [str(q) for q in search.payload.get("question_ids", [])]
        for record in records:
            if record.status != "candidate" or record.id in batch.queued_sources:
                continue
            if not evaluate_domain_policy(record.url, run.policy).allowed:
                continue
            step = self._program_read(
                run,
                record,
                question_ids,
                rationale=f"Reading a new source about the conflicting evidence for "
                f"{', '.join(question_ids)}.",
                extra={"follow_up": search.payload.get("follow_up")},
            )
            if step is not None:
                batch.add_read(step)
            return

    def _program_read(
        self,
        run: _Run,
        source: SourceRecord,
        question_ids: list[str],
        *,
        rationale: str,
        extra: dict[str, Any],
    ) -> StepRecord | None:
        known = set(run.plan.question_ids)
        question_ids = [qid for qid in question_ids if qid in known] or run.plan.question_ids[:1]
        action = ReadAction(source_id=source.id, question_ids=question_ids, rationale=rationale)
        key = action_dedupe_key(run.id, action, iteration=run.state.iteration)
        try:
            max_bytes = self._reserve_read(run, key)
        except BudgetRefused:
            return None
        step = self._store.begin_step(
            run.id,
            kind="read",
            dedupe_key=key,
            rationale=rationale,
            payload={
                "source_id": source.id,
                "question_ids": question_ids,
                "url": source.url,
                "max_bytes": max_bytes,
                "program": True,
                **extra,
            },
            iteration=run.state.iteration,
        )
        if step.status not in ("pending", "running"):
            run.ledger.release(key)
            return None
        return step

    def _start_read(self, run: _Run, step: StepRecord, pool: ThreadPoolExecutor) -> _Fetch | None:
        source_id = str(step.payload.get("source_id", ""))
        source = self._store.get_source(run.id, source_id)
        if source is None:
            self._skip(run, step, f"There is no source {source_id} in this run.")
            return None
        if source.status == "candidate":
            try:
                max_bytes = self._reserve_read(run, step.dedupe_key)
                self._check_time(run, step.dedupe_key)
            except BudgetRefused as refusal:
                self._skip(run, step, refusal.reason)
                return None
        else:
            max_bytes = run.ledger.budget.bytes_per_source
        step = self._store.start_step(step.id)
        self._count_retry(run.ledger, step)
        domain = source.domain or _domain_of(source.url)
        self._phase(run.id, "reading_source", _S.RESEARCHING, f"Reading {domain}")
        self._step_started(run.id, step.id, "read", f"Reading {domain}")
        job = _Fetch(step=step, source=source, max_bytes=max_bytes)
        if source.status == "candidate":
            job.future = pool.submit(
                self._sources.acquire, source.url, policy=run.policy, max_bytes=max_bytes
            )
            return job
        # The source was acquired (or refused) before an interruption: its outcome is stored,
        # so it is counted once and never fetched again (a refusal is not counted at all).
        document = self._store.load_snapshot(run.id, source.id)
        counted = source.status in ("fetched", "duplicate") or fetch_counted(source.status)
        job.usage = Usage(
            fetched_sources=1 if counted else 0,
            bytes_fetched=document.content_bytes if document else 0,
        )
        run.ledger.settle(step.dedupe_key, job.usage)
        if source.status == "fetched" and document is not None:
            job.document = document
            return job
        if source.status == "duplicate":
            self._finish_read(run, job, "succeeded", f"{domain} was already stored as a duplicate")
        else:
            self._finish_read(
                run,
                job,
                "failed",
                f"Could not read {domain}",
                error=source.status_reason or "The source could not be read.",
            )
        return None

    def _finish_fetch(self, run: _Run, batch: _Batch, job: _Fetch) -> _Fetch | None:
        """Commit one fetch: failure (and a substitute source), duplicate, or a snapshot to
        extract evidence from. Returns the job when evidence should be extracted."""
        if job.document is not None:
            return job
        assert job.future is not None
        source = job.source
        domain = source.domain or _domain_of(source.url)
        try:
            document = job.future.result()
            if document.content_bytes > job.max_bytes:
                # An adapter must cut pages to max_bytes; one that does not cannot break the
                # run's byte budget either.
                raise AcquisitionError(
                    "unsupported", "The page is larger than the per-source size limit."
                )
        except AcquisitionError as error:
            # A refusal (address, policy, access gate, unreadable type) fetched nothing and
            # leaves the fetch budget alone; a failed read costs one fetch, retries included.
            job.usage = Usage(fetched_sources=1 if error.counts_as_fetch else 0)
            run.ledger.settle(job.step.dedupe_key, job.usage)
            reason = display_text(error.reason, 300)
            record = self._store.record_failure(run.id, source.id, kind=error.kind, reason=reason)
            self._source_updated(run.id, record, f"Could not read {domain}: {reason}")
            if error.kind == "failed" and error.retryable:
                batch.systemic_failures += 1
            self._finish_read(run, job, "failed", f"Could not read {domain}", error=reason)
            self._substitute(run, batch, job)
            return None
        sources = self._store.list_sources(run.id)
        duplicate = find_duplicate(document, sources, source_id=source.id)
        quality = self._quality(document, source, sources, duplicate_of=duplicate)
        record = self._store.record_acquisition(
            run.id,
            source.id,
            document=document,
            quality=quality,
            duplicate_of=duplicate.source_id if duplicate else None,
        )
        job.usage = Usage(fetched_sources=1, bytes_fetched=document.content_bytes)
        run.ledger.settle(job.step.dedupe_key, job.usage)
        batch.successes += 1
        self._source_updated(run.id, record, f"Read {domain}")
        if duplicate is not None:
            how = "the same address" if duplicate.reason == "canonical_url" else "the same text"
            self._finish_read(
                run,
                job,
                "succeeded",
                f"{domain} has {how} as source {duplicate.source_id}; kept as a duplicate",
            )
            return None
        job.document = document
        return job

    def _quality(
        self,
        document: SourceDocument,
        source: SourceRecord,
        sources: Sequence[SourceRecord],
        *,
        duplicate_of: object,
    ) -> SourceQuality:
        quality = self._classify(document)
        provisional = source.model_copy(
            update={
                "status": "duplicate" if duplicate_of else "fetched",
                "content_hash": document.content_hash,
                "publisher": document.publisher,
                "declared_canonical_url": document.declared_canonical_url,
                "duplicate_of": getattr(duplicate_of, "source_id", None),
            }
        )
        others = [s for s in sources if s.id != source.id and s.status in ("fetched", "duplicate")]
        clusters = assign_independence_clusters([*others, provisional])
        return quality.model_copy(update={"independence_cluster": clusters[source.id]})

    def _substitute(self, run: _Run, batch: _Batch, job: _Fetch) -> None:
        """After a failed read, read the next best unread candidate from another site."""
        if job.step.payload.get("substitute_for"):
            return  # one substitution per proposed read keeps a bad site list bounded
        failed_site = _site_of(job.source.url)
        question_ids = [str(q) for q in job.step.payload.get("question_ids", [])]
        options: list[tuple[bool, int, SourceRecord]] = []
        for position, source in enumerate(self._store.list_sources(run.id)):
            if source.status != "candidate" or source.id in batch.queued_sources:
                continue
            if _site_of(source.url) == failed_site:
                continue
            decision = evaluate_domain_policy(source.url, run.policy)
            if decision.allowed:
                options.append((not decision.preferred, position, source))
        if not options:
            return
        replacement = min(options, key=lambda option: option[:2])[2]
        domain = job.source.domain or _domain_of(job.source.url)
        step = self._program_read(
            run,
            replacement,
            question_ids,
            rationale=f"Trying another source because {domain} could not be read.",
            extra={"substitute_for": job.source.id},
        )
        if step is not None:
            batch.add_read(step)

    def _extract_all(
        self, run: _Run, batch: _Batch, pool: ThreadPoolExecutor, jobs: list[_Fetch]
    ) -> None:
        """Extract evidence from fetched snapshots (bounded parallel model calls), verify
        every excerpt against its snapshot and store what holds up."""
        pending = list(jobs)
        while pending:
            calls: list[tuple[_Fetch, str, Future[Any], ExtractionRequest]] = []
            deferred: list[_Fetch] = []
            for job in pending:
                if len(calls) >= self._max_extractions:
                    deferred.append(job)
                    continue
                domain = job.source.domain or _domain_of(job.source.url)
                try:
                    request, key = self._extraction_request(run, job)
                except BudgetRefused as refusal:
                    if calls:
                        # The calls already running hold budget they may not use up: try
                        # again once they have settled.
                        deferred.append(job)
                        continue
                    self._finish_read(
                        run,
                        job,
                        "failed",
                        f"Read {domain} but could not extract evidence",
                        error=f"Not enough budget to extract evidence: {refusal.reason}",
                    )
                    continue
                self._phase(
                    run.id,
                    "extracting_evidence",
                    _S.RESEARCHING,
                    f"Extracting evidence from {domain}",
                )
                calls.append((job, key, pool.submit(self._model.extract, request), request))
            for job, key, future, request in calls:
                self._finish_extraction(run, batch, job, key, future, request)
            pending = deferred

    def _extraction_request(self, run: _Run, job: _Fetch) -> tuple[ExtractionRequest, str]:
        assert job.document is not None
        document = job.document
        text = document.text
        key = f"{job.step.dedupe_key}#extract#{uuid.uuid4().hex[:12]}"
        while True:
            request = ExtractionRequest(
                source_id=job.source.id,
                title=display_text(document.title, 300),
                kind=document.kind,
                text=text,
                blocks=clip_blocks(document.blocks, len(text)),
                questions=run.plan.questions,
                max_items=self._extraction_max_items,
                max_output_tokens=OUTPUT_TOKEN_CAPS["extract"],
            )
            # The block map steers the extractive backend; a model is sent only the text.
            sent = request.model_dump_json(exclude={"blocks"})
            try:
                run.ledger.reserve(key, self._allowance(sent, "extract"))
                return request, key
            except BudgetRefused as refusal:
                # A long page is cut to what the token budget allows rather than skipped;
                # excerpts are still verified against the whole stored snapshot.
                if refusal.counter != "input_tokens" or len(text) <= MIN_EXTRACTION_CHARS:
                    raise
                text = text[: max(MIN_EXTRACTION_CHARS, len(text) // 2)]

    def _finish_extraction(
        self,
        run: _Run,
        batch: _Batch,
        job: _Fetch,
        key: str,
        future: "Future[Any]",
        request: ExtractionRequest,
    ) -> None:
        assert job.document is not None
        domain = job.source.domain or _domain_of(job.source.url)
        try:
            result = future.result()
        except ModelError as error:
            run.ledger.settle(key, error.usage)
            job.usage = job.usage + error.usage
            if error.retryable:
                batch.systemic_failures += 1
            self._finish_read(
                run,
                job,
                "failed",
                f"Read {domain} but could not extract evidence",
                error=display_text(f"Evidence could not be extracted: {error.reason}", 500),
            )
            return
        run.ledger.settle(key, result.usage)
        job.usage = job.usage + result.usage
        known = {item.evidence_hash for item in self._store.list_evidence(run.id)}
        outcome = verify_candidates(
            result.value.evidence,
            run_id=run.id,
            source_id=job.source.id,
            document=job.document,
            question_ids=set(run.plan.question_ids),
            known_hashes=known,
        )
        added = self._store.add_evidence(run.id, step_id=job.step.id, evidence=outcome.evidence)
        run.state = run.state.model_copy(
            update={"rejected_excerpts": run.state.rejected_excerpts + outcome.rejected_count}
        )
        batch.successes += 1
        summary = f"{len(added)} verified excerpts from {domain}"
        if outcome.rejected_count:
            summary += f"; {outcome.rejected_count} proposed excerpts were not in the page"
        if len(request.text) < len(job.document.text):
            summary += " (the page was read in part to stay within the token budget)"
        self._finish_read(run, job, "succeeded", summary)

    def _finish_read(
        self,
        run: _Run,
        job: _Fetch,
        status: Literal["succeeded", "failed"],
        summary: str,
        *,
        error: str = "",
    ) -> None:
        self._store.finish_step(
            job.step.id,
            status=status,
            summary=display_text(summary, 300),
            usage=job.usage,
            error=error,
        )
        self._step_finished(run.id, job.step.id, "read", status, summary)

    def _skip(self, run: _Run, step: StepRecord, reason: str) -> None:
        self._store.finish_step(
            step.id, status="skipped", summary=display_text(f"Not done: {reason}", 300)
        )
        self._step_finished(run.id, step.id, step.kind, "skipped", f"Skipped: {reason}")

    # -- closing an iteration ---------------------------------------------------------------

    def _close_iteration(self, run: _Run, batch: _Batch, iteration_key: str) -> None:
        view = self._view(run)
        counted = set(run.state.counted_evidence_ids)
        new = [item for item in view.evidence if item.id not in counted]
        classes = [s.quality.source_class for s in view.sources if s.status == "fetched"]
        evidence_by_id = {item.id: item for item in view.evidence}
        resolved = [
            item.key
            for item in view.contradictions
            if item.key in run.state.followed_up_contradictions
            and contradiction_resolved(item, evidence_by_id, view.by_id)
        ]
        state, gain = advance_iteration(
            run.state,
            coverage=view.coverage,
            new_evidence=new,
            source_classes=classes,
            resolved_contradictions=resolved,
        )
        if batch.successes:
            failures = 0
        elif batch.systemic_failures:
            failures = state.systemic_failure_streak + 1
        else:
            failures = state.systemic_failure_streak
        run.state = state.model_copy(
            update={
                "counted_evidence_ids": [*state.counted_evidence_ids, *(item.id for item in new)],
                "information_gain": state.information_gain
                + gain.new_relevant_evidence
                + gain.new_source_classes
                + gain.coverage_gain
                + gain.contradictions_resolved,
                "systemic_failure_streak": failures,
            }
        )
        run.ledger.settle(iteration_key, Usage(iterations=1))
        self._checkpoint(run)
        self._emit_counts(run, view)
        unsettled = [c for c in view.central if c.key not in run.state.resolved_contradictions]
        if unsettled:
            questions = sorted({qid for c in unsettled for qid in c.question_ids})
            self._phase(
                run.id,
                "comparing_evidence",
                _S.RESEARCHING,
                "Comparing conflicting evidence for "
                + (", ".join(questions) or "the research question"),
            )

    def _follow_up_before_synthesis(self, run: _Run) -> _Halt | None:
        """Research is stopping: give every central contradiction nobody followed up one
        targeted search (and a read of its best result) if the budget still allows."""
        view = self._view(run)
        open_conflicts = [
            c for c in view.central if c.key not in run.state.followed_up_contradictions
        ]
        pending_follow_ups = any(
            step.payload.get("follow_up") and step.status in ("pending", "running")
            for step in self._store.list_steps(run.id)
        )
        if not open_conflicts and not pending_follow_ups:
            return None
        accepted: list[tuple[ActionVerdict, dict[str, Any]]] = []
        while True:
            extra = self._program_follow_ups(run, view, accepted)
            if not extra:
                break
            accepted += extra
        specs = [self._accept(run, verdict, payload) for verdict, payload in accepted]
        new_steps = self._persist_steps(run, run.state.iteration, specs)
        batch = self._unfinished_batch(run, also=new_steps)
        if not batch.searches and not batch.reads:
            return None
        control = self._run_batch(run, batch)
        if control is not None:
            return control
        view = self._view(run)
        counted = set(run.state.counted_evidence_ids)
        run.state = run.state.model_copy(
            update={
                "coverage": view.coverage,
                "counted_evidence_ids": [
                    *run.state.counted_evidence_ids,
                    *(item.id for item in view.evidence if item.id not in counted),
                ],
            }
        )
        self._checkpoint(run)
        return None

    # ----------------------------------------------------------------------------------------
    # Synthesis
    # ----------------------------------------------------------------------------------------

    def _synthesis_phase(self, snapshot: RunSnapshot) -> None:
        run_id = snapshot.id
        ledger = self._ledger(snapshot)
        if self._honour_controls(run_id, _S.SYNTHESIZING) is not None:
            return
        if snapshot.plan is None:
            self._fail(run_id, _S.SYNTHESIZING, "The run has no plan to write a report for.")
            return
        run = self._context(snapshot, ledger)
        view = self._view(run)
        partial = not view.gate.passed
        terminal = _S.BUDGET_EXHAUSTED if partial else _S.COMPLETED
        # One report per state of the evidence: a resumed synthesis finds its step, research
        # that added evidence (after a budget increase) gets a new one.
        key = f"synthesize:v{snapshot.plan_version}:i{run.state.iteration}:e{len(view.evidence)}"
        step = self._store.begin_step(
            run_id, kind="synthesize", dedupe_key=key, iteration=run.state.iteration
        )
        if step.status == "succeeded":
            # The report was saved before an interruption; only the transition is missing.
            self._finish_run(run_id, terminal, run.state.stop_reason, run.state.stop_limit)
            return
        step = self._store.start_step(step.id)
        self._count_retry(run.ledger, step)
        self._phase(run_id, "synthesizing", _S.SYNTHESIZING, "Writing the report")
        self._step_started(run_id, step.id, "synthesize", "Writing the report")
        gaps = _gaps(run.plan, view)
        summaries = _source_summaries(view.sources)
        evidence_by_id = {item.id: item for item in view.evidence}
        usage_before = run.ledger.usage()
        try:
            report = self._write_report(run, view, gaps, summaries, partial, key)
        except ModelError as error:
            reason = f"The report could not be written: {error.reason}"
            self._store.finish_step(
                step.id,
                status="failed",
                error=reason,
                usage=_difference(run.ledger.usage(), usage_before),
            )
            self._step_finished(
                run_id, step.id, "synthesize", "failed", "Writing the report failed"
            )
            self._checkpoint(run)
            self._fail(run_id, _S.SYNTHESIZING, reason, stop=_outage(error))
            return

        def repair(draft: Report, problems: Sequence[CitationProblem]) -> Report:
            return self._repair_report(run, view, gaps, summaries, partial, key, draft, problems)

        validated = finalize_report(report, run_id=run_id, evidence=evidence_by_id, repair=repair)
        final = _complete_report(
            validated.report,
            plan=run.plan,
            gaps=gaps,
            partial=partial,
            methodology=self._methodology(run, view),
        )
        self._store.save_report(run_id, report=final)
        summary = (
            f"Report with {sum(1 for s in final.statements() if s.kind == 'finding')} findings"
        )
        if validated.demoted_claim_ids:
            summary += (
                f"; {len(validated.demoted_claim_ids)} unsupported statements kept as caveats"
            )
        self._store.finish_step(
            step.id,
            status="succeeded",
            summary=summary,
            usage=_difference(run.ledger.usage(), usage_before),
        )
        self._step_finished(run_id, step.id, "synthesize", "succeeded", summary)
        self._checkpoint(run)
        self._finish_run(run_id, terminal, run.state.stop_reason, run.state.stop_limit)

    def _write_report(
        self,
        run: _Run,
        view: _View,
        gaps: list[ReportGap],
        summaries: dict[str, SourceSummary],
        partial: bool,
        key: str,
    ) -> Report:
        """The synthesis call, or the program's own report when the budget cannot pay for
        one. Raises :class:`ModelError` when the synthesis call fails."""
        output_cap = self._synthesis_output_cap(run)
        request = self._synthesis_request(run, view, gaps, summaries, partial, output_cap)
        call_key = f"{key}#{uuid.uuid4().hex[:12]}"
        try:
            if output_cap < MIN_SYNTHESIS_OUTPUT_TOKENS:
                raise BudgetRefused("Not enough output tokens are left to write the report.")
            if view.evidence and not request.evidence:
                raise BudgetRefused("Not enough input tokens are left to show any evidence.")
            run.ledger.reserve(
                call_key,
                self._allowance(request.model_dump_json(), "synthesize", output_cap),
                phase="synthesis",
            )
        except BudgetRefused:
            return fallback_report(
                run.plan,
                view.evidence,
                summaries,
                gaps=gaps,
                partial=partial,
                note="The model budget was used up, so this report quotes the verified "
                "evidence directly instead of summarising it.",
            )
        try:
            result = self._model.synthesise(request)
        except ModelError as error:
            run.ledger.settle(call_key, error.usage)
            raise
        run.ledger.settle(call_key, result.usage)
        return result.value

    def _repair_report(
        self,
        run: _Run,
        view: _View,
        gaps: list[ReportGap],
        summaries: dict[str, SourceSummary],
        partial: bool,
        key: str,
        draft: Report,
        problems: Sequence[CitationProblem],
    ) -> Report:
        """The one citation-repair round; raises :class:`ModelError` when it cannot run."""
        output_cap = self._synthesis_output_cap(run)
        base = self._synthesis_request(run, view, gaps, summaries, partial, output_cap)
        request = base.model_copy(
            update={"problems": problems_as_text(problems), "previous_report": draft}
        )
        call_key = f"{key}#repair#{uuid.uuid4().hex[:12]}"
        try:
            if output_cap < MIN_SYNTHESIS_OUTPUT_TOKENS:
                raise BudgetRefused("Not enough output tokens are left to repair the report.")
            run.ledger.reserve(
                call_key,
                self._allowance(request.model_dump_json(), "synthesize", output_cap),
                phase="synthesis",
            )
        except BudgetRefused as refusal:
            raise ModelError(f"No budget is left to repair citations: {refusal.reason}") from None
        try:
            result = self._model.synthesise(request)
        except ModelError as error:
            run.ledger.settle(call_key, error.usage)
            raise
        run.ledger.settle(call_key, result.usage)
        return result.value

    def _synthesis_output_cap(self, run: _Run) -> int:
        remaining = run.ledger.remaining(phase="synthesis").output_tokens
        return min(OUTPUT_TOKEN_CAPS["synthesize"], remaining // self._calls)

    def _synthesis_request(
        self,
        run: _Run,
        view: _View,
        gaps: list[ReportGap],
        summaries: dict[str, SourceSummary],
        partial: bool,
        output_cap: int,
    ) -> SynthesisRequest:
        """Evidence cards that fit the synthesis token allowance: every contradiction's
        evidence, then each question's best items in turn, then the rest by relevance."""
        contradictions = view.contradictions
        base = SynthesisRequest(
            plan=run.plan,
            evidence=[],
            sources=[],
            contradictions=contradictions,
            gaps=gaps,
            partial=partial,
            max_output_tokens=max(1, output_cap),
        )
        remaining = run.ledger.remaining(phase="synthesis").input_tokens
        per_call = (remaining - (self._calls - 1) * output_cap) // self._calls
        # Half of the room goes to the first call; the repair round resends the report too.
        room = per_call // 2 - PROMPT_OVERHEAD_TOKENS - estimate_tokens(base.model_dump_json())
        chosen = _select_evidence(run.plan, view.evidence, contradictions, room)
        cited_sources = sorted({item.source_id for item in chosen})
        return base.model_copy(
            update={
                "evidence": chosen,
                "sources": [summaries[sid] for sid in cited_sources if sid in summaries],
            }
        )

    def _methodology(self, run: _Run, view: _View) -> list[str]:
        usage = run.ledger.usage()
        lines = [
            f"The research ran {run.state.iteration} rounds: {usage.searches} searches, "
            f"{usage.fetched_sources} sources read, {len(view.evidence)} verified excerpts. "
            f"{run.state.rejected_excerpts} proposed excerpts were rejected because they do not "
            "occur in the stored source.",
        ]
        if run.state.stop_reason:
            lines.append(f"Research stopped because: {_stop_message(run.state.stop_reason)}")
        return lines

    def _finish_run(
        self, run_id: str, terminal: RunStatus, stop_reason: str | None, stop_limit: str | None
    ) -> None:
        if terminal == _S.COMPLETED:
            reason = "The report is ready."
        elif stop_reason:
            reason = "A partial report was written: " + _stop_message(stop_reason)
        else:
            reason = (
                "A partial report was written: research stopped before every planned "
                "question was covered."
            )
        if not self._transition(
            run_id,
            _S.SYNTHESIZING,
            terminal,
            reason,
            stop_reason=stop_reason,
            stop_limit=stop_limit,
        ):
            return
        self._emit(
            ReportReady(
                run_id=run_id,
                terminal_status=terminal.value,  # type: ignore[arg-type]
                message="The report is ready"
                if terminal == _S.COMPLETED
                else "A partial report is ready",
            )
        )
        phase: ProgressPhase = "completed" if terminal == _S.COMPLETED else "budget_exhausted"
        self._phase(run_id, phase, terminal, reason)

    # ----------------------------------------------------------------------------------------
    # Shared plumbing
    # ----------------------------------------------------------------------------------------

    def _context(self, snapshot: RunSnapshot, ledger: BudgetLedger) -> _Run:
        assert snapshot.plan is not None
        state = snapshot.state.model_copy(
            update={"synthesis_reserve": ledger.synthesis_reserve()}, deep=True
        )
        return _Run(
            id=snapshot.id, snapshot=snapshot, plan=snapshot.plan, ledger=ledger, state=state
        )

    def _ledger(self, snapshot: RunSnapshot) -> BudgetLedger:
        """A ledger for one phase; create it when the phase starts, because elapsed time is
        measured from its creation (earlier segments come in through ``usage``)."""
        return BudgetLedger(
            snapshot.budget,
            clock=self._clock,
            usage=snapshot.usage,
            settled_keys=snapshot.state.settled_action_keys,
        )

    def _allowance(self, request_text: str, kind: str, output_cap: int | None = None) -> Usage:
        cap = OUTPUT_TOKEN_CAPS[kind] if output_cap is None else output_cap
        return call_allowance(request_text, output_tokens=cap, calls=self._calls)

    def _reserve_logical(self, run: _Run, key: str, amount: Usage, *, strict: bool = True) -> None:
        """Reserve a logical action once: an action already counted (before a crash) is not
        counted again. ``strict=False`` ignores refusals (for an iteration already begun)."""
        if key in run.ledger.settled_keys:
            return
        try:
            run.ledger.reserve(key, amount)
        except BudgetRefused:
            if strict:
                raise

    def _reserve_read(self, run: _Run, key: str) -> int:
        """Reserve a fetch and the bytes it may bring; returns the byte limit to fetch with."""
        budget = run.ledger.budget
        if key in run.ledger.settled_keys:
            return budget.bytes_per_source
        available = run.ledger.remaining(phase="research").bytes_fetched
        max_bytes = min(budget.bytes_per_source, available)
        # An open reservation of the same key comes back unchanged (the amount is ignored).
        reservation = run.ledger.reserve(key, Usage(fetched_sources=1, bytes_fetched=max_bytes))
        if reservation.amount.bytes_fetched < min(MIN_SOURCE_BYTES, budget.bytes_per_source):
            run.ledger.release(key)
            raise BudgetRefused(
                "Not enough of the run's byte budget is left to read another source.",
                counter="bytes_fetched",
            )
        return reservation.amount.bytes_fetched

    def _check_time(self, run: _Run, key: str) -> None:
        """Refuse to start an action once research time is up, even one reserved in time
        (a batch can outlast the clock); its reservation is released."""
        if run.ledger.time_exhausted():
            run.ledger.release(key)
            minutes = run.ledger.budget.elapsed_seconds / 60
            raise BudgetRefused(
                f"The run has used its {minutes:g} minutes of research time.",
                counter="elapsed_seconds",
            )

    def _count_retry(self, ledger: BudgetLedger, step: StepRecord) -> None:
        if step.attempt > 1:
            ledger.settle(f"{step.dedupe_key}#attempt{step.attempt}", Usage(retries=1))

    def _settle_finished_steps(self, run: _Run) -> None:
        """Count steps that finished just before an interruption but whose usage never
        reached a checkpoint (their logical key is not settled yet)."""
        changed = False
        for step in self._store.list_steps(run.id):
            if step.kind not in ("search", "read") or step.status not in ("succeeded", "failed"):
                continue
            if step.dedupe_key in run.ledger.settled_keys:
                continue
            run.ledger.settle(step.dedupe_key, step.usage)
            if step.kind == "search":
                fingerprint = str(step.payload.get("fingerprint", ""))
                if fingerprint and fingerprint not in run.state.query_fingerprints:
                    run.state = run.state.model_copy(
                        update={"query_fingerprints": [*run.state.query_fingerprints, fingerprint]}
                    )
                self._mark_followed_up(run, step.payload.get("follow_up"))
            changed = True
        if changed:
            self._checkpoint(run)

    def _checkpoint(self, run: _Run) -> None:
        run.state = run.state.model_copy(
            update={"settled_action_keys": sorted(run.ledger.settled_keys)}
        )
        self._store.save_checkpoint(run.id, state=run.state, usage=run.ledger.usage())

    def _view(self, run: _Run) -> _View:
        raw = self._store.list_sources(run.id)
        clusters = assign_independence_clusters(
            [s for s in raw if s.status in ("fetched", "duplicate")]
        )
        sources = [
            s.model_copy(
                update={
                    "quality": s.quality.model_copy(update={"independence_cluster": clusters[s.id]})
                }
            )
            if s.id in clusters
            else s
            for s in raw
        ]
        by_id = {s.id: s for s in sources}
        evidence = self._store.list_evidence(run.id)
        coverage = compute_coverage(run.plan, evidence, by_id)
        contradictions = find_contradictions(evidence)
        central = central_contradictions(run.plan, contradictions)
        gate = evaluate_finish_gate(
            run.plan,
            coverage,
            contradictions,
            followed_up=run.state.followed_up_contradictions,
            resolved=run.state.resolved_contradictions,
        )
        return _View(
            sources=sources,
            by_id=by_id,
            evidence=evidence,
            coverage=coverage,
            contradictions=contradictions,
            central=central,
            gate=gate,
        )

    def _pending_control(self, run_id: str) -> _Halt | None:
        controls = self._store.controls(run_id)
        if controls.cancel_requested:
            return _CANCEL
        if controls.pause_requested:
            return _PAUSE
        return None

    def _honour_controls(self, run_id: str, status: RunStatus) -> RunStatus | None:
        """Apply a pending cancel or pause before work starts in ``status``."""
        control = self._pending_control(run_id)
        if control is _CANCEL:
            self._cancel(run_id, status)
            return _S.CANCELLED
        if control is _PAUSE:
            self._pause(run_id, status)
            return _S.PAUSED
        return None

    def _pause(self, run_id: str, status: RunStatus) -> None:
        if self._transition(run_id, status, _S.PAUSED, "Paused at the user's request."):
            self._phase(run_id, "paused", _S.PAUSED, "Paused")

    def _cancel(self, run_id: str, status: RunStatus) -> None:
        self._store.cancel_pending_steps(run_id)
        if self._transition(run_id, status, _S.CANCELLED, "Cancelled at the user's request."):
            self._phase(run_id, "cancelled", _S.CANCELLED, "Cancelled")

    def _fail(
        self, run_id: str, status: RunStatus, reason: str, *, stop: str | None = None
    ) -> None:
        if self._transition(
            run_id, status, _S.FAILED, display_text(reason, 1000), stop_reason=stop
        ):
            self._phase(run_id, "failed", _S.FAILED, reason)

    def _transition(
        self,
        run_id: str,
        expected: RunStatus,
        to: RunStatus,
        reason: str,
        *,
        stop_reason: str | None = None,
        stop_limit: str | None = None,
    ) -> bool:
        return self._store.transition(
            run_id,
            expected=expected,
            to=to,
            reason=reason,
            stop_reason=stop_reason or "",
            stop_limit=stop_limit or "",
        )

    def _emit_counts(self, run: _Run, view: _View | None = None) -> None:
        view = view or self._view(run)
        usage = run.ledger.usage()
        self._emit(
            CountsUpdated(
                run_id=run.id,
                searches=usage.searches,
                fetched_sources=usage.fetched_sources,
                evidence_items=len(view.evidence),
                covered_questions=sum(1 for item in view.coverage.values() if item.covered),
                total_questions=len(run.plan.questions),
            )
        )

    def _phase(self, run_id: str, phase: ProgressPhase, status: RunStatus, message: str) -> None:
        self._emit(
            PhaseChanged(
                run_id=run_id, phase=phase, status=status, message=display_text(message, 300)
            )
        )

    def _step_started(self, run_id: str, step_id: str, kind: StepKind, message: str) -> None:
        self._emit(
            StepStarted(
                run_id=run_id, step_id=step_id, kind=kind, message=display_text(message, 200)
            )
        )

    def _step_finished(
        self,
        run_id: str,
        step_id: str,
        kind: StepKind,
        outcome: Literal["succeeded", "rejected", "failed", "skipped", "cancelled"],
        message: str,
    ) -> None:
        self._emit(
            StepFinished(
                run_id=run_id,
                step_id=step_id,
                kind=kind,
                outcome=outcome,
                message=display_text(message, 200),
            )
        )

    def _source_updated(self, run_id: str, record: SourceRecord, message: str) -> None:
        self._emit(
            SourceUpdated(
                run_id=run_id,
                source_id=record.id,
                status=record.status,
                title=display_text(record.title, 200),
                domain=record.domain,
                message=display_text(message, 200),
            )
        )

    def _emit(self, event: ProgressEvent) -> None:
        # Progress is best effort (the database is the record): a failing sink is logged.
        try:
            self._events.emit(event)
        except LeaseLost:
            raise
        except Exception:
            logger.warning("Could not publish a progress event.", exc_info=True)


# --------------------------------------------------------------------------------------------
# Module helpers
# --------------------------------------------------------------------------------------------


def _with_required_question(plan: ResearchPlan) -> ResearchPlan:
    """A plan with no required question would pass the finish gate with no evidence; the
    first question becomes required (the person approving the plan sees it)."""
    if plan.required_question_ids:
        return plan
    first = plan.questions[0].model_copy(update={"priority": "required"})
    return plan.model_copy(update={"questions": [first, *plan.questions[1:]]})


def _with_requested_sections(plan: ResearchPlan, sections: Sequence[str]) -> ResearchPlan:
    """The report template's sections belong in the plan whatever the planner wrote: the
    synthesiser writes what the plan's deliverable lists."""
    listed = list(plan.deliverable.requested_sections)
    present = {section.casefold() for section in listed}
    missing = [section for section in sections if section.casefold() not in present]
    if not missing:
        return plan
    deliverable = plan.deliverable.model_copy(update={"requested_sections": listed + missing})
    return plan.model_copy(update={"deliverable": deliverable})


def search_summary(results: int, dropped: Mapping[str, int]) -> str:
    """The summary of a search step: how many results came back and, when some were not kept,
    how many were dropped and why ("8 results; 3 dropped: private address not allowed")."""
    noun = "result" if results == 1 else "results"
    total = sum(dropped.values())
    if not total:
        return f"{results} {noun}"
    if len(dropped) == 1:
        reasons = next(iter(dropped))
    else:
        ranked = sorted(dropped.items(), key=lambda item: (-item[1], item[0]))
        reasons = ", ".join(f"{count} {reason}" for reason, count in ranked)
    return f"{results} {noun}; {total} dropped: {reasons}"


def _stop_reason(run: _Run) -> StopReason | None:
    # Failing providers also add nothing, so both streaks can end together; the failure is
    # the more useful explanation.
    if run.state.systemic_failure_streak >= SYSTEMIC_FAILURE_LIMIT:
        return StopReason.PROVIDER_FAILURES
    stop = research_stop_reason(run.ledger, run.state)
    if (
        stop in (StopReason.DIMINISHING_RETURNS, StopReason.ONLY_EQUIVALENT_SEARCHES)
        and run.state.systemic_failure_streak > 0
    ):
        # The last actions that ran all failed at the provider and nothing has worked since:
        # "nothing new" is true, but the outage is the explanation a person can act on.
        return StopReason.PROVIDER_FAILURES
    return stop


def _budget_halt(refusal: BudgetRefused) -> _Halt:
    """A budget stop from a refused reservation, naming the counter that ran out."""
    if refusal.counter == "elapsed_seconds":
        return _Halt("stop", stop=StopReason.TIME_EXHAUSTED.value, limit=refusal.counter)
    return _Halt("stop", stop=StopReason.BUDGET_EXHAUSTED.value, limit=refusal.counter)


def _outage(error: ModelError) -> str | None:
    """A model call that failed on a retryable error (endpoint down, rate limited, timed
    out) is a provider outage: the stop reason of the failure it causes."""
    return StopReason.PROVIDER_FAILURES.value if error.retryable else None


def _as_stop(stop: str | None) -> StopReason | None:
    try:
        return StopReason(stop) if stop else None
    except ValueError:
        return None


def _stop_message(stop: str | None) -> str:
    known = _as_stop(stop)
    return STOP_MESSAGES[known] if known is not None else "Research stopped."


def _describe(action: Action) -> str:
    if isinstance(action, SearchAction):
        return f"search “{display_text(action.query, 120)}”"
    if isinstance(action, ReadAction):
        return f"read source {action.source_id}"
    return "finish"


def _decision_summary(
    accepted: list[tuple[ActionVerdict, dict[str, Any]]],
    refused: list[tuple[Action, str]],
    gate_passed: bool,
    finish_requested: bool,
) -> str:
    if gate_passed:
        return "Finishing: every required question is covered"
    parts = []
    searches = sum(1 for v, _ in accepted if isinstance(v.action, SearchAction))
    reads = sum(1 for v, _ in accepted if isinstance(v.action, ReadAction))
    if searches:
        parts.append(f"{searches} search{'es' if searches > 1 else ''}")
    if reads:
        parts.append(f"{reads} source{'s' if reads > 1 else ''} to read")
    text = "Next: " + (", ".join(parts) if parts else "nothing new")
    if refused:
        text += f"; {len(refused)} proposal{'s' if len(refused) > 1 else ''} refused"
    if finish_requested:
        text += "; finishing was refused because the finish gate has not passed"
    return text


def _opaque_contradiction(number: int, item: ContradictionCandidate) -> ContradictionCandidate:
    """A contradiction with the page-derived text (claim key, values, scopes) replaced by a
    label: the decision model learns that evidence conflicts, and where, not what it says."""
    label = f"conflict-{number}"
    return ContradictionCandidate(
        key=label,
        claim_key=label,
        positions=[
            ContradictionPosition(
                value=None, stance=position.stance, evidence_ids=position.evidence_ids, scopes=[]
            )
            for position in item.positions
        ],
        evidence_ids=item.evidence_ids,
        question_ids=item.question_ids,
    )


def _gaps(plan: ResearchPlan, view: _View) -> list[ReportGap]:
    gaps = [
        ReportGap(
            question_id=question.id,
            description=display_text(f"No verified evidence was found for: {question.text}", 2000),
        )
        for question in plan.questions
        if not view.coverage[question.id].covered
    ]
    gaps += [
        ReportGap(description=display_text(reason, 2000))
        for reason in view.gate.unmet
        if "has no verified evidence" not in reason
    ]
    return gaps


def _source_summaries(sources: Iterable[SourceRecord]) -> dict[str, SourceSummary]:
    return {
        source.id: SourceSummary(
            id=source.id,
            title=display_text(source.title or source.domain or source.url, 300),
            url=source.url,
            publisher=source.publisher,
            published_at=source.published_at,
            source_class=source.quality.source_class,
        )
        for source in sources
        if source.status in ("fetched", "duplicate")
    }


def _select_evidence(
    plan: ResearchPlan,
    evidence: Sequence[Evidence],
    contradictions: Sequence[ContradictionCandidate],
    room_tokens: int,
) -> list[Evidence]:
    ranked = sorted(evidence, key=lambda e: (-e.relevance_bp, -e.confidence_bp, e.id))
    order: list[Evidence] = []
    seen: set[str] = set()

    def take(item: Evidence) -> None:
        if item.id not in seen:
            seen.add(item.id)
            order.append(item)

    by_id = {item.id: item for item in evidence}
    for contradiction in contradictions:
        for evidence_id in contradiction.evidence_ids:
            if evidence_id in by_id:
                take(by_id[evidence_id])
    queues = {qid: [e for e in ranked if qid in e.question_ids] for qid in plan.question_ids}
    while any(queues.values()):
        for qid in plan.question_ids:
            if queues[qid]:
                take(queues[qid].pop(0))
    for item in ranked:
        take(item)
    chosen: list[Evidence] = []
    used = 0
    for item in order:
        cost = estimate_tokens(item.model_dump_json())
        if used + cost > room_tokens:
            continue
        chosen.append(item)
        used += cost
    return chosen


def _complete_report(
    report: Report,
    *,
    plan: ResearchPlan,
    gaps: Sequence[ReportGap],
    partial: bool,
    methodology: list[str],
) -> Report:
    """The facts the program knows go into the report whatever the model wrote: the partial
    label, every known gap, and how the research was done."""
    known_questions = {gap.question_id for gap in report.gaps if gap.question_id}
    known_text = {gap.description for gap in report.gaps}
    extra_gaps = [
        gap
        for gap in gaps
        if (gap.question_id and gap.question_id not in known_questions)
        or (not gap.question_id and gap.description not in known_text)
    ]
    completed = report.model_copy(
        update={
            "partial": partial,
            "gaps": [*report.gaps, *extra_gaps],
            "methodology": [*report.methodology, *methodology],
        }
    )
    return Report.model_validate(completed.model_dump())


def _difference(after: Usage, before: Usage) -> Usage:
    values = {
        name: max(getattr(after, name) - getattr(before, name), 0)
        for name in Usage.model_fields
        if name not in ("schema_version", "elapsed_seconds")
    }
    return Usage(**values)
