"""Action validation: the verdict on each proposed action, step dedupe keys, fetch waves."""

import hashlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from research.engine.contracts import (
    FinishAction,
    ReadAction,
    ResearchPlan,
    SearchAction,
    SourcePolicy,
    SourceRecord,
)
from research.engine.guards.queries import QueryFingerprint, fingerprint_query
from research.engine.urls import evaluate_domain_policy, hostname, registrable_domain

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
