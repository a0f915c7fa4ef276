"""Publication dates come from what a page says about its own publication, or are unknown."""

from __future__ import annotations

from datetime import UTC, datetime

import lxml.html
import pytest

from research.sources.dates import publication_date

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def date_of(html: str, main_text: list[str] | None = None) -> tuple[str | None, str | None]:
    return publication_date(lxml.html.fromstring(html), main_text or [], now=NOW)


def test_open_graph_publication_time_is_taken_as_the_date():
    html = '<html><head><meta property="article:published_time" content="2024-02-06T07:30:00+00:00"></head><body></body></html>'
    assert date_of(html) == ("2024-02-06", "meta")


def test_json_ld_date_of_the_article_wins_over_its_comments():
    html = """<html><head><script type="application/ld+json">
    [{"@type": "Comment", "datePublished": "2024-05-01"},
     {"@context": "https://schema.org", "@graph": [
        {"@type": "NewsArticle", "datePublished": "2023-11-02T10:00:00Z",
         "dateModified": "2024-01-09"}]}]
    </script></head><body></body></html>"""
    assert date_of(html) == ("2023-11-02", "json_ld")


def test_modification_date_is_used_when_no_publication_date_is_given():
    html = '<html><head><meta property="article:modified_time" content="2024-03-05"></head></html>'
    assert date_of(html) == ("2024-03-05", "meta")


def test_time_element_in_a_byline_is_the_date():
    html = (
        '<html><body><article><div class="byline">By Ana <time datetime="2022-09-15">15 Sept'
        "</time></div><p>Text.</p><p>Another <time datetime='2001-01-01'>date</time>.</p>"
        "</article></body></html>"
    )
    assert date_of(html) == ("2022-09-15", "time")


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("Published 2 November 2023", "2023-11-02"),
        ("Posted on March 18, 2024 by the editors", "2024-03-18"),
        ("By Marta Oyelaran, 6 February 2024", "2024-02-06"),
        ("First published: 2024/03/02", "2024-03-02"),
    ],
)
def test_a_dated_byline_at_the_top_of_the_text_is_the_date(line, expected):
    assert date_of("<html><body></body></html>", ["Title", line, "Text."]) == (expected, "byline")


@pytest.mark.parametrize(
    "main_text",
    [
        # Copyright years and generator stamps date the build, not the text.
        ["Title", "© Copyright 2010, Pallets. Published 1 March 2011"],
        ["Title", "A first paragraph of running text. " * 6, "Last updated 2024-05-31", "x"],
        ["Git commit", "Short text.", "Last updated 2024-05-31 00:35:55 UTC"],
        # A date the text talks about is not its publication date.
        ["What's New In Python 3.11", "PEP 8 was last changed on 2012-05-08 by its authors."],
        # The future has not been published yet; neither had anything before the web.
        ["Title", "Published 3 March 2031"],
        ["Title", "Published 3 March 1875"],
    ],
)
def test_dates_that_do_not_date_the_text_are_refused(main_text):
    assert date_of("<html><body></body></html>", main_text) == (None, None)


def test_server_last_modified_copies_are_refused():
    html = (
        '<html><head><meta http-equiv="last-modified" content="2023-01-01">'
        '<meta http-equiv="date" content="2023-01-01"></head><body></body></html>'
    )
    assert date_of(html) == (None, None)


def test_footer_stamp_of_a_documentation_page_leaves_the_date_unknown():
    html = (
        "<html><body><h1>Write-Ahead Logging</h1><p>Text.</p>"
        '<p align="center"><small><i>This page last modified on 2018-11-26 12:01:01 UTC'
        "</i></small></p></body></html>"
    )
    assert date_of(html, ["Write-Ahead Logging", "Text."]) == (None, None)
