"""The rules that keep research bounded: budgets and reservations, query fingerprints, action
validation, the finish gate, diminishing returns and stop reasons.

The model proposes; these functions decide. Everything here is deterministic and side-effect
free except :class:`BudgetLedger`, which keeps the running account of one run in memory (the
loop persists its ``usage`` and ``settled_keys`` in every checkpoint).
"""

import hashlib
import re
import unicodedata
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, TypeVar

from research.engine.contracts import (
    Budget,
    ContradictionCandidate,
    Evidence,
    FinishAction,
    QuestionCoverage,
    ReadAction,
    ResearchPlan,
    SearchAction,
    SourcePolicy,
    SourceRecord,
    SynthesisReserve,
    Usage,
    WorkingState,
)
from research.engine.ports import Clock
from research.engine.urls import evaluate_domain_policy, hostname, registrable_domain

Depth = Literal["quick", "standard", "thorough"]
Phase = Literal["research", "synthesis"]

# --------------------------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------------------------

_KB = 1000
_MB = 1000 * _KB

BUDGET_PRESETS: dict[str, Budget] = {
    "quick": Budget(
        iterations=6,
        searches=8,
        fetched_sources=10,
        model_calls=22,
        elapsed_seconds=10 * 60,
        bytes_per_source=200 * _KB,
        bytes_per_run=1500 * _KB,
        input_tokens=250_000,
        output_tokens=40_000,
        synthesis_model_calls=2,
        synthesis_input_tokens=60_000,
        synthesis_output_tokens=8_000,
    ),
    "standard": Budget(
        iterations=12,
        searches=18,
        fetched_sources=24,
        model_calls=40,
        elapsed_seconds=20 * 60,
        bytes_per_source=200 * _KB,
        bytes_per_run=3 * _MB,
        input_tokens=500_000,
        output_tokens=80_000,
        synthesis_model_calls=2,
        synthesis_input_tokens=120_000,
        synthesis_output_tokens=16_000,
    ),
    "thorough": Budget(
        iterations=20,
        searches=32,
        fetched_sources=45,
        model_calls=72,
        elapsed_seconds=45 * 60,
        bytes_per_source=200 * _KB,
        bytes_per_run=6 * _MB,
        input_tokens=900_000,
        output_tokens=120_000,
        synthesis_model_calls=2,
        synthesis_input_tokens=200_000,
        synthesis_output_tokens=24_000,
    ),
}

# Usage counters a reservation is checked against, with the budget field that limits each.
_LIMITED_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("iterations", "iterations", "iterations"),
    ("searches", "searches", "searches"),
    ("fetched_sources", "fetched_sources", "fetched sources"),
    ("model_calls", "model_calls", "model calls"),
    ("bytes_fetched", "bytes_per_run", "bytes of source text"),
    ("input_tokens", "input_tokens", "input tokens"),
    ("output_tokens", "output_tokens", "output tokens"),
)
_RESERVED_FOR_SYNTHESIS = {
    "model_calls": "synthesis_model_calls",
    "input_tokens": "synthesis_input_tokens",
    "output_tokens": "synthesis_output_tokens",
}


def budget_for(depth: str) -> Budget:
    """The hard-limit preset for ``depth`` (quick, standard or thorough), as a fresh copy."""
    try:
        return BUDGET_PRESETS[depth].model_copy(deep=True)
    except KeyError:
        raise ValueError(
            f"{depth!r} is not a research depth; choose quick, standard or thorough."
        ) from None


def estimate_tokens(text: str) -> int:
    """A cheap, deliberately generous token estimate (about three characters per token)."""
    return len(text) // 3 + 1


