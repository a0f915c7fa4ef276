"""The ports through which the research engine talks to the world.

The engine never imports Django, httpx or a model SDK. The database (``research/store.py``),
the model backends (``research/llm/``), the web (``research/sources/``) and the live progress
channel (``research/events.py``) implement these protocols; tests implement them in memory.
"""

import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, Literal, Protocol, TypeVar, get_args, runtime_checkable

from research.engine.contracts import (
    Evidence,
    ExtractionRequest,
    ExtractionResult,
    PlanRequest,
    ProgressEvent,
    Report,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    RunControls,
    RunSnapshot,
    ScholarlyMetadata,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
    SourceQuality,
    SourceRecord,
    StepKind,
    StepRecord,
    StepStatus,
    SynthesisRequest,
    Usage,
    Verification,
    VerificationRequest,
    WorkingState,
)
from research.engine.states import RunStatus
from research.engine.steps import StepPayload

AcquisitionErrorKind = Literal["blocked", "failed", "unsupported"]

CandidateDrop = Literal[
    "not a web address",
    "private address not allowed",
    "cloud metadata address",
    "local host name not allowed",
    "non-web port",
    "excluded domain",
    "outside the allowed domains",
    "web not used by this run",
    "document not chosen for this run",
]
"""Why a search result did not become a candidate: short fixed phrases, counted per reason in
the search step's summary ("8 results; 3 dropped: private address not allowed")."""

CANDIDATE_DROPS: tuple[CandidateDrop, ...] = get_args(CandidateDrop)

T = TypeVar("T")


def fetch_counted(kind: str) -> bool:
    """Whether a source stored with status ``kind`` spent a fetch when nothing more is known:
    a failed read did; a refusal (blocked, unsupported) did not."""
    return kind == "failed"


class AcquisitionError(Exception):
    """A source could not be acquired. ``kind`` is the status the source is stored with.

    ``blocked``: policy, robots, paywall or a refused address; ``failed``: network or server
    trouble (``retryable`` when trying again later may help); ``unsupported``: a content type
    or size the engine cannot use. ``reason`` is a sentence a user can read.

    ``counts_as_fetch`` says whether the attempt spent a fetch of the run's budget: a refusal
    (blocked, or unsupported before the body was downloaded) did not, a failed read did (once,
    however often the adapter retried it). By default only ``failed`` counts; an adapter
    passes ``counts_as_fetch=True`` for content it downloaded in full and then could not use.
    """

    def __init__(
        self,
        kind: AcquisitionErrorKind,
        reason: str,
        *,
        retryable: bool = False,
        counts_as_fetch: bool | None = None,
    ) -> None:
        if kind not in ("blocked", "failed", "unsupported"):
            raise ValueError(f"{kind!r} is not an acquisition error kind.")
        super().__init__(reason)
        self.kind: AcquisitionErrorKind = kind
        self.reason = reason
        self.retryable = retryable
        self.counts_as_fetch = fetch_counted(kind) if counts_as_fetch is None else counts_as_fetch

    def __str__(self) -> str:
        return self.reason


class LeaseLost(Exception):
    """This worker no longer owns the run (its lease expired and another worker claimed it).

    The store raises it from any write (and from :meth:`Store.heartbeat`). The orchestrator
    never catches it: the worker must stop at once and write nothing more.
    """


