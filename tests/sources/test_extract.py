"""Extraction on the frozen web: metadata, headings, PDF pages, bounds, gates, identity."""

from __future__ import annotations

import hashlib

import pytest

from research.engine.contracts import SourceDocument
from research.engine.urls import normalize_url, url_hash
from research.sources.challenges import detect_gate
from research.sources.errors import SourceError
from research.sources.extract import extract_document
from research.sources.safe_fetch import SafeFetcher
from research.sources.snapshot import bound_snapshot
from tests.fixtures.frozen_web.server import FrozenWeb

BUDGET = 200_000


def read(
    web: FrozenWeb, path: str, host: str, *, max_bytes: int = BUDGET, **config: object
) -> SourceDocument:
    fetcher = SafeFetcher(web.sources_config(**config))
    return extract_document(fetcher.fetch(web.url(path, host=host)), max_bytes=max_bytes)


def test_article_metadata_is_extracted(web: FrozenWeb) -> None:
    doc = read(web, "/news/2024/02/line-3-extension-ridership", "harwick-courier.test")

    assert doc.kind == "html"
    assert doc.mime_type == "text/html"
    assert doc.title == "Line 3 extension draws 48,200 weekday trips, short of forecast"
    assert doc.author == "Marta Oyelaran"
    assert doc.publisher == "The Harwick Courier"
    assert doc.published_at == "2024-02-06"
    assert doc.language == "en-gb"
    assert doc.truncated is False
    assert doc.content_bytes == len(doc.text.encode("utf-8"))
    assert doc.canonical_url_hash == url_hash(doc.canonical_url)


def test_main_text_drops_navigation_and_keeps_the_article(web: FrozenWeb) -> None:
    doc = read(web, "/news/2024/02/line-3-extension-ridership", "harwick-courier.test")

    assert "average of 48,200 boardings each weekday" in doc.text
    assert "Subscribe from $1 a week" not in doc.text
    assert "We use cookies" not in doc.text
    assert "Rovers sign new goalkeeper" not in doc.text


def test_headings_carry_offsets_into_the_snapshot(web: FrozenWeb) -> None:
    doc = read(web, "/projects/line-3-extension", "harwick-transit.test")

    assert [(h.level, h.text) for h in doc.headings] == [
        (1, "Line 3 extension: Eastgate to Corran Fields"),
        (2, "Route and stations"),
        (2, "Timeline"),
        (2, "Cost"),
        (2, "Ridership"),
        (2, "Targets and the original forecast"),
    ]
    for heading in doc.headings:
        assert doc.text[heading.offset : heading.offset + len(heading.text)] == heading.text
    # The nearest heading before a figure names its section.
    figure = doc.text.index("48,200 boardings per weekday")
    nearest = max((h for h in doc.headings if h.offset <= figure), key=lambda h: h.offset)
    assert nearest.text == "Ridership"


def test_lists_and_tables_keep_one_item_per_line(web: FrozenWeb) -> None:
    doc = read(web, "/projects/line-3-extension", "harwick-transit.test")

    # One item per line, as the page shows it: no bullet the page does not print, and the
    # block map says it is a list item.
    item = "Supply-chain disruption in 2020 and 2021"
    assert f"\n{item}" in doc.text
    assert "- Supply-chain" not in doc.text
    start = doc.text.index(item)
    block = next(b for b in doc.blocks if b.start == start)
    assert block.kind == "item"
    assert doc.text[block.end] == "\n" and doc.text[block.end + 1] != "\n"


def test_pdf_text_is_page_aware(web: FrozenWeb) -> None:
    doc = read(web, "/reports/annual-report-2023.pdf", "harwick-transit.test")

    assert doc.kind == "pdf"
    assert doc.mime_type == "application/pdf"
    assert doc.title == "HRTA Annual Report 2023"
    assert doc.author == "Harwick Regional Transit Authority"
    assert doc.published_at == "2024-03-28"
    assert [p.page for p in doc.pages] == [1, 2, 3]
    assert doc.pages[0].start == 0
    assert doc.pages[-1].end == len(doc.text)
    assert all(a.end <= b.start for a, b in zip(doc.pages, doc.pages[1:], strict=False))

    def page_of(phrase: str) -> int:
        offset = doc.text.index(phrase)
        return next(p.page for p in doc.pages if p.start <= offset < p.end)

    assert page_of("212.4 million boardings") == 1
    assert page_of("All five new stations | 48,200") == 2
    assert page_of("no passenger fatalities") == 3


def test_pdf_outline_becomes_headings(web: FrozenWeb) -> None:
    doc = read(web, "/reports/annual-report-2023.pdf", "harwick-transit.test")

    assert [h.text for h in doc.headings] == [
        "1. The year in brief",
        "2. Finances",
        "3. Ridership on the Line 3 extension",
        "4. Safety and accessibility",
        "5. Outlook for 2024",
    ]
    for heading in doc.headings:
        assert doc.text[heading.offset : heading.offset + len(heading.text)] == heading.text


def test_snapshot_is_bounded_to_the_byte_budget(web: FrozenWeb) -> None:
    doc = read(
        web, "/news/2024/02/line-3-extension-ridership", "harwick-courier.test", max_bytes=1000
    )

    assert doc.truncated is True
    assert doc.content_bytes <= 1000
    assert doc.content_bytes == len(doc.text.encode("utf-8"))
    assert all(h.offset + len(h.text) <= len(doc.text) for h in doc.headings)
    full = read(web, "/news/2024/02/line-3-extension-ridership", "harwick-courier.test")
    assert full.text.startswith(doc.text)
    assert doc.content_hash != full.content_hash


