"""Discovery: run the selected providers, enforce the source policy, merge the rankings.

*Ensemble* mode asks every selected provider and merges their results by
normalised URL with reciprocal-rank fusion, keeping each provider's own rank
in ``provider_ranks``; *fallback* mode asks them in order and stops at the
first that returns something the policy allows.

The source policy steers the search but never hides a result: results the
policy allows rank before those it refuses (outside an ``only_domains`` list or
inside ``excluded_domains``), and the engine drops and counts the refused ones
through the adapter's ``screen``, so a search step says what it did not keep.
With ``prefer_domains`` (and ``only_domains``) each provider that can restrict
a search to one site is first asked a site-restricted query per listed domain
(at most ``MAX_SITE_DOMAINS``), and preferred results rank first.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from research.engine import observe
from research.engine.contracts import ScholarlyMetadata, SearchCandidate, SourcePolicy
from research.engine.urls import (
    InvalidPolicyEntry,
    UnsupportedURLError,
    evaluate_domain_policy,
    normalize_url,
    parse_policy_entry,
)
from research.sources.config import KNOWN_PROVIDERS, SearchMode
from research.sources.errors import SourceError, failed
from research.sources.providers import SearchHit, SearchProvider, SearchRequest
from research.sources.resilience import RateLimiter, RetryPolicy, call_with_retries
from research.sources.snapshot import normalize_inline

logger = logging.getLogger(__name__)

MAX_SITE_DOMAINS = 3
MAX_LIMIT = 50
# Reciprocal-rank fusion constant: dampens the advantage of a first place so
# that agreement between providers matters more than any single ranking.
RRF_K = 60


@dataclass
class _Merged:
    url: str
    title: str
    snippet: str
    published_at: str | None
    preferred: bool
    refused: bool
    first_seen: int
    provider_ranks: dict[str, int] = field(default_factory=dict)
    scholarly: ScholarlyMetadata | None = None

    @property
    def score(self) -> float:
        return sum(1.0 / (RRF_K + rank) for rank in self.provider_ranks.values())


class SearchService:
    """Searches with the configured providers under one source policy."""

    def __init__(
        self,
        providers: Mapping[str, SearchProvider],
        *,
        selected: Sequence[str],
        mode: SearchMode,
        limiter: RateLimiter,
        retry: RetryPolicy,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
    ) -> None:
        self._providers = providers
        self._selected = tuple(selected)
        self._mode = mode
        self._limiter = limiter
        self._retry = retry
        self._sleep = sleep
        self._rng = rng

    def discover(
        self,
        query: str,
        *,
        policy: SourcePolicy,
        limit: int = 10,
        providers: Sequence[str] | None = None,
    ) -> list[SearchCandidate]:
        """Return up to ``limit`` ranked results, those the policy allows first.

        Results the policy refuses fill the places the allowed ones leave, so
        the caller can count them. ``providers`` overrides the configured
        selection for this call. Raises ``SourceError`` when no provider could
        answer at all.
        """
        names = self._names(providers)
        query = normalize_inline(query)
        limit = max(1, min(limit, MAX_LIMIT))
        if not query:
            return []
        results: dict[str, list[SearchHit]] = {}
        errors: dict[str, SourceError] = {}
        if self._mode == "ensemble" and len(names) > 1:
            with ThreadPoolExecutor(
                max_workers=min(4, len(names)), thread_name_prefix="search"
            ) as pool:
                futures = {
                    name: pool.submit(
                        observe.carry_context(self._provider_hits), name, query, policy, limit
                    )
                    for name in names
                }
                for name, future in futures.items():
                    try:
                        results[name] = future.result()
                    except SourceError as error:
                        errors[name] = error
        else:
            for name in names:
                try:
                    hits = self._provider_hits(name, query, policy, limit)
                except SourceError as error:
                    errors[name] = error
                    continue
                results[name] = hits
                if _any_allowed(hits, policy) and self._mode == "fallback":
                    break
        if not results:
            raise self._all_failed(errors)
        for name, error in errors.items():
            logger.warning("Search provider %s failed: %s", name, error)
        return _merge(results, names, limit, policy)

    def _names(self, providers: Sequence[str] | None) -> list[str]:
        names = list(dict.fromkeys(providers or self._selected))
        if not names:
            raise failed("No search provider is configured; set RESEARCH_SEARCH_PROVIDERS.")
        for name in names:
            if name not in self._providers:
                raise failed(
                    f"Unknown search provider {name!r}; choose from {', '.join(KNOWN_PROVIDERS)}."
                )
        return names

    def _provider_hits(
        self, name: str, query: str, policy: SourcePolicy, limit: int
    ) -> list[SearchHit]:
        """All calls one provider makes for this search, site-restricted ones first, timed
        for telemetry (by provider name, never the query)."""
        started = time.monotonic()
        outcome = "error"
        with observe.observer().span("research.search.provider", {"provider": name}):
            try:
                hits = self._collect_hits(name, query, policy, limit)
                outcome = "ok"
                return hits
            finally:
                observe.observer().timed("search", name, time.monotonic() - started, outcome)

    def _collect_hits(
        self, name: str, query: str, policy: SourcePolicy, limit: int
    ) -> list[SearchHit]:
        provider = self._providers[name]
        excluded = tuple(_sites(policy.excluded_domains, exact=True))
        site_requests: list[SearchRequest] = []
        if policy.mode in ("prefer_domains", "only_domains") and provider.supports_site:
            site_requests = [
                SearchRequest(query=query, limit=limit, site=site, exclude_domains=excluded)
                for site in _sites(policy.domains)[:MAX_SITE_DOMAINS]
            ]
        general = SearchRequest(query=query, limit=limit, exclude_domains=excluded)
        collected: list[SearchHit] = []
        last_error: SourceError | None = None
        for request in site_requests:
            try:
                collected += self._call(provider, request)
            except SourceError as error:
                last_error = error
        # An only_domains search falls back to an unrestricted query when the
        # site-restricted ones found nothing it allows.
        if (
            policy.mode != "only_domains"
            or not site_requests
            or not _any_allowed(collected, policy)
        ):
            try:
                collected += self._call(provider, general)
            except SourceError as error:
                last_error = error
        if last_error is not None and not collected:
            raise last_error
        return _unique(collected)

    def _call(self, provider: SearchProvider, request: SearchRequest) -> list[SearchHit]:
        def attempt() -> list[SearchHit]:
            self._limiter.wait(provider.name)
            return provider.search(request)

        return call_with_retries(
            attempt,
            policy=self._retry,
            sleep=self._sleep,
            rng=self._rng,
            describe=f"{provider.label} search",
            operation_name="search",
        )

    def _all_failed(self, errors: dict[str, SourceError]) -> SourceError:
        details = "; ".join(_named(self._providers[n].label, e.reason) for n, e in errors.items())
        return failed(
            f"No search provider could answer ({details}).",
            retryable=any(e.retryable for e in errors.values()),
        )


def _any_allowed(hits: list[SearchHit], policy: SourcePolicy) -> bool:
    return any(evaluate_domain_policy(hit.url, policy).allowed for hit in hits)


def _sites(entries: Sequence[str], *, exact: bool = False) -> list[str]:
    """The hosts of policy entries a ``site:`` restriction or exclusion can name.

    Search engines know sites by host name (and some by IPv4 address), never
    by port or by IPv6 address, so IPv6 entries are skipped and ports dropped.
    ``exact`` also skips entries with a port: an exclusion hint naming the
    whole host would hide results on the ports the policy still allows.
    """
    sites: dict[str, None] = {}
    for text in entries:
        try:
            entry = parse_policy_entry(text)
        except InvalidPolicyEntry:
            continue
        if entry.host.startswith("[") or (exact and entry.port is not None):
            continue
        sites[entry.host] = None
    return list(sites)


def _named(label: str, reason: str) -> str:
    """Prefix a provider's error with its name unless the provider already did."""
    return reason if reason.startswith(f"{label}: ") else f"{label}: {reason}"