class BudgetRefused(Exception):
    """A reservation would exceed a hard limit (or repeat an action already counted)."""

    def __init__(self, reason: str, *, counter: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counter = counter

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Reservation:
    """Budget held for one logical action until it is settled or released."""

    key: str
    amount: Usage
    phase: Phase


def _get(usage: Usage, counter: str) -> float:
    return getattr(usage, counter)


class BudgetLedger:
    """The running account of one run: settled usage, open reservations, elapsed time.

    Reserve before an action, settle after it. Reserving the same key again (a retry) returns
    the open reservation, and settling a key twice records it once, so a logical action counts
    once however often it is attempted. Research-phase reservations may not touch the
    allowance set aside for synthesis; synthesis-phase ones may, and ignore the time limit so a
    run that ran out of time can still write its (partial) report.
    """

    def __init__(
        self,
        budget: Budget,
        *,
        clock: Clock,
        usage: Usage | None = None,
        settled_keys: Iterable[str] = (),
    ) -> None:
        self.budget = budget
        self._clock = clock
        self._settled = (usage or Usage()).model_copy()
        self._settled_keys: set[str] = set(settled_keys)
        self._open: dict[str, Reservation] = {}
        # Elapsed time accumulates across pauses: earlier segments come in through ``usage``.
        self._segment_start = clock.monotonic()

    @property
    def settled_keys(self) -> frozenset[str]:
        """Keys of every action already counted (persist them in the working state)."""
        return frozenset(self._settled_keys)

    def elapsed_seconds(self) -> float:
        """Active research time of the run, including earlier segments."""
        return self._settled.elapsed_seconds + (self._clock.monotonic() - self._segment_start)

    def time_exhausted(self) -> bool:
        """Whether the run has used its elapsed-time budget."""
        return self.elapsed_seconds() >= self.budget.elapsed_seconds

    def usage(self) -> Usage:
        """Settled usage with the elapsed time up to now; what a checkpoint stores."""
        return self._settled.model_copy(update={"elapsed_seconds": self.elapsed_seconds()})

    def reserved(self) -> Usage:
        """The sum of all open reservations."""
        total = Usage()
        for reservation in self._open.values():
            total = total + reservation.amount
        return total

    def synthesis_reserve(self) -> SynthesisReserve:
        """The allowance research may not spend."""
        return SynthesisReserve(
            model_calls=self.budget.synthesis_model_calls,
            input_tokens=self.budget.synthesis_input_tokens,
            output_tokens=self.budget.synthesis_output_tokens,
        )

    def limit(self, counter: str, *, phase: Phase = "research") -> int:
        """The limit of a usage counter in ``phase`` (research excludes the synthesis reserve)."""
        budget_field = next(b for c, b, _ in _LIMITED_COUNTERS if c == counter)
        limit = int(getattr(self.budget, budget_field))
        if phase == "research" and counter in _RESERVED_FOR_SYNTHESIS:
            limit -= int(getattr(self.budget, _RESERVED_FOR_SYNTHESIS[counter]))
        return limit

    def remaining(self, *, phase: Phase = "research") -> Usage:
        """What is still available in ``phase`` after settled usage and open reservations."""
        committed = self._settled + self.reserved()
        values = {
            counter: max(0, self.limit(counter, phase=phase) - int(_get(committed, counter)))
            for counter, _, _ in _LIMITED_COUNTERS
        }
        values["elapsed_seconds"] = max(0.0, self.budget.elapsed_seconds - self.elapsed_seconds())
        return Usage(**values)

    def reserve(self, key: str, amount: Usage, *, phase: Phase = "research") -> Reservation:
        """Hold ``amount`` for the action ``key``; raises :class:`BudgetRefused` with a reason
        when it would exceed a hard limit, when research time is up, or when ``key`` was
        already settled."""
        if key in self._settled_keys:
            raise BudgetRefused("This action has already been carried out and counted.")
        existing = self._open.get(key)
        if existing is not None:
            return existing
        if phase == "research" and self.time_exhausted():
            minutes = self.budget.elapsed_seconds / 60
            raise BudgetRefused(
                f"The run has used its {minutes:g} minutes of research time.",
                counter="elapsed_seconds",
            )
        committed = self._settled + self.reserved()
        for counter, _, label in _LIMITED_COUNTERS:
            wanted = _get(amount, counter)
            if not wanted:
                continue
            limit = self.limit(counter, phase=phase)
            used = _get(committed, counter)
            if used + wanted > limit:
                raise BudgetRefused(
                    self._refusal(counter, label, used, limit, phase), counter=counter
                )
        reservation = Reservation(key=key, amount=amount, phase=phase)
        self._open[key] = reservation
        return reservation

    def _refusal(self, counter: str, label: str, used: float, limit: int, phase: Phase) -> str:
        held_back = ""
        if phase == "research" and counter in _RESERVED_FOR_SYNTHESIS:
            kept = int(getattr(self.budget, _RESERVED_FOR_SYNTHESIS[counter]))
            if kept:
                held_back = f" ({kept:,} more are kept for writing the report)"
        return (
            f"Not enough budget: research may use {limit:,} {label}{held_back} "
            f"and {int(used):,} are already used or reserved."
        )

    def settle(self, key: str, actual: Usage) -> Usage:
        """Record what the action ``key`` actually used and release its reservation.

        Settling a key that was already settled changes nothing. Returns the settled total.
        """
        self._open.pop(key, None)
        if key in self._settled_keys:
            return self.usage()
        self._settled_keys.add(key)
        # Elapsed time is measured by the ledger itself, never taken from an action's report.
        self._settled = self._settled + actual.model_copy(update={"elapsed_seconds": 0.0})
        return self.usage()

    def release(self, key: str) -> None:
        """Drop the reservation of an action that will not run (refused, cancelled)."""
        self._open.pop(key, None)

    def exhausted(self, *, phase: Phase = "research") -> list[str]:
        """Counters with nothing left in ``phase`` (plus ``elapsed_seconds`` once time is up)."""
        committed = self._settled + self.reserved()
        spent = [
            counter
            for counter, _, _ in _LIMITED_COUNTERS
            if _get(committed, counter) >= self.limit(counter, phase=phase)
        ]
        if self.time_exhausted():
            spent.append("elapsed_seconds")
        return spent

    def research_blocked(self) -> str | None:
        """Why research cannot continue on budget grounds, or ``None``.

        Research stops when iterations, model calls, tokens or time are used up, or when it
        can neither search nor read any more. Running out of searches alone does not stop it:
        already discovered candidates can still be read.
        """
        spent = set(self.exhausted(phase="research"))
        for counter in (
            "elapsed_seconds",
            "iterations",
            "model_calls",
            "input_tokens",
            "output_tokens",
        ):
            if counter in spent:
                return counter
        cannot_read = {"fetched_sources", "bytes_fetched"} & spent
        if "searches" in spent and cannot_read:
            return "searches"
        return None


# --------------------------------------------------------------------------------------------
# Query fingerprints
# --------------------------------------------------------------------------------------------

# Words that never change what a search asks for.
_STOP_WORDS_TEXT = """
    a an the of in on for to and or at by with from about as into over under between
    what which who whom whose when where why how is are was were be been being do does did
    has have had its it this that these those there their than then vs versus per
    latest current recent recently now today much many some any all please find search
    show tell me give
"""
_STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())
_OPERATOR = re.compile(
    r"(?<!\S)(-?)(site|inurl|intitle|filetype|before|after):(\S+)", re.IGNORECASE
)
_YEAR_RANGE = re.compile(r"^(19\d\d|20\d\d)-(19\d\d|20\d\d)$")
_ISO_DATE = re.compile(r"^(19\d\d|20\d\d)-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?$")
_YEAR = re.compile(r"^(19\d\d|20\d\d)$")
# Letters and digits of any script, optionally hyphenated ("covid-19", "2019-2023").
_TOKEN = re.compile(r"[^\W_]+(?:-[^\W_]+)*")


