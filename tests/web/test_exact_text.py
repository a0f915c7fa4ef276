"""Source text is shown exactly as stored, escaped, never stripped, in every view.

The stored strings are read back from each rendered page (lxml's text of the element), so the
test checks what a reader gets, not only that some markup is missing.
"""

from __future__ import annotations

import io
import re

import lxml.html
import pytest
from django.urls import reverse

from research.models import ResearchRun
from research.web import exports
from research.web.workspace import live_fragments
from tests.web.factories import completed_run, make_evidence, report_data

TAG_LIKE = "if a<b and c>d"
TASK = "<Task finished coro=<bug() done, defined at t.py:3> result=None>"
MODULE = 'File "t.py", line 1, in <module>'
ENTITY = "Tom &amp; Jerry"
SCRIPT = "<script>document.title='pwned'</script>"
PROSE = f"{TAG_LIKE} is true.\n{TASK}\n{ENTITY}\t{SCRIPT}"
CODE = f">>> task\n{TASK}\n  {MODULE}"
TITLE = f"Coroutines: {MODULE} & {SCRIPT}"


@pytest.fixture
def run(owner) -> ResearchRun:
    run = completed_run(owner, sources=1, visibility=ResearchRun.Visibility.LINK)
    run.share_token = "s" * 32
    source = run.sources.get()
    source.title, source.publisher = TITLE, f"{ENTITY} {TAG_LIKE}"
    source.save()
    prose = run.evidence.get()
    prose.excerpt = PROSE
    prose.save()
    code = make_evidence(run, source, excerpt=CODE)
    code.locator = {**code.locator, "code": True}
    code.save()
    run.report = report_data(
        [prose, code],
        title=f"Report on {TAG_LIKE}",
        executive_summary=[
            {
                "claim_id": "c1",
                "kind": "finding",
                "evidence_ids": [prose.pk, code.pk],
                "text": f"{TAG_LIKE} {TASK}",
            }
        ],
    )
    run.save()
    return run


def _texts(page: str, xpath: str) -> list[str]:
    return [element.text_content() for element in lxml.html.fromstring(page).xpath(xpath)]


def _assert_never_markup(page: str) -> None:
    assert "<script>document" not in page
    assert not re.search(r"<task|<module", page, re.IGNORECASE)


def test_report_shows_excerpts_titles_and_statements_exactly(owner, client_for, run):
    page = client_for(owner).get(reverse("research:run_report", args=[run.pk])).content.decode()
    _assert_never_markup(page)
    excerpts = _texts(page, '//blockquote[contains(@class, "excerpt")]')
    assert PROSE in excerpts and CODE in excerpts
    assert _texts(page, '//blockquote[contains(@class, "excerpt")]/pre[@class="code"]') == [CODE]
    assert TITLE in " ".join(_texts(page, '//*[contains(@class, "source-link")]'))
    assert f"{TAG_LIKE} {TASK}" in _texts(page, '//*[@class="statement-text"]')
    assert f"Report on {TAG_LIKE}" in _texts(page, "//h1")


@pytest.mark.parametrize("partial", [False, True])
def test_citation_panel_and_evidence_page_show_the_excerpt_exactly(
    owner, client_for, htmx_headers, run, partial
):
    headers = htmx_headers if partial else {}
    for item, expected in (
        (run.evidence.get(excerpt=PROSE), PROSE),
        (run.evidence.get(excerpt=CODE), CODE),
    ):
        url = reverse("research:evidence_detail", args=[run.pk, item.pk])
        page = client_for(owner).get(url, **headers).content.decode()
        _assert_never_markup(page)
        assert _texts(page, '//blockquote[@class="excerpt"]') == [expected]
        assert TITLE in _texts(page, "//dd")


def test_source_page_shows_every_excerpt_whole(owner, client_for, run):
    source = run.sources.get()
    url = reverse("research:source_detail", args=[run.pk, source.pk])
    page = client_for(owner).get(url).content.decode()
    _assert_never_markup(page)
    assert sorted(_texts(page, '//blockquote[contains(@class, "excerpt")]')) == sorted(
        [PROSE, CODE]
    )
    assert _texts(page, '//h2[@class="source-heading"]') == [TITLE]


def test_shared_views_show_the_same_text(client_for, run):
    anonymous = client_for(None)
    page = anonymous.get(reverse("research:run_shared", args=[run.share_token])).content.decode()
    _assert_never_markup(page)
    assert PROSE in _texts(page, '//blockquote[contains(@class, "excerpt")]')
    item = run.evidence.get(excerpt=CODE)
    url = reverse("research:shared_evidence", args=[run.share_token, item.pk])
    page = anonymous.get(url).content.decode()
    assert _texts(page, '//blockquote[@class="excerpt"]') == [CODE]


def test_markdown_export_keeps_the_text_and_the_code(owner, client_for, run):
    markdown = (
        client_for(owner).get(reverse("research:report_markdown", args=[run.pk])).content.decode()
    )
    # Markdown escapes special characters with a backslash; the text itself stays, with its
    # line breaks as hard breaks (a backslash at the end of the line) and its tab.
    prose = (
        "“if a\\<b and c\\>d is true.\\\n"
        "   \\<Task finished coro=\\<bug\\(\\) done, defined at t.py:3\\> result=None\\>\\\n"
        "   Tom \\&amp; Jerry\t\\<script\\>document.title='pwned'\\</script\\>”"
    )
    assert prose in markdown
    # The code excerpt is a fenced block inside its list item, not escaped and not joined.
    code = f"\n\n   ```\n   >>> task\n   {TASK}\n     {MODULE}\n   ```"
    assert code in markdown


def test_workspace_fragments_pushed_over_the_websocket_escape_the_title(owner, run):
    html = live_fragments(run, owner, {"sources", "timeline", "header"})
    _assert_never_markup(html)
    assert TITLE in " ".join(_texts(f"<div>{html}</div>", "//*"))


def test_admin_shows_the_stored_text(client, staff, run):
    client.force_login(staff)
    source = run.sources.get()
    page = client.get(
        reverse("admin:research_researchsource_change", args=[source.pk])
    ).content.decode()
    _assert_never_markup(page)
    assert TITLE in " ".join(_texts(page, "//div[contains(@class, 'readonly')]"))
    item = run.evidence.get(excerpt=CODE)
    page = client.get(
        reverse("admin:research_researchevidence_change", args=[item.pk])
    ).content.decode()
    _assert_never_markup(page)
    shown = " ".join(_texts(page, "//div[contains(@class, 'readonly')]"))
    assert TASK in shown and MODULE in shown


@pytest.mark.skipif(
    exports.pdf_unavailable_reason() is not None, reason="WeasyPrint cannot run on this host"
)
def test_pdf_export_prints_the_text(owner, client_for, run):
    from pypdf import PdfReader

    response = client_for(owner).get(reverse("research:report_pdf", args=[run.pk]))
    text = " ".join(
        page.extract_text() or "" for page in PdfReader(io.BytesIO(response.content)).pages
    )
    flat = " ".join(text.split())
    for expected in (TAG_LIKE, "<Task finished coro=<bug() done", "<module>", ENTITY, SCRIPT):
        assert expected in flat, expected
