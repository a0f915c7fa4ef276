"""WebSourceAdapter end to end on the frozen web: the engine's SourceAdapter port."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from research.engine.contracts import SearchCandidate, SourceDocument, SourcePolicy
from research.engine.ports import AcquisitionError, SourceAdapter
from research.sources import WebSourceAdapter
from research.sources.providers import SearchRequest
from tests.fixtures.frozen_web.server import FrozenWeb

FULL_WEB = SourcePolicy()
RETRIEVED = datetime(2024, 5, 1, 9, 30, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def adapter(web: FrozenWeb, clock: Clock | None = None, **config: object) -> WebSourceAdapter:
    clock = clock or Clock()
    return WebSourceAdapter(
        web.sources_config(**config),
        clock=clock,
        sleep=clock.sleep,
        rng=lambda: 0.5,
        now=lambda: RETRIEVED,
    )


def test_it_implements_the_engine_port(web: FrozenWeb) -> None:
    assert isinstance(adapter(web), SourceAdapter)


def test_discover_returns_validated_ranked_candidates(web: FrozenWeb) -> None:
    candidates = adapter(web).discover("Lake Tessaly bloom 2023", policy=FULL_WEB, limit=4)

    assert 0 < len(candidates) <= 4
    assert all(isinstance(c, SearchCandidate) for c in candidates)
    assert [c.rank for c in candidates] == list(range(1, len(candidates) + 1))
    assert candidates[0].url == web.url("/monitoring/2023-bloom-season", host="tessaly-water.test")
    assert candidates[0].provider_ranks == {"searxng": 1}


def test_run_can_choose_its_own_providers(web: FrozenWeb) -> None:
    chosen = WebSourceAdapter(web.sources_config(), providers=["arxiv", "wikipedia"])

    candidates = chosen.discover("heat pump defrost", policy=FULL_WEB)

    assert {c.provider for c in candidates} <= {"arxiv", "wikipedia"}
    assert web.requests_to("/search") == []


def test_acquire_returns_a_bounded_snapshot(web: FrozenWeb) -> None:
    url = web.url("/monitoring/2023-bloom-season", host="tessaly-water.test")

    doc = adapter(web).acquire(url, policy=FULL_WEB, max_bytes=200_000)

    assert isinstance(doc, SourceDocument)
    assert doc.requested_url == url
    assert doc.retrieved_at == RETRIEVED
    assert doc.publisher == "Tessaly Basin Water Board"
    assert "38 micrograms per litre" in doc.text


def test_acquire_refuses_an_excluded_domain_before_any_request(web: FrozenWeb) -> None:
    policy = SourcePolicy(excluded_domains=["lakeside-forum.test"])

    with pytest.raises(AcquisitionError) as refused:
        adapter(web).acquire(
            web.url("/threads/bloom-2023", host="lakeside-forum.test"),
            policy=policy,
            max_bytes=10_000,
        )

    assert refused.value.kind == "blocked"
    assert "excluded" in str(refused.value)
    assert web.requests == []


def test_redirect_out_of_the_allowed_domains_is_refused(web: FrozenWeb) -> None:
    policy = SourcePolicy(mode="only_domains", domains=["doi.test"])

    with pytest.raises(
        AcquisitionError, match="redirected to .*nordic-heat-journal.test"
    ) as refused:
        adapter(web).acquire(
            web.url("/10.5555/nhj.2022.14.3.7", host="doi.test"), policy=policy, max_bytes=10_000
        )

    assert refused.value.kind == "blocked"
    assert [r.host for r in web.requests] == ["doi.test"]  # the target was never contacted


def test_acquire_refuses_private_addresses_even_in_full_web_mode(web: FrozenWeb) -> None:
    with pytest.raises(AcquisitionError) as refused:
        adapter(web).acquire(
            "http://169.254.169.254/latest/meta-data/", policy=FULL_WEB, max_bytes=10_000
        )
    assert refused.value.kind == "blocked"


def test_flaky_page_is_retried_until_it_answers(web: FrozenWeb) -> None:
    clock = Clock()

    doc = adapter(web, clock).acquire(
        web.url("/_lab/flaky?key=adapter-ok&failures=2&status=503"),
        policy=FULL_WEB,
        max_bytes=10_000,
    )

    assert "flaky endpoint answered" in doc.text
    assert len(web.requests_to("/_lab/flaky")) == 3
    assert len(clock.sleeps) == 2


def test_page_that_keeps_failing_is_a_retryable_failure_after_three_attempts(
    web: FrozenWeb,
) -> None:
    with pytest.raises(AcquisitionError) as failure:
        adapter(web).acquire(
            web.url("/_lab/flaky?key=adapter-down&failures=9&status=502"),
            policy=FULL_WEB,
            max_bytes=10_000,
        )

    assert failure.value.kind == "failed"
    assert failure.value.retryable is True
    assert "gave up after 3 attempts" in str(failure.value)
    assert len(web.requests_to("/_lab/flaky")) == 3


def test_not_found_is_not_retried(web: FrozenWeb) -> None:
    with pytest.raises(AcquisitionError, match="not found"):
        adapter(web).acquire(
            web.url("/missing", host="harwick-transit.test"), policy=FULL_WEB, max_bytes=10_000
        )
    assert len(web.requests) == 1


def test_requests_to_one_domain_are_spaced(web: FrozenWeb) -> None:
    clock = Clock()
    polite = adapter(web, clock, domain_interval=1.5)
    first = web.url("/monitoring/2023-bloom-season", host="tessaly-water.test")
    second = web.url("/monitoring/phosphorus-trend", host="tessaly-water.test")

    polite.acquire(first, policy=FULL_WEB, max_bytes=10_000)
    polite.acquire(second, policy=FULL_WEB, max_bytes=10_000)

    assert clock.sleeps == [pytest.approx(1.5)]


def test_captcha_candidate_from_search_is_refused_when_read(web: FrozenWeb) -> None:
    source = adapter(web)
    candidates = source.discover("Harwick Line 3 quick facts", policy=FULL_WEB)
    gated = next(c for c in candidates if "quickfacts.test" in c.url)

    with pytest.raises(AcquisitionError, match="CAPTCHA") as refused:
        source.acquire(gated.url, policy=FULL_WEB, max_bytes=10_000)
    assert refused.value.kind == "unsupported"


class BrokenProvider:
    name = "broken"
    label = "Broken"
    supports_site = True

    def search(self, request: SearchRequest) -> list:
        raise RuntimeError("a bug in a provider")


def test_unexpected_provider_bug_becomes_an_acquisition_error(web: FrozenWeb) -> None:
    source = WebSourceAdapter(
        web.sources_config(search_providers=("searxng",)),
        providers=["broken"],
        search_providers={"broken": BrokenProvider()},
    )

    with pytest.raises(AcquisitionError, match="unexpectedly") as failure:
        source.discover("anything", policy=FULL_WEB)
    assert failure.value.kind == "failed"


@pytest.mark.parametrize(
    ("url", "drop"),
    [
        ("http://10.0.0.5/wiki", "private address not allowed"),
        ("http://127.0.0.1:8000/", "private address not allowed"),
        ("http://[::1]:8000/", "private address not allowed"),
        ("http://[fd00::1]:8443/x", "private address not allowed"),
        ("http://169.254.169.254/latest/meta-data/", "cloud metadata address"),
        ("http://metadata.google.internal/", "cloud metadata address"),
        ("http://intranet.local/", "local host name not allowed"),
        ("http://example.org:22/", "non-web port"),
        ("ftp://example.org/file", "not a web address"),
        ("http://user:secret@example.org/", "not a web address"),
        ("https://example.org/page", None),
    ],
)
def test_screen_names_why_a_result_would_not_be_fetched(
    web: FrozenWeb, url: str, drop: str | None
) -> None:
    assert adapter(web).screen(url, policy=FULL_WEB) == drop


def test_screen_keeps_what_the_allow_list_names_and_applies_the_policy(web: FrozenWeb) -> None:
    intranet = adapter(web, allowed_hosts=("10.0.0.5", "[fd00::1]:8443", "127.0.0.1:8765"))
    policy = SourcePolicy(mode="only_domains", domains=["10.0.0.5", "[fd00::1]:8443"])

    assert intranet.screen("http://10.0.0.5/wiki", policy=policy) is None
    assert intranet.screen("http://[fd00::1]:8443/x", policy=policy) is None
    assert intranet.screen("http://127.0.0.1:8765/", policy=policy) == (
        "outside the allowed domains"
    )
    assert intranet.screen("http://[fd00::1]:9000/x", policy=policy) == (
        "private address not allowed"
    )
    # Metadata addresses stay refused even for an allow-listed host.
    metadata = adapter(web, allowed_hosts=("169.254.169.254",))
    assert metadata.screen("http://169.254.169.254/", policy=FULL_WEB) == "cloud metadata address"