def _unique(hits: list[SearchHit]) -> list[SearchHit]:
    seen: set[str] = set()
    unique = []
    for hit in hits:
        key = _key(hit.url)
        if key is not None and key not in seen:
            seen.add(key)
            unique.append(hit)
    return unique


def _key(url: str) -> str | None:
    try:
        return normalize_url(url)
    except UnsupportedURLError:
        return None


def _merge(
    results: dict[str, list[SearchHit]], order: list[str], limit: int, policy: SourcePolicy
) -> list[SearchCandidate]:
    merged: dict[str, _Merged] = {}
    seen = 0
    for name in order:
        for rank, hit in enumerate(results.get(name, []), start=1):
            key = _key(hit.url)
            if key is None:
                continue
            entry = merged.get(key)
            if entry is None:
                decision = evaluate_domain_policy(key, policy)
                entry = merged[key] = _Merged(
                    url=key,
                    title=hit.title,
                    snippet=hit.snippet,
                    published_at=hit.published_at,
                    preferred=decision.preferred,
                    refused=not decision.allowed,
                    first_seen=seen,
                    scholarly=hit.scholarly,
                )
                seen += 1
            else:
                entry.title = entry.title or hit.title
                entry.snippet = entry.snippet or hit.snippet
                entry.published_at = entry.published_at or hit.published_at
                entry.scholarly = entry.scholarly or hit.scholarly
            entry.provider_ranks.setdefault(name, rank)
    return _ranked(list(merged.values()), order, limit)


def _ranked(entries: list[_Merged], order: list[str], limit: int) -> list[SearchCandidate]:
    entries.sort(
        key=lambda e: (
            e.refused,
            not e.preferred,
            -e.score,
            min(e.provider_ranks.values()),
            e.first_seen,
        )
    )
    candidates = []
    for position, entry in enumerate(entries[:limit], start=1):
        best = min(entry.provider_ranks, key=lambda n: (entry.provider_ranks[n], order.index(n)))
        candidates.append(
            SearchCandidate(
                url=entry.url,
                title=entry.title,
                snippet=entry.snippet,
                provider=best,
                rank=position,
                published_at=entry.published_at,
                provider_ranks=dict(entry.provider_ranks),
                scholarly=entry.scholarly,
            )
        )
    return candidates
