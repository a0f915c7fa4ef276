"""SafeFetcher against the frozen web: redirects, limits, compression, MIME types, headers."""

from __future__ import annotations

import time

import pytest

from research.sources.errors import SourceError
from research.sources.responses import JSON_MEDIA_TYPES
from research.sources.safe_fetch import SafeFetcher
from tests.fixtures.frozen_web.server import FrozenWeb


@pytest.fixture
def fetcher(web: FrozenWeb) -> SafeFetcher:
    return SafeFetcher(web.sources_config())


def test_redirect_on_a_site_is_followed_to_the_final_page(
    web: FrozenWeb, fetcher: SafeFetcher
) -> None:
    response = fetcher.fetch(web.url("/news/line-3-opening", host="harwick-transit.test"))

    assert response.final_url == web.url("/projects/line-3-extension", host="harwick-transit.test")
    assert response.redirects == (response.final_url,)
    assert response.media_type == "text/html"
    assert b"Eastgate" in response.content


def test_cross_site_redirect_is_followed_and_rechecked(
    web: FrozenWeb, fetcher: SafeFetcher
) -> None:
    # Like a DOI resolver: one site redirects to the publisher's site.
    response = fetcher.fetch(web.url("/10.5555/nhj.2022.14.3.7", host="doi.test"))

    assert response.final_url == web.url(
        "/articles/field-performance-cold-climate", host="nordic-heat-journal.test"
    )
    assert [r.host for r in web.requests] == ["doi.test", "nordic-heat-journal.test"]


def test_redirect_guard_sees_every_hop_and_can_refuse_one(
    web: FrozenWeb, fetcher: SafeFetcher
) -> None:
    seen: list[str] = []

    def guard(url: str) -> None:
        seen.append(url)
        if url.endswith("/_lab/chain/1"):
            raise SourceError("blocked", "That hop is outside the source policy.")

    with pytest.raises(SourceError, match="redirected to .* outside the source policy"):
        fetcher.fetch(web.url("/_lab/chain/3"), redirect_guard=guard)
    assert [u.rsplit("/", 1)[-1] for u in seen] == ["3", "2", "1"]