@dataclass(frozen=True)
class QueryFingerprint:
    """A search query reduced to what it asks for.

    ``terms`` are the sorted content words (case, accents, punctuation, stop-words, simple
    plurals and word order folded away); ``dates`` is the date scope (years, year ranges, ISO
    dates, before:/after:); ``domains`` and ``filetypes`` are the site scope. Two queries
    with the same :attr:`key` are equivalent: a ``site:`` restriction is a scope of the same
    question, not a new question.
    """

    terms: tuple[str, ...]
    dates: tuple[str, ...] = ()
    domains: tuple[str, ...] = ()
    filetypes: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """The equivalence key: terms plus date scope."""
        text = " ".join(self.terms)
        return f"{text} @{','.join(self.dates)}" if self.dates else text

    @property
    def scoped_key(self) -> str:
        """The key including site and file-type scope, for display and step dedupe keys."""
        parts = [self.key]
        parts += [f"site:{domain}" for domain in self.domains]
        parts += [f"filetype:{kind}" for kind in self.filetypes]
        return " ".join(parts)

    @property
    def empty(self) -> bool:
        """Whether the query had no searchable words at all."""
        return not self.terms


def _fold_text(text: str) -> str:
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch)).casefold()


def _singular(word: str) -> str:
    # A light plural fold so "rates" and "rate" meet; words too short or ending in ss/us/is
    # (class, status, analysis) are left alone.
    if len(word) <= 3 or word.isdigit() or word.endswith(("ss", "us", "is")):
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if word.endswith("s"):
        return word[:-1]
    return word