class ModelError(Exception):
    """A model call failed or returned output that could not be validated after repair.

    ``reason`` is a sentence a user can read; ``retryable`` says whether a later attempt may
    succeed (a timeout or rate limit) or not (invalid output twice in a row).
    """

    def __init__(self, reason: str, *, retryable: bool = False, usage: Usage | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        # A failed call may still have consumed tokens; the loop settles them.
        self.usage = usage or Usage()

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class ModelResult(Generic[T]):
    """A validated contract returned by a model call, with what the call consumed."""

    value: T
    usage: Usage


@runtime_checkable
class SourceAdapter(Protocol):
    """Discovers and acquires sources (the web adapter lives in ``research/sources``)."""

    def discover(
        self, query: str, *, policy: SourcePolicy, limit: int = 10
    ) -> list[SearchCandidate]:
        """Search for ``query`` and return ranked results, those the policy allows first.

        Results the policy refuses may follow them; the engine drops them through
        :meth:`screen` and counts them, so a search never loses results silently."""
        ...

    def acquire(
        self,
        url: str,
        *,
        policy: SourcePolicy,
        max_bytes: int,
        work: ScholarlyMetadata | None = None,
    ) -> SourceDocument:
        """Fetch and normalise ``url``; raises :class:`AcquisitionError`."""
        ...

    def screen(self, url: str, *, policy: SourcePolicy) -> CandidateDrop | None:
        """Why the search result ``url`` may not become a candidate, or ``None`` when it may.

        The adapter answers with the rules its fetcher applies before any DNS lookup (scheme,
        literal addresses, host names, ports, the operator's allow-list) and the source
        policy, so the engine never second-guesses what the fetcher would reach.
        """
        ...


@runtime_checkable
class ModelClient(Protocol):
    """The four model calls of the research method, each returning a validated contract.

    Implementations validate and (once) repair model output themselves; they raise
    :class:`ModelError` when they cannot produce a valid contract.
    """

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        """Draft a research plan. No tools, no retrieved content."""
        ...

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        """Propose one to three actions from the compact research brief."""
        ...

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        """Extract evidence candidates from one untrusted source, in a tool-less call."""
        ...

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        """Write the report from evidence cards; ``request.problems`` is set for the repair."""
        ...


@runtime_checkable
class Verifier(Protocol):
    """The verifier: a fifth, tool-less model call that judges findings against their cited
    excerpts. Only backends with a language model offer it; without one the deterministic
    support checks are all there is (the extractive backend is no ``Verifier``)."""

    def verify(self, request: VerificationRequest) -> ModelResult[Verification]:
        """Judge each finding of ``request`` as supported, partially supported or
        unsupported by its excerpts, naming the part they do not support."""
        ...


@runtime_checkable
class EventSink(Protocol):
    """Receives progress events; delivery is best effort, the database is the record."""

    def emit(self, event: ProgressEvent) -> None:
        """Publish one progress event."""
        ...


@runtime_checkable
class Clock(Protocol):
    """Wall time for timestamps and a monotonic reading for elapsed-time budgets."""

    def now(self) -> datetime:
        """The current time, timezone-aware (UTC)."""
        ...

    def monotonic(self) -> float:
        """Seconds from an arbitrary origin that never go backwards."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        """The current UTC time."""
        return datetime.now(UTC)

    def monotonic(self) -> float:
        """``time.monotonic()``."""
        return time.monotonic()


@runtime_checkable
class Store(Protocol):
    """Durable state of runs, steps, sources, evidence and reports.

    Every write is idempotent so a resumed run never duplicates work: steps by dedupe key,
    sources by canonical URL hash, evidence by evidence hash. Status changes are
    compare-and-set on (status, plan_version). Any write may raise :class:`LeaseLost` when
    the calling worker no longer owns the run. The orchestrator calls the store from one
    thread only (its own), never from its worker threads.
    """

    def load_run(self, run_id: str) -> RunSnapshot:
        """Load the run with its plan, policy, budget, usage, working state and controls."""
        ...

    def transition(
        self,
        run_id: str,
        *,
        expected: RunStatus,
        to: RunStatus,
        plan_version: int | None = None,
        reason: str = "",
        stop_reason: str = "",
        stop_limit: str = "",
    ) -> bool:
        """Move the run from ``expected`` to ``to`` if it is still there (and still at
        ``plan_version`` when given). Returns ``False`` when someone else moved it first.

        Moving to ``paused`` records ``expected`` as the resume phase and clears the pause
        request (it has been honoured); moving to ``failed`` records ``expected`` as the
        phase a retry restarts. ``reason`` is a sentence for people: why the run failed,
        stopped or was cancelled. ``stop_reason`` (a ``StopReason`` value) and
        ``stop_limit`` (the budget counter that ran out) say the same as data; they are
        kept for a run that ends (completed, budget_exhausted, failed) and cleared when it
        moves on."""
        ...

    def controls(self, run_id: str) -> RunControls:
        """Read the pause and cancel flags afresh. Controls only set these flags while a
        worker owns the run; the worker performs the transition (and resume clears them)."""
        ...

    def heartbeat(self, run_id: str) -> None:
        """Called at every safe boundary of the loop: renew this worker's lease, or raise
        :class:`LeaseLost` when it has been lost."""
        ...

    def save_plan(self, run_id: str, *, plan: ResearchPlan, expected_version: int) -> bool:
        """Store ``plan`` as version ``expected_version + 1`` if the run is still at
        ``expected_version``; ``False`` when the plan changed meanwhile."""
        ...

    def save_checkpoint(self, run_id: str, *, state: WorkingState, usage: Usage) -> None:
        """Persist the working state and usage together."""
        ...

    def begin_step(
        self,
        run_id: str,
        *,
        kind: StepKind,
        dedupe_key: str,
        rationale: str = "",
        payload: StepPayload | None = None,
        iteration: int = 0,
    ) -> StepRecord:
        """Create a pending step, or return the existing step with the same dedupe key
        (whatever its status; the existing step keeps its payload)."""
        ...

    def start_step(self, step_id: str) -> StepRecord:
        """Mark a step running and count the attempt (1 on its first start)."""
        ...

    def finish_step(
        self,
        step_id: str,
        *,
        status: StepStatus,
        summary: str = "",
        usage: Usage | None = None,
        error: str = "",
    ) -> None:
        """Record a step's outcome, what it consumed and, when it failed, why."""
        ...

    def list_steps(self, run_id: str) -> list[StepRecord]:
        """All steps of the run in creation order."""
        ...

    def cancel_pending_steps(self, run_id: str) -> int:
        """Mark every pending or running step cancelled (used on cancel and on refinement,
        which invalidates actions that have not run); returns how many changed."""
        ...

    def record_candidates(
        self,
        run_id: str,
        *,
        step_id: str,
        candidates: Sequence[SearchCandidate],
        summary: str = "",
        usage: Usage | None = None,
        output: dict[str, object] | None = None,
    ) -> list[SourceRecord]:
        """Store search results as candidate sources (deduplicated by canonical URL hash) and
        finish the search step as succeeded in the same transaction, with ``output`` (what
        the search returned and dropped) as the step's output. Returns one record per
        candidate, in candidate order (an already known URL returns its existing source)."""
        ...

    def list_sources(self, run_id: str) -> list[SourceRecord]:
        """All sources of the run, in discovery order."""
        ...

    def get_source(self, run_id: str, source_id: str) -> SourceRecord | None:
        """One source of the run, or ``None`` (also when it belongs to another run)."""
        ...

    def record_acquisition(
        self,
        run_id: str,
        source_id: str,
        *,
        document: SourceDocument,
        quality: SourceQuality,
        duplicate_of: str | None = None,
    ) -> SourceRecord:
        """Store the snapshot; the source becomes ``fetched``, or ``duplicate`` of another."""
        ...

    def record_failure(
        self, run_id: str, source_id: str, *, kind: AcquisitionErrorKind, reason: str
    ) -> SourceRecord:
        """Mark a source blocked, failed or unsupported with a readable reason."""
        ...

    def load_snapshot(self, run_id: str, source_id: str) -> SourceDocument | None:
        """The stored snapshot of an acquired source."""
        ...

    def add_evidence(
        self, run_id: str, *, step_id: str, evidence: Sequence[Evidence]
    ) -> list[Evidence]:
        """Insert evidence, skipping items whose hash the run already has (in scope or not);
        returns the new ones."""
        ...

    def list_evidence(self, run_id: str) -> list[Evidence]:
        """The run's verified evidence that is in scope of the current plan, in insertion
        order. Evidence marked out of scope stays stored for audit but is not listed."""
        ...

    def mark_out_of_scope(self, run_id: str, *, question_ids_kept: Collection[str]) -> int:
        """After a plan revision: evidence addressing none of ``question_ids_kept`` is marked
        out of scope (never deleted); evidence addressing one of them is in scope again.
        Returns how many items are out of scope now."""
        ...

    def save_report(self, run_id: str, *, report: Report) -> None:
        """Store the validated report object (the durable record the pages render from);
        a later report of the same run replaces it."""
        ...