def test_pdf_page_spans_are_clipped_by_the_budget(web: FrozenWeb) -> None:
    doc = read(web, "/reports/annual-report-2023.pdf", "harwick-transit.test", max_bytes=1500)

    assert doc.truncated is True
    assert [p.page for p in doc.pages] == [1, 2]
    assert doc.pages[-1].end == len(doc.text)


def test_budget_cut_never_splits_a_character() -> None:
    snapshot = bound_snapshot("é" * 10, [], [], 5)

    assert snapshot.text == "éé"
    assert snapshot.content_bytes == 4
    assert snapshot.truncated is True


def test_content_hash_is_sha256_of_the_normalised_text(web: FrozenWeb) -> None:
    doc = read(web, "/data/heat-pump-statistics.txt", "energy-agency.test")

    assert doc.content_hash == hashlib.sha256(" ".join(doc.text.split()).encode()).hexdigest()


def test_captcha_page_is_refused_as_unsupported(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="CAPTCHA") as refused:
        read(web, "/harwick-line-3", "quickfacts.test")
    assert refused.value.kind == "unsupported"


def test_paywall_stub_is_refused(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="paywall") as refused:
        read(web, "/premium/fare-policy-analysis", "harwick-courier.test")
    assert refused.value.kind == "blocked"


def test_a_long_article_about_captchas_is_not_a_gate() -> None:
    text = "CAPTCHA research: why verify you are human checks fail. " * 40
    html = '<script src="https://www.google.com/recaptcha/api.js"></script>'

    assert detect_gate(title="Why CAPTCHAs fail", main_text=text, raw_html=html) is None


def test_mirrors_share_a_content_hash_but_keep_their_own_identity(web: FrozenWeb) -> None:
    original = read(web, "/news/2024/02/line-3-extension-ridership", "harwick-courier.test")
    printed = read(web, "/print/line-3-extension-ridership", "harwick-courier.test")
    mirror = read(web, "/stories/harwick-line-3-ridership", "metro-digest.test")

    assert original.content_hash == printed.content_hash == mirror.content_hash
    # The print edition's canonical link is on its own site: same identity as the original.
    assert printed.canonical_url == original.canonical_url
    assert printed.canonical_url_hash == original.canonical_url_hash
    # The mirror's canonical link points to another site: recorded, not trusted.
    assert mirror.canonical_url == normalize_url(mirror.final_url)
    assert mirror.declared_canonical_url == original.canonical_url
    assert mirror.publisher == "Metro Digest"


def test_tracking_parameters_are_dropped_from_the_canonical_url(web: FrozenWeb) -> None:
    fetcher = SafeFetcher(web.sources_config())
    url = web.url(
        "/news/2024/02/line-3-extension-ridership?utm_source=frozen&utm_medium=search&fbclid=abc",
        host="harwick-courier.test",
    )

    doc = extract_document(fetcher.fetch(url), max_bytes=BUDGET)

    assert doc.requested_url == url
    assert doc.canonical_url == web.url(
        "/news/2024/02/line-3-extension-ridership", host="harwick-courier.test"
    )


def test_relative_canonical_link_is_resolved_against_the_page(web: FrozenWeb) -> None:
    doc = read(web, "/news/line-3-opening", "harwick-transit.test")  # redirects first

    assert doc.final_url == web.url("/projects/line-3-extension", host="harwick-transit.test")
    assert doc.canonical_url == doc.final_url


def test_prompt_injection_is_stored_as_plain_source_text(web: FrozenWeb) -> None:
    doc = read(web, "/threads/bloom-2023", "lakeside-forum.test")

    assert "Ignore all previous instructions" in doc.text
    assert "169.254.169.254" in doc.text
    # Reading the page fetched exactly that page and nothing it asked for.
    assert [(r.host, r.path) for r in web.requests] == [
        ("lakeside-forum.test", "/threads/bloom-2023")
    ]


def test_plain_text_keeps_its_lines(web: FrozenWeb) -> None:
    doc = read(web, "/data/heat-pump-statistics.txt", "energy-agency.test")

    assert doc.kind == "text"
    assert doc.title == "SOLVIK ENERGY AGENCY - STATISTICAL NOTE SN-2023-07"
    assert "\n2021 11,800\n" in doc.text


def test_nested_abstract_keeps_its_heading(web: FrozenWeb) -> None:
    doc = read(web, "/abs/2403.01234", "arxiv.test")

    assert "Abstract" in [h.text for h in doc.headings]
    assert "\n\nFrost on the outdoor coil" in doc.text
    assert doc.author == "Rosa Castellan; Magnus Ivers"


def test_very_short_page_still_yields_its_text(web: FrozenWeb) -> None:
    doc = read(web, "/_lab/chain/0", "127.0.0.1")

    assert "You reached the end of the redirect chain." in doc.text


def test_page_without_readable_text_is_unsupported(web: FrozenWeb) -> None:
    # The gzip bomb expands to nothing but spaces.
    with pytest.raises(SourceError, match="no readable text") as refused:
        read(web, "/_lab/gzip-bomb", "127.0.0.1", max_page_bytes=64 * 1024)
    assert refused.value.kind == "unsupported"


def test_pdf_over_the_download_limit_is_unsupported(web: FrozenWeb) -> None:
    with pytest.raises(SourceError, match="PDF") as refused:
        read(web, "/reports/annual-report-2023.pdf", "harwick-transit.test", max_pdf_bytes=2048)
    assert refused.value.kind == "unsupported"


def test_damaged_pdf_is_unsupported() -> None:
    from research.sources.extract_pdf import extract_pdf

    with pytest.raises(SourceError) as refused:
        extract_pdf(
            b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\ntrailer\n<<>>\n%%EOF",
            url="x",
            max_chars=1000,
        )
    assert refused.value.kind == "unsupported"