def fingerprint_query(query: str) -> QueryFingerprint:
    """Reduce ``query`` to a :class:`QueryFingerprint`.

    "GDP of France 2023", "france gdp, 2023" and "2023 France GDP site:insee.fr" all have the
    key ``france gdp @2023``.
    """
    text = _fold_text(query)
    domains: set[str] = set()
    filetypes: set[str] = set()
    dates: set[str] = set()
    for match in _OPERATOR.finditer(text):
        negated, name = match.group(1), match.group(2).lower()
        value = match.group(3).strip("\"'()")
        if name == "site":
            # An excluded site stays visible in the scope as "-example.org".
            domains.add(negated + value.strip("./").split("/")[0])
        elif name == "filetype":
            filetypes.add(value.lstrip("."))
        elif name in ("before", "after"):
            dates.add(f"{name}:{value}")
        # inurl:/intitle: narrow where words appear; the words themselves stay content terms.
        else:
            text += f" {value}"
    text = _OPERATOR.sub(" ", text)
    terms: set[str] = set()
    for token in _TOKEN.findall(text.replace("\u2013", "-").replace("\u2014", "-")):
        if _YEAR.match(token) or _ISO_DATE.match(token):
            dates.add(token)
            continue
        year_range = _YEAR_RANGE.match(token)
        if year_range:
            dates.add(f"{year_range.group(1)}..{year_range.group(2)}")
            continue
        for word in token.split("-"):
            if _YEAR.match(word):
                dates.add(word)
            elif word and word not in _STOP_WORDS:
                terms.add(_singular(word))
    return QueryFingerprint(
        terms=tuple(sorted(terms)),
        dates=tuple(sorted(dates)),
        domains=tuple(sorted(domains)),
        filetypes=tuple(sorted(filetypes)),
    )


def queries_equivalent(first: str, second: str) -> bool:
    """Whether two queries ask the same thing (same fingerprint key)."""
    return fingerprint_query(first).key == fingerprint_query(second).key


# --------------------------------------------------------------------------------------------
# Action validation
# --------------------------------------------------------------------------------------------

MAX_CONCURRENT_SEARCHES = 2
MAX_CONCURRENT_FETCHES = 3
MAX_FETCHES_PER_DOMAIN = 1

Action = SearchAction | ReadAction | FinishAction


@dataclass(frozen=True)
class ActionVerdict:
    """Whether the program accepts one proposed action, and the key its step is stored under."""

    action: Action
    accepted: bool
    reason: str
    dedupe_key: str
    fingerprint: QueryFingerprint | None = None


def action_dedupe_key(
    run_id: str, action: Action, *, iteration: int, fingerprint: QueryFingerprint | None = None
) -> str:
    """A deterministic step key: the same logical action in the same run maps to one step.

    Searches are keyed by their fingerprint (so a resumed run re-proposing an equivalent search
    finds the existing step), reads by source id, finishes by iteration.
    """
    if isinstance(action, SearchAction):
        identity = (fingerprint or fingerprint_query(action.query)).scoped_key
    elif isinstance(action, ReadAction):
        identity = action.source_id
    else:
        identity = str(iteration)
    digest = hashlib.sha256(f"{run_id}\x1f{action.type}\x1f{identity}".encode()).hexdigest()
    return f"{action.type}:{digest[:32]}"


def validate_actions(
    actions: Sequence[Action],
    *,
    run_id: str,
    iteration: int,
    plan: ResearchPlan,
    policy: SourcePolicy,
    sources: Mapping[str, SourceRecord],
    seen_fingerprints: Collection[str],
) -> list[ActionVerdict]:
    """Check proposed actions against the plan, the source policy and what was already done.

    Budget reservation is a separate step (:meth:`BudgetLedger.reserve`). Equivalent searches
    within the batch or against ``seen_fingerprints`` (fingerprint keys) are refused, as are
    reads of unknown, foreign, already read, failed or policy-excluded sources.
    """
    known_questions = set(plan.question_ids)
    seen = set(seen_fingerprints)
    reading: set[str] = set()
    verdicts: list[ActionVerdict] = []
    for action in actions:
        fingerprint = fingerprint_query(action.query) if isinstance(action, SearchAction) else None
        key = action_dedupe_key(run_id, action, iteration=iteration, fingerprint=fingerprint)
        reason, accepted = _verdict(
            action, fingerprint, known_questions, seen, policy, sources, reading
        )
        verdicts.append(
            ActionVerdict(
                action=action,
                accepted=accepted,
                reason=reason,
                dedupe_key=key,
                fingerprint=fingerprint,
            )
        )
    return verdicts


