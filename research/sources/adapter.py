"""``WebSourceAdapter``: the engine's ``SourceAdapter`` port for the public web.

It ties the pieces together: search providers for ``discover``; the domain
policy, per-domain rate limit, retries, ``SafeFetcher`` and extraction for
``acquire``. Every failure leaves as an ``AcquisitionError`` (``SourceError``)
with a sentence; nothing else escapes, so one bad page never stops a run.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Protocol

import httpcore

from research.engine import observe
from research.engine.contracts import (
    ScholarlyMetadata,
    SearchCandidate,
    SourceDocument,
    SourcePolicy,
)
from research.engine.ports import CandidateDrop
from research.engine.urls import (
    UnsupportedURLError,
    evaluate_domain_policy,
    hostname,
    is_document_url,
    registrable_domain,
)
from research.engine.works import collapse_candidates
from research.sources.abstracts import abstract_document
from research.sources.config import SourcesConfig
from research.sources.errors import SourceError, blocked, failed
from research.sources.extract import extract_document
from research.sources.pinning import Resolver
from research.sources.providers import SearchProvider, build_providers, provider_endpoints
from research.sources.providers.duckduckgo import DdgsFactory
from research.sources.resilience import (
    AttemptWindow,
    RateLimiter,
    RetryPolicy,
    call_with_retries,
)
from research.sources.responses import FetchResponse
from research.sources.safe_fetch import SafeFetcher
from research.sources.search import SearchService
from research.sources.snapshot import bound_snapshot

logger = logging.getLogger(__name__)


class DocumentCatalog(Protocol):
    """The uploaded documents a source policy names (implemented on the library tables by
    ``research.worker.documents``)."""

    def search(self, query: str, *, policy: SourcePolicy, limit: int) -> list[SearchCandidate]:
        """Documents of the policy whose passages match ``query``, best first."""
        ...

    def load(self, url: str, *, policy: SourcePolicy) -> SourceDocument | None:
        """The stored snapshot of the document at ``url`` (``None`` when it is gone)."""
        ...


class WebSourceAdapter:
    """Discovers and acquires web sources safely (implements ``engine.ports.SourceAdapter``).

    ``providers`` picks the search providers for this adapter (a run's own
    choice); by default the configured ``search_providers`` are used. The
    keyword-only seams (resolver, network backend, ddgs factory, provider
    objects, clock, sleep, randomness) exist for tests and evaluations.
    """

    def __init__(
        self,
        config: SourcesConfig,
        *,
        providers: Sequence[str] | None = None,
        resolver: Resolver | None = None,
        network_backend: httpcore.NetworkBackend | None = None,
        ddgs_factory: DdgsFactory | None = None,
        search_providers: Mapping[str, SearchProvider] | None = None,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        rng: Callable[[], float] = random.random,
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
        documents: DocumentCatalog | None = None,
    ) -> None:
        self.config = config
        self._documents = documents
        self._fetcher = SafeFetcher(
            config, resolver=resolver, network_backend=network_backend, clock=clock
        )
        provider_fetcher = SafeFetcher(
            config,
            resolver=resolver,
            network_backend=network_backend,
            extra_allowed_hosts=provider_endpoints(config),
            clock=clock,
        )
        built = dict(build_providers(config, provider_fetcher, ddgs_factory=ddgs_factory))
        built.update(search_providers or {})
        self._retry = RetryPolicy(
            max_attempts=config.max_attempts,
            base_delay=config.backoff_base,
            max_delay=config.backoff_max,
            max_retry_after=config.max_retry_after,
        )
        self._domain_limiter = RateLimiter(config.domain_interval, clock=clock, sleep=sleep)
        self._clock = clock
        self._sleep = sleep
        self._rng = rng
        self._now = now
        self._search = SearchService(
            built,
            selected=tuple(providers) if providers else config.search_providers,
            mode=config.search_mode,
            limiter=RateLimiter(config.provider_interval, clock=clock, sleep=sleep),
            retry=self._retry,
            sleep=sleep,
            rng=rng,
        )

    def discover(
        self,
        query: str,
        *,
        policy: SourcePolicy,
        limit: int = 10,
        providers: Sequence[str] | None = None,
    ) -> list[SearchCandidate]:
        """Search for ``query`` and return ranked results, those the policy allows first
        (the engine drops and counts the others through ``screen``).

        With documents in the policy, the chosen documents' best matches come first; the web
        is searched only when the policy includes it. Raises ``AcquisitionError`` (kind
        ``failed``) when no provider answers and no document matched.
        """
        found: list[SearchCandidate] = []
        if policy.uses_documents and self._documents is not None:
            found = self._documents.search(query, policy=policy, limit=limit)
        if not policy.web:
            return found
        try:
            web = self._search.discover(query, policy=policy, limit=limit, providers=providers)
        except SourceError:
            if found:
                return found
            raise
        except Exception as error:  # a provider bug must not end the run
            logger.exception("Search for %r failed unexpectedly", query)
            if found:
                return found
            raise failed(f"The search failed unexpectedly ({type(error).__name__}).") from error
        # Scholarly results for one work (publisher page, preprint, PDF, index records)
        # become one candidate with every address kept (research.engine.works).
        return [*found, *collapse_candidates(web)]

    def _acquire_document(
        self, url: str, *, policy: SourcePolicy, max_bytes: int
    ) -> SourceDocument:
        self._check_policy(url, policy)
        document = self._documents.load(url, policy=policy) if self._documents else None
        if document is None:
            raise failed("This document was deleted from its library, or cannot be read here.")
        if document.content_bytes <= max_bytes:
            return document
        snapshot = bound_snapshot(
            document.text, document.headings, document.pages, max_bytes, document.blocks
        )
        return document.model_copy(
            update={
                "text": snapshot.text,
                "headings": snapshot.headings,
                "pages": snapshot.pages,
                "blocks": snapshot.blocks,
                "content_hash": snapshot.content_hash,
                "content_bytes": snapshot.content_bytes,
                "truncated": True,
            }
        )

    def acquire(
        self,
        url: str,
        *,
        policy: SourcePolicy,
        max_bytes: int,
        work: ScholarlyMetadata | None = None,
    ) -> SourceDocument:
        """Fetch ``url`` and return its normalised snapshot of at most ``max_bytes`` bytes.

        The source policy is checked for the URL and for every redirect target.
        Retryable failures (timeouts, 429, 502–504) are retried with backoff;
        everything else raises ``AcquisitionError`` at once. The whole
        acquisition, retries and their waits included, ends within the
        configured total time limit.

        ``work`` is what a scholarly index said about the work at ``url``: when it names no
        open-access full text, or that text cannot be read, the index's record (with its
        abstract) is the snapshot, marked ``abstract_only``. A ``document://`` address is
        read from the library (``DocumentCatalog``).
        """
        if max_bytes < 1:
            raise ValueError("max_bytes must be at least 1.")
        if is_document_url(url):
            return self._acquire_document(url, policy=policy, max_bytes=max_bytes)
        self._check_policy(url, policy)
        has_abstract = work is not None and bool(work.abstract)
        if has_abstract and work.full_text_url is None:
            return self._abstract(url, work, max_bytes)
        try:
            return self._fetch(url, policy=policy, max_bytes=max_bytes)
        except SourceError:
            if not has_abstract:
                raise
            logger.info("The full text at %s could not be read; using the abstract.", url)
            return self._abstract(url, work, max_bytes)

    def _abstract(self, url: str, work: ScholarlyMetadata, max_bytes: int) -> SourceDocument:
        record = SearchCandidate(
            url=url, title=work.title, provider="scholarly", rank=1, scholarly=work
        )
        return abstract_document(record, max_bytes=max_bytes, retrieved_at=self._now())

    def _fetch(self, url: str, *, policy: SourcePolicy, max_bytes: int) -> SourceDocument:
        # Timed and traced for telemetry as one "web" fetch: never labelled by its address.
        started = time.monotonic()
        outcome = "error"
        with observe.observer().span("research.fetch", {"provider": "web"}):
            try:
                document = self._fetch_document(url, policy, max_bytes)
                outcome = "ok"
                return document
            finally:
                observe.observer().timed("fetch", "web", time.monotonic() - started, outcome)

    def _fetch_document(self, url: str, policy: SourcePolicy, max_bytes: int) -> SourceDocument:
        window = AttemptWindow(
            clock=self._clock,
            ends_at=self._clock() + self.config.total_timeout,
            min_attempt_seconds=min(self.config.connect_timeout, self.config.total_timeout),
            limit_seconds=self.config.total_timeout,
        )

        def guard(target: str) -> None:
            self._check_policy(target, policy, redirected=target != url)

        def attempt() -> FetchResponse:
            self._domain_limiter.wait(_domain_key(url))
            return self._fetcher.fetch(url, redirect_guard=guard, ends_at=window.ends_at)

        try:
            response = call_with_retries(
                attempt,
                policy=self._retry,
                sleep=self._sleep,
                rng=self._rng,
                describe="Fetching the page",
                window=window,
                operation_name="fetch",
            )
            return extract_document(response, max_bytes=max_bytes, retrieved_at=self._now())
        except SourceError:
            raise
        except Exception as error:  # a parser bug must not end the run
            logger.exception("Acquiring %s failed unexpectedly", url)
            raise failed(f"Reading {url} failed unexpectedly ({type(error).__name__}).") from error

    def screen(self, url: str, *, policy: SourcePolicy) -> CandidateDrop | None:
        """Why the search result ``url`` may not become a candidate, or ``None`` when it may.

        The page fetcher's own checks decide (with the operator's allow-list, so an
        allow-listed intranet address is kept), then the source policy.
        """
        drop = None if is_document_url(url) else self._fetcher.screen_url(url)
        if drop is not None:
            return drop
        return evaluate_domain_policy(url, policy).refusal

    @staticmethod
    def _check_policy(url: str, policy: SourcePolicy, *, redirected: bool = False) -> None:
        decision = evaluate_domain_policy(url, policy)
        if not decision.allowed:
            if redirected:
                raise blocked(
                    f"The page redirected to {url}, which the source policy does not allow: "
                    f"{decision.reason}"
                )
            raise blocked(decision.reason)


def _domain_key(url: str) -> str:
    try:
        return registrable_domain(hostname(url))
    except UnsupportedURLError:
        return url
