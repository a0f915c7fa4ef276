"""Discovery across providers: ensemble merging, fallback, source policy, failures."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from research.engine.contracts import SourcePolicy
from research.engine.urls import evaluate_domain_policy
from research.sources.errors import SourceError, failed
from research.sources.providers import (
    SearchHit,
    SearchProvider,
    SearchRequest,
    build_providers,
    provider_endpoints,
)
from research.sources.resilience import RateLimiter, RetryPolicy
from research.sources.safe_fetch import SafeFetcher
from research.sources.search import SearchService
from tests.fixtures.frozen_web.server import FrozenWeb

FULL_WEB = SourcePolicy()


class ScriptedProvider:
    """A provider with canned hits (or a canned failure) that records its requests."""

    supports_site = True

    def __init__(
        self, name: str, hits: Sequence[str] | SourceError, *, supports_site: bool = True
    ) -> None:
        self.name = name
        self.label = name.title()
        self.supports_site = supports_site
        self._hits = hits
        self.requests: list[SearchRequest] = []

    def search(self, request: SearchRequest) -> list[SearchHit]:
        self.requests.append(request)
        if isinstance(self._hits, SourceError):
            raise self._hits
        urls = [u for u in self._hits if request.site is None or f"//{request.site}" in u]
        return [SearchHit(url=u, title=f"T {u}", snippet=f"S {u}") for u in urls][: request.limit]


class RecordingSleep:
    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def service(
    providers: dict[str, SearchProvider],
    selected: Sequence[str],
    *,
    mode: str = "ensemble",
    sleep: RecordingSleep | None = None,
) -> SearchService:
    sleep = sleep or RecordingSleep()
    return SearchService(
        providers,
        selected=selected,
        mode=mode,  # type: ignore[arg-type]
        limiter=RateLimiter(0),
        retry=RetryPolicy(max_attempts=3, base_delay=0.01, max_delay=0.02),
        sleep=sleep,
        rng=lambda: 0.5,
    )


def frozen_service(
    web: FrozenWeb,
    selected: Sequence[str],
    *,
    mode: str = "ensemble",
    sleep: RecordingSleep | None = None,
) -> SearchService:
    config = web.sources_config()
    fetcher = SafeFetcher(config, extra_allowed_hosts=provider_endpoints(config))
    return service(build_providers(config, fetcher), selected, mode=mode, sleep=sleep)


def test_ensemble_merges_providers_by_normalised_url_and_keeps_their_ranks() -> None:
    a = ScriptedProvider("alpha", ["https://one.example/a?utm_source=x", "https://two.example/b"])
    b = ScriptedProvider(
        "beta", ["https://two.example/b", "https://one.example/a", "https://three.example/c"]
    )

    candidates = service({"alpha": a, "beta": b}, ["alpha", "beta"]).discover("q", policy=FULL_WEB)

    assert [c.url for c in candidates] == [
        "https://one.example/a",
        "https://two.example/b",
        "https://three.example/c",
    ]
    assert candidates[0].provider_ranks == {"alpha": 1, "beta": 2}
    assert candidates[1].provider_ranks == {"alpha": 2, "beta": 1}
    assert candidates[2].provider_ranks == {"beta": 3}
    assert [c.rank for c in candidates] == [1, 2, 3]
    assert candidates[0].provider == "alpha" and candidates[1].provider == "beta"


def test_ensemble_over_the_frozen_web_agrees_across_real_wire_formats(web: FrozenWeb) -> None:
    candidates = frozen_service(web, ["searxng", "brave", "tavily"]).discover(
        "Line 3 extension ridership", policy=FULL_WEB, limit=5
    )

    courier = web.url("/news/2024/02/line-3-extension-ridership", host="harwick-courier.test")
    merged = next(c for c in candidates if c.url == courier)  # tracking parameters gone
    assert set(merged.provider_ranks) == {"searxng", "brave", "tavily"}
    assert len({c.url for c in candidates}) == len(candidates)


def test_fallback_mode_stops_at_the_first_provider_with_results() -> None:
    a = ScriptedProvider("alpha", ["https://one.example/a"])
    b = ScriptedProvider("beta", ["https://two.example/b"])

    candidates = service({"alpha": a, "beta": b}, ["alpha", "beta"], mode="fallback").discover(
        "q", policy=FULL_WEB
    )

    assert [c.url for c in candidates] == ["https://one.example/a"]
    assert b.requests == []


def test_fallback_mode_moves_on_when_a_provider_fails() -> None:
    a = ScriptedProvider("alpha", failed("Alpha is down."))
    b = ScriptedProvider("beta", ["https://two.example/b"])

    candidates = service({"alpha": a, "beta": b}, ["alpha", "beta"], mode="fallback").discover(
        "q", policy=FULL_WEB
    )

    assert [c.provider for c in candidates] == ["beta"]


def test_one_failing_provider_does_not_sink_the_ensemble() -> None:
    a = ScriptedProvider("alpha", failed("Alpha is down.", retryable=True))
    b = ScriptedProvider("beta", ["https://two.example/b"])

    candidates = service({"alpha": a, "beta": b}, ["alpha", "beta"]).discover("q", policy=FULL_WEB)

    assert [c.url for c in candidates] == ["https://two.example/b"]


def test_all_providers_failing_is_one_clear_error() -> None:
    a = ScriptedProvider("alpha", failed("Alpha is down.", retryable=True))
    b = ScriptedProvider("beta", failed("Beta rejected the key."))

    with pytest.raises(SourceError) as failure:
        service({"alpha": a, "beta": b}, ["alpha", "beta"]).discover("q", policy=FULL_WEB)

    assert failure.value.kind == "failed"
    assert failure.value.retryable is True
    assert "Alpha: Alpha is down." in failure.value.reason
    assert "Beta: Beta rejected the key." in failure.value.reason


def test_only_domains_drops_everything_else_and_searches_each_site_first() -> None:
    a = ScriptedProvider(
        "alpha", ["https://news.example/a", "https://gov.example/b", "https://blog.example/c"]
    )
    policy = SourcePolicy(mode="only_domains", domains=["gov.example", "news.example"])

    candidates = service({"alpha": a}, ["alpha"]).discover("q", policy=policy)

    assert {c.url for c in candidates} == {"https://news.example/a", "https://gov.example/b"}
    assert [r.site for r in a.requests] == [
        "gov.example",
        "news.example",
    ]  # no unrestricted call needed


def test_only_domains_falls_back_to_an_unrestricted_query_when_sites_find_nothing() -> None:
    # The scripted site filter only matches "//gov.example", so the site query finds nothing.
    a = ScriptedProvider("alpha", ["https://blog.example/c", "https://sub.gov.example/a"])
    policy = SourcePolicy(mode="only_domains", domains=["gov.example"])

    candidates = service({"alpha": a}, ["alpha"]).discover("q", policy=policy)

    # The refused result is not hidden: it ranks after every allowed one, for the engine to
    # drop and count.
    assert [c.url for c in candidates] == ["https://sub.gov.example/a", "https://blog.example/c"]
    assert [evaluate_domain_policy(c.url, policy).refusal for c in candidates] == [
        None,
        "outside the allowed domains",
    ]
    assert [r.site for r in a.requests] == ["gov.example", None]


def test_prefer_domains_runs_the_site_search_first_and_ranks_preferred_first(
    web: FrozenWeb,
) -> None:
    policy = SourcePolicy(mode="prefer_domains", domains=["citylines-blog.test"])

    candidates = frozen_service(web, ["searxng"]).discover(
        "Line 3 extension ridership", policy=policy, limit=5
    )

    assert candidates[0].url.startswith(f"http://citylines-blog.test:{web.port}/")
    queries = [r.path for r in web.requests_to("/search")]
    assert "site%3Acitylines-blog.test" in queries[0]
    assert "site" not in queries[1]


def test_excluded_domains_rank_after_every_allowed_result(web: FrozenWeb) -> None:
    policy = SourcePolicy(excluded_domains=["harwick-courier.test", "metro-digest.test"])

    candidates = frozen_service(web, ["searxng", "brave"]).discover(
        "Line 3 ridership", policy=policy
    )

    excluded = ["harwick-courier.test" in c.url or "metro-digest.test" in c.url for c in candidates]
    assert any(excluded) and not all(excluded)
    assert excluded == sorted(excluded)  # every allowed result first
    assert {
        evaluate_domain_policy(c.url, policy).refusal
        for c, out in zip(candidates, excluded, strict=True)
        if out
    } == {"excluded domain"}


def test_site_search_is_skipped_for_providers_that_cannot_restrict() -> None:
    wiki = ScriptedProvider("wiki", ["https://wiki.example/A"], supports_site=False)
    policy = SourcePolicy(mode="prefer_domains", domains=["gov.example"])

    service({"wiki": wiki}, ["wiki"]).discover("q", policy=policy)

    assert [r.site for r in wiki.requests] == [None]


def test_rate_limited_provider_is_retried_after_retry_after(web: FrozenWeb) -> None:
    web.fail_next("/search", 429, times=1, retry_after="0")
    sleep = RecordingSleep()

    candidates = frozen_service(web, ["searxng"], sleep=sleep).discover(
        "heat pump", policy=FULL_WEB
    )

    assert candidates
    assert len(web.requests_to("/search")) == 2
    assert len(sleep.calls) == 1


def test_provider_that_keeps_failing_gives_up_after_three_attempts(web: FrozenWeb) -> None:
    web.fail_next("/search", 503, times=5)

    with pytest.raises(SourceError, match="gave up after 3 attempts"):
        frozen_service(web, ["searxng"]).discover("heat pump", policy=FULL_WEB)
    assert len(web.requests_to("/search")) == 3


def test_per_run_provider_choice_overrides_the_configuration(web: FrozenWeb) -> None:
    candidates = frozen_service(web, ["searxng"]).discover(
        "heat pump", policy=FULL_WEB, providers=["wikipedia"]
    )

    assert candidates and all(c.provider == "wikipedia" for c in candidates)
    assert web.requests_to("/search") == []


def test_unknown_provider_is_refused_with_the_choices() -> None:
    with pytest.raises(SourceError, match="Unknown search provider 'bing'"):
        service({}, ["bing"]).discover("q", policy=FULL_WEB)


def test_empty_query_finds_nothing_without_calling_providers() -> None:
    a = ScriptedProvider("alpha", ["https://one.example/a"])

    assert service({"alpha": a}, ["alpha"]).discover("   ", policy=FULL_WEB) == []
    assert a.requests == []


def test_provider_calls_are_spaced_by_the_rate_limit() -> None:
    clock = [100.0]
    sleep = RecordingSleep()
    limiter = RateLimiter(1.0, clock=lambda: clock[0], sleep=sleep)
    a = ScriptedProvider("alpha", ["https://gov.example/a", "https://news.example/b"])
    search = SearchService(
        {"alpha": a},
        selected=["alpha"],
        mode="ensemble",
        limiter=limiter,
        retry=RetryPolicy(),
        sleep=sleep,
    )

    search.discover(
        "q", policy=SourcePolicy(mode="prefer_domains", domains=["gov.example", "news.example"])
    )

    assert len(a.requests) == 3
    assert sleep.calls == [1.0, 2.0]  # slots reserved at 100, 101, 102 while the clock stood still