def _verdict(
    action: Action,
    fingerprint: QueryFingerprint | None,
    known_questions: set[str],
    seen: set[str],
    policy: SourcePolicy,
    sources: Mapping[str, SourceRecord],
    reading: set[str],
) -> tuple[str, bool]:
    if isinstance(action, FinishAction):
        return "Finish requested; the finish gate decides.", True
    unknown = [qid for qid in action.question_ids if qid not in known_questions]
    if unknown:
        return f"The plan has no question {', '.join(unknown)}.", False
    if isinstance(action, ReadAction):
        return _read_verdict(action, policy, sources, reading)
    assert fingerprint is not None
    if fingerprint.empty:
        return "The search has no searchable words.", False
    if fingerprint.key in seen:
        return f"An equivalent search ({fingerprint.key}) was already made.", False
    seen.add(fingerprint.key)
    return "Search accepted.", True


def _read_verdict(
    action: ReadAction,
    policy: SourcePolicy,
    sources: Mapping[str, SourceRecord],
    reading: set[str],
) -> tuple[str, bool]:
    source = sources.get(action.source_id)
    if source is None:
        return f"There is no source {action.source_id} in this run.", False
    if action.source_id in reading:
        return f"Source {action.source_id} is already being read.", False
    if source.status == "fetched":
        return f"Source {action.source_id} has already been read.", False
    if source.status == "duplicate":
        return (
            f"Source {action.source_id} duplicates {source.duplicate_of or 'another source'}.",
            False,
        )
    if source.status != "candidate":
        detail = f": {source.status_reason}" if source.status_reason else "."
        return f"Source {action.source_id} is {source.status}{detail}", False
    decision = evaluate_domain_policy(source.url, policy)
    if not decision.allowed:
        return decision.reason, False
    reading.add(action.source_id)
    return "Read accepted.", True


T = TypeVar("T")


def plan_fetch_waves(items: Sequence[T], url_of: Callable[[T], str]) -> list[list[T]]:
    """Group fetches into waves of at most three, with at most one per registrable domain in
    a wave, keeping the proposed order as far as possible. Unparseable URLs go alone."""
    waves: list[tuple[list[T], set[str]]] = []
    for item in items:
        try:
            domain = registrable_domain(hostname(url_of(item)))
        except ValueError:
            domain = f"unparseable:{id(item)}"
        for members, domains in waves:
            if len(members) < MAX_CONCURRENT_FETCHES and domain not in domains:
                members.append(item)
                domains.add(domain)
                break
        else:
            waves.append(([item], {domain}))
    return [members for members, _ in waves]


# --------------------------------------------------------------------------------------------
# Coverage, finish gate, diminishing returns
# --------------------------------------------------------------------------------------------

RELEVANT_BP = 5000
PRIMARY_CLASSES = frozenset({"primary", "official"})


def source_cluster(source: SourceRecord) -> str:
    """The independence cluster of a source, falling back to its registrable domain."""
    if source.quality.independence_cluster:
        return source.quality.independence_cluster
    if source.domain:
        return f"domain:{registrable_domain(source.domain)}"
    try:
        return f"domain:{registrable_domain(hostname(source.url))}"
    except ValueError:
        return f"source:{source.id}"


def is_relevant(evidence: Evidence) -> bool:
    """Evidence counts toward coverage when the extractor rated it at least half relevant."""
    return evidence.relevance_bp >= RELEVANT_BP


@dataclass
class _CoverageTally:
    count: int = 0
    sources: set[str] = field(default_factory=set)
    clusters: set[str] = field(default_factory=set)
    classes: set[str] = field(default_factory=set)
    primary: bool = False