def test_too_many_redirects_stop_with_a_clear_reason(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    with pytest.raises(SourceError, match="redirected more than 5 times") as failure:
        fetcher.fetch(web.url("/_lab/loop"))
    assert failure.value.kind == "failed"
    assert len(web.requests_to("/_lab/loop")) == 6


def test_five_redirects_are_still_followed(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    assert fetcher.fetch(web.url("/_lab/chain/5")).status_code == 200


def test_slow_server_times_out_with_a_retryable_reason(web: FrozenWeb) -> None:
    fetcher = SafeFetcher(web.sources_config(read_timeout=0.3))
    started = time.monotonic()

    with pytest.raises(SourceError, match="did not answer within the time limit") as failure:
        fetcher.fetch(web.url("/_lab/slow?seconds=2"))

    assert failure.value.kind == "failed"
    assert failure.value.retryable is True
    assert time.monotonic() - started < 1.5


def test_trickling_server_is_stopped_by_the_total_deadline(web: FrozenWeb) -> None:
    fetcher = SafeFetcher(web.sources_config(read_timeout=1.0, total_timeout=0.6))
    started = time.monotonic()

    with pytest.raises(SourceError, match="took longer than the 0.6-second limit"):
        fetcher.fetch(web.url("/_lab/trickle?seconds=3&interval=0.05"))

    assert time.monotonic() - started < 1.5


def test_huge_page_is_cut_at_the_byte_cap(web: FrozenWeb) -> None:
    fetcher = SafeFetcher(web.sources_config(max_page_bytes=256 * 1024))

    response = fetcher.fetch(web.url("/_lab/huge?mb=50"))

    assert response.truncated is True
    assert len(response.content) == 256 * 1024
    assert response.wire_bytes < 1024 * 1024  # stopped reading long before 50 MB


def test_gzip_bomb_stops_at_the_cap_after_decompression(web: FrozenWeb) -> None:
    fetcher = SafeFetcher(web.sources_config(max_page_bytes=512 * 1024))

    response = fetcher.fetch(web.url("/_lab/gzip-bomb"))

    assert response.truncated is True
    assert len(response.content) == 512 * 1024  # of 64 MB it would expand to
    assert response.wire_bytes < 128 * 1024


def test_gzip_and_deflate_pages_are_decoded(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    assert b"gzip compression" in fetcher.fetch(web.url("/_lab/gzip-page")).content
    assert b"Deflate works too" in fetcher.fetch(web.url("/_lab/deflate-page")).content


def test_unknown_content_encoding_is_unsupported(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    with pytest.raises(SourceError, match="'br'") as failure:
        fetcher.fetch(web.url("/_lab/brotli"))
    assert failure.value.kind == "unsupported"


@pytest.mark.parametrize(
    ("path", "clue"),
    [
        ("/_lab/photo.png", "image/png"),
        ("/_lab/mislabelled.html", "binary data"),
        ("/_lab/fake-pdf", "not one"),
        ("/_lab/json", "application/json"),
    ],
)
def test_wrong_mime_type_is_refused(
    path: str, clue: str, web: FrozenWeb, fetcher: SafeFetcher
) -> None:
    with pytest.raises(SourceError, match=clue) as failure:
        fetcher.fetch(web.url(path))
    assert failure.value.kind == "unsupported"


def test_untyped_responses_are_sniffed(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    assert fetcher.fetch(web.url("/_lab/untyped")).media_type == "text/html"
    assert fetcher.fetch(web.url("/_lab/octet-pdf")).media_type == "application/pdf"


def test_no_cookies_and_an_honest_user_agent(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    # The first hop sets a cookie and redirects to a page that echoes request headers.
    response = fetcher.fetch(web.url("/_lab/cookie"))

    headers = response.content.decode().lower()
    assert "cookie" not in headers
    assert "authorization" not in headers
    assert "user-agent: deepresearchbot/0.1" in headers


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (404, "failed", False),
        (410, "failed", False),
        (500, "failed", False),
        (502, "failed", True),
        (503, "failed", True),
        (504, "failed", True),
        (429, "failed", True),
        (401, "blocked", False),
        (403, "blocked", False),
        (451, "blocked", False),
    ],
)
def test_http_errors_are_classified(
    status: int, kind: str, retryable: bool, web: FrozenWeb, fetcher: SafeFetcher
) -> None:
    with pytest.raises(SourceError) as failure:
        fetcher.fetch(web.url(f"/_lab/status/{status}"))
    assert (failure.value.kind, failure.value.retryable, failure.value.status) == (
        kind,
        retryable,
        status,
    )
    assert f"HTTP {status}" in failure.value.reason


def test_retry_after_is_reported(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    with pytest.raises(SourceError) as failure:
        fetcher.fetch(web.url("/_lab/status/429?retry_after=7"))
    assert failure.value.retry_after == 7.0


def test_cloudflare_challenge_header_is_unsupported(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    with pytest.raises(SourceError, match="CAPTCHA") as failure:
        fetcher.fetch(web.url("/_lab/status/403?challenge=1"))
    assert failure.value.kind == "unsupported"


def test_tracking_parameters_reach_the_server_but_not_the_identity(
    web: FrozenWeb, fetcher: SafeFetcher
) -> None:
    url = web.url(
        "/news/2024/02/line-3-extension-ridership?utm_source=x&fbclid=y",
        host="harwick-courier.test",
    )

    response = fetcher.fetch(url)

    assert response.requested_url == url
    assert response.status_code == 200


def test_provider_style_request_with_params_and_json(web: FrozenWeb) -> None:
    fetcher = SafeFetcher(web.sources_config())

    response = fetcher.request(
        "GET",
        web.base_url + "/search",
        params={"q": "heat pump grants", "format": "json"},
        media_types=JSON_MEDIA_TYPES,
    )

    assert response.media_type == "application/json"
    assert b"energy-agency.test" in response.content


def test_post_is_never_redirected(web: FrozenWeb, fetcher: SafeFetcher) -> None:
    with pytest.raises(SourceError, match="does not follow"):
        fetcher.request(
            "POST", web.url("/_lab/redirect?to=/"), json={"a": 1}, media_types=JSON_MEDIA_TYPES
        )