def compute_coverage(
    plan: ResearchPlan, evidence: Iterable[Evidence], sources: Mapping[str, SourceRecord]
) -> dict[str, QuestionCoverage]:
    """Per plan question: relevant verified evidence, its sources, clusters and classes."""
    tallies = {qid: _CoverageTally() for qid in plan.question_ids}
    for item in evidence:
        if not is_relevant(item):
            continue
        source = sources.get(item.source_id)
        for qid in item.question_ids:
            tally = tallies.get(qid)
            if tally is None:
                continue
            tally.count += 1
            if source is None:
                continue
            tally.sources.add(source.id)
            tally.clusters.add(source_cluster(source))
            tally.classes.add(source.quality.source_class)
            tally.primary = tally.primary or source.quality.source_class in PRIMARY_CLASSES
    return {
        qid: QuestionCoverage(
            question_id=qid,
            evidence_count=tally.count,
            source_ids=sorted(tally.sources),
            clusters=sorted(tally.clusters),
            source_classes=sorted(tally.classes),  # type: ignore[arg-type]
            has_primary=tally.primary,
        )
        for qid, tally in tallies.items()
    }


@dataclass(frozen=True)
class FinishGateResult:
    """Whether research may finish; ``unmet`` lists what is still missing, as sentences."""

    passed: bool
    unmet: tuple[str, ...] = ()


def central_contradictions(
    plan: ResearchPlan, contradictions: Iterable[ContradictionCandidate]
) -> list[ContradictionCandidate]:
    """Contradictions touching a required question (or any question when none is tagged)."""
    required = set(plan.required_question_ids)
    return [
        item
        for item in contradictions
        if not item.question_ids or required.intersection(item.question_ids)
    ]


def evaluate_finish_gate(
    plan: ResearchPlan,
    coverage: Mapping[str, QuestionCoverage],
    contradictions: Iterable[ContradictionCandidate] = (),
    *,
    followed_up: Collection[str] = (),
    resolved: Collection[str] = (),
) -> FinishGateResult:
    """Apply the finish gate.

    Every required question needs relevant verified evidence, backed by a primary or official
    source or by two independent clusters (a primary or official source when the question
    requires one). Every central contradiction must have been followed up once, and resolved
    too when the plan does not allow unresolved contradictions.
    """
    unmet: list[str] = []
    for qid in plan.required_question_ids:
        question = plan.question(qid)
        item = coverage.get(qid)
        if item is None or not item.covered:
            unmet.append(f"Question {qid} has no verified evidence yet.")
            continue
        if question is not None and question.requires_primary and not item.has_primary:
            unmet.append(f"Question {qid} needs a primary or official source.")
        elif not item.has_primary and len(item.clusters) < 2:
            unmet.append(
                f"Question {qid} rests on one independent source; it needs a primary or "
                "official source or a second independent one."
            )
    for contradiction in central_contradictions(plan, contradictions):
        if contradiction.key not in followed_up:
            unmet.append(
                f"The conflicting evidence about {contradiction.claim_key!r} has not been "
                "followed up yet."
            )
        elif (
            not plan.completion_criteria.unresolved_contradictions_allowed
            and contradiction.key not in resolved
        ):
            unmet.append(
                f"The conflicting evidence about {contradiction.claim_key!r} is not resolved."
            )
    return FinishGateResult(passed=not unmet, unmet=tuple(unmet))


ZERO_GAIN_LIMIT = 3
DUPLICATE_PROPOSAL_LIMIT = 2
SYSTEMIC_FAILURE_LIMIT = 3


@dataclass(frozen=True)
class IterationGain:
    """What one iteration added; an iteration with nothing here is a zero-gain iteration."""

    new_relevant_evidence: int = 0
    new_source_classes: int = 0
    coverage_gain: int = 0
    contradictions_resolved: int = 0

    @property
    def any(self) -> bool:
        """Whether the iteration added anything at all."""
        return bool(
            self.new_relevant_evidence
            or self.new_source_classes
            or self.coverage_gain
            or self.contradictions_resolved
        )


def _coverage_points(coverage: Mapping[str, QuestionCoverage]) -> set[tuple[str, str]]:
    points: set[tuple[str, str]] = set()
    for qid, item in coverage.items():
        if item.covered:
            points.add((qid, "covered"))
        if item.has_primary:
            points.add((qid, "primary"))
        points.update((qid, f"cluster:{cluster}") for cluster in item.clusters)
    return points


def advance_iteration(
    state: WorkingState,
    *,
    coverage: Mapping[str, QuestionCoverage],
    new_evidence: Iterable[Evidence] = (),
    source_classes: Iterable[str] = (),
    resolved_contradictions: Iterable[str] = (),
) -> tuple[WorkingState, IterationGain]:
    """Close an iteration: measure its gain and return the next working state.

    Coverage gain counts questions newly covered, newly backed by a primary source or gaining
    a new independent cluster. The zero-gain streak resets on any gain.
    """
    before = _coverage_points(state.coverage)
    after = _coverage_points(coverage)
    seen_classes = set(state.source_classes_seen)
    classes = [c for c in dict.fromkeys(source_classes) if c not in seen_classes]
    already_resolved = set(state.resolved_contradictions)
    resolved = [k for k in dict.fromkeys(resolved_contradictions) if k not in already_resolved]
    gain = IterationGain(
        new_relevant_evidence=sum(1 for item in new_evidence if is_relevant(item)),
        new_source_classes=len(classes),
        coverage_gain=len(after - before),
        contradictions_resolved=len(resolved),
    )
    next_state = state.model_copy(
        update={
            "iteration": state.iteration + 1,
            "zero_gain_streak": 0 if gain.any else state.zero_gain_streak + 1,
            "coverage": dict(coverage),
            "source_classes_seen": [*state.source_classes_seen, *classes],
            "resolved_contradictions": [*state.resolved_contradictions, *resolved],
        },
        deep=True,
    )
    return next_state, gain


def diminishing_returns(state: WorkingState) -> bool:
    """Three consecutive iterations without any gain."""
    return state.zero_gain_streak >= ZERO_GAIN_LIMIT


class StopReason(StrEnum):
    """Why research stopped, and so why the run ended where it did; stored on the run as
    data (``stop_reason``) so pages, the command line and filters never match on prose."""

    FINISH_GATE_PASSED = "finish_gate_passed"
    BUDGET_EXHAUSTED = "budget_exhausted"
    TIME_EXHAUSTED = "time_exhausted"
    DIMINISHING_RETURNS = "diminishing_returns"
    ONLY_EQUIVALENT_SEARCHES = "only_equivalent_searches"
    # Research stopped for lack of anything new and not one source could be read: the
    # searches found nothing fetchable, or every page was blocked, failed or unsupported.
    NO_READABLE_SOURCES = "no_readable_sources"
    PROVIDER_FAILURES = "provider_failures"
    # The decision model answered with unusable decisions twice in a row.
    INVALID_DECISIONS = "invalid_decisions"
    # The worker hit an unexpected error on several attempts in a row.
    WORKER_ERROR = "worker_error"
    PAUSED = "paused"
    CANCELLED = "cancelled"


STOP_MESSAGES: dict[StopReason, str] = {
    StopReason.FINISH_GATE_PASSED: "Every required question is covered.",
    StopReason.BUDGET_EXHAUSTED: "The research budget is used up.",
    StopReason.TIME_EXHAUSTED: "The research time limit was reached.",
    StopReason.DIMINISHING_RETURNS: "Three rounds of research added nothing new.",
    StopReason.ONLY_EQUIVALENT_SEARCHES: "Only repeats of earlier searches were left to try.",
    StopReason.NO_READABLE_SOURCES: "No source could be read.",
    StopReason.PROVIDER_FAILURES: "Search or fetch providers kept failing.",
    StopReason.INVALID_DECISIONS: "The decision model twice returned decisions that could not "
    "be used.",
    StopReason.WORKER_ERROR: "The worker kept hitting an unexpected error.",
    StopReason.PAUSED: "The run was paused.",
    StopReason.CANCELLED: "The run was cancelled.",
}


def research_stop_reason(ledger: BudgetLedger, state: WorkingState) -> StopReason | None:
    """The deterministic reason research must stop now, or ``None`` to continue.

    Checks time, hard budgets, diminishing returns, repeated equivalent proposals and
    systemic provider failures. Pause and cancel come from the store's controls; the finish
    gate is evaluated when the model asks to finish.
    """
    blocked = ledger.research_blocked()
    if blocked == "elapsed_seconds":
        return StopReason.TIME_EXHAUSTED
    if blocked is not None:
        return StopReason.BUDGET_EXHAUSTED
    if diminishing_returns(state):
        return StopReason.DIMINISHING_RETURNS
    if state.duplicate_proposal_streak >= DUPLICATE_PROPOSAL_LIMIT:
        return StopReason.ONLY_EQUIVALENT_SEARCHES
    if state.systemic_failure_streak >= SYSTEMIC_FAILURE_LIMIT:
        return StopReason.PROVIDER_FAILURES
    return None
