"""The snapshot keeps the page's block structure: what a reader sees is what is stored."""

from __future__ import annotations

import lxml.html
import pytest

from research.sources.blocks import PageBlock, main_blocks, page_blocks, remove_permalink_marks
from research.sources.extract_html import extract_html


def blocks_of(html: str) -> list[PageBlock]:
    root = lxml.html.fromstring(html)
    remove_permalink_marks(root)
    return page_blocks(root)


def texts(html: str) -> list[tuple[str, str]]:
    return [(block.kind, block.text) for block in blocks_of(html)]


def test_paragraphs_inside_a_list_item_are_two_blocks_not_one_glued_sentence():
    html = (
        "<ul><li><p>The GIL is always released when doing I/O.</p>"
        "<p>Past efforts to remove it failed.</p></li></ul>"
    )
    assert texts(html) == [
        ("item", "The GIL is always released when doing I/O."),
        ("item", "Past efforts to remove it failed."),
    ]


def test_line_breaks_terms_descriptions_and_cells_separate_blocks():
    html = (
        "<body><p>first line<br>second line</p>"
        "<dl><dt>Note</dt><dd>If return_exceptions is true, errors are results.</dd></dl>"
        "<table><tr><td>a</td><td>b</td></tr><tr><td>c</td><td>d</td></tr></table></body>"
    )
    blocks = blocks_of(html)
    assert [(b.kind, b.text, b.separator) for b in blocks] == [
        ("paragraph", "first line", "\n\n"),
        ("paragraph", "second line", "\n"),
        ("term", "Note", "\n\n"),
        ("description", "If return_exceptions is true, errors are results.", "\n"),
        ("cell", "a", "\n\n"),
        ("cell", "b", "\t"),
        ("cell", "c", "\n"),
        ("cell", "d", "\t"),
    ]


def test_inline_elements_join_with_the_spacing_the_page_has():
    html = "<p>Call <code>gather()</code>, then <em>await</em>it<a href='#x'>now</a> .</p>"
    assert texts(html) == [("paragraph", "Call gather(), then awaititnow .")]


def test_code_block_keeps_its_lines_and_indentation():
    html = (
        '<div class="highlight"><pre>\n<span class="k">def</span> f():\n'
        '    <span class="k">return</span> 1\n\n</pre></div><p>After the code.</p>'
    )
    assert texts(html) == [
        ("code", "def f():\n    return 1"),
        ("paragraph", "After the code."),
    ]


def test_hidden_elements_give_no_text():
    html = (
        "<body><script>var x = 1;</script><style>p {}</style><template><p>t</p></template>"
        "<p hidden>hidden</p><p style='display: none'>none</p><p>shown</p></body>"
    )
    assert texts(html) == [("paragraph", "shown")]


def test_permalink_marks_are_removed_but_footnote_marks_stay():
    html = (
        '<section id="coroutines"><h1>Coroutines and Tasks<a class="headerlink" '
        'href="#coroutines">¶</a></h1>'
        '<h2><span><a class="mark" href="#fs_access" id="fs_access">#</a></span>fs.access</h2>'
        '<p>A value<a href="#fn1">†</a> with a note.</p></section>'
    )
    assert texts(html) == [
        ("heading", "Coroutines and Tasks"),
        ("heading", "fs.access"),
        ("paragraph", "A value† with a note."),
    ]


def test_a_breadcrumb_copy_of_the_title_gives_way_to_the_heading():
    navigation = PageBlock("item", "API", key="API")
    heading = PageBlock("heading", "API", level=1, key="API")
    body = PageBlock("paragraph", "Everything Flask offers.", key="EverythingFlaskoffers.")
    kept = main_blocks([navigation, heading, body], "API Everything Flask offers.")
    assert [(b.kind, b.text) for b in kept] == [
        ("heading", "API"),
        ("paragraph", "Everything Flask offers."),
    ]


def test_blocks_left_out_between_kept_blocks_mark_a_gap():
    blocks = [
        PageBlock("item", "one", separation=1, key="one"),
        PageBlock("item", "menu", separation=1, key="menu"),
        PageBlock("item", "two", separation=1, key="two"),
        PageBlock("item", "three", separation=1, key="three"),
    ]
    kept = main_blocks(blocks, "one two three")
    assert [(b.text, b.after_gap, b.separator) for b in kept] == [
        ("one", False, "\n"),
        ("two", True, "\n\n"),
        ("three", False, "\n"),
    ]


def test_a_table_of_contents_that_repeats_the_questions_is_not_taken_for_the_article():
    # An FAQ lists its long questions at the top; the extraction holds each question once,
    # followed by its answer. Matching block by block from the top would place the list
    # entries on the questions and skip every answer in between.
    questions = [
        f"Question {n}: how does the library behave when the {n}th limit is reached here?"
        for n in range(1, 4)
    ]
    answers = [
        f"Answer {n}: it refuses the request with a clear error and keeps the earlier work."
        for n in range(1, 4)
    ]

    def block(kind, text):
        return PageBlock(kind, text, key="".join(text.split()))

    contents = [block("item", question) for question in questions]
    article = [
        block(k, t)
        for q, a in zip(questions, answers, strict=True)
        for k, t in (("heading", q), ("paragraph", a))
    ]
    extracted = " ".join(f"{q} {a}" for q, a in zip(questions, answers, strict=True))
    kept = main_blocks(contents + article, extracted)
    assert [(b.kind, b.text) for b in kept] == [(b.kind, b.text) for b in article]


PAGE = """<!doctype html><html lang="en"><head><title>Tasks — Docs</title></head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/tasks">Tasks</a></li></ul></nav>
<div role="main"><section id="tasks"><h1>Tasks<a class="headerlink" href="#tasks">¶</a></h1>
<p>A task wraps a coroutine and schedules it on the event loop as soon as possible. Tasks are
used to run coroutines concurrently, and the loop runs one task at a time.</p>
<dl><dt>Note</dt><dd>If the wait is cancelled, the future is cancelled too. Errors are
propagated.</dd></dl>
<p>Three samples follow, each one a complete program that can be run as it stands.</p>
<pre>import asyncio

async def main():
    print("hello")</pre>
<p>The second sample waits for two tasks before it prints what they returned.</p>
<pre>task = asyncio.create_task(main())
await task</pre>
<p>The third sample shows the representation of a finished task in the console.</p>
<pre>&gt;&gt;&gt; task
&lt;Task finished coro=&lt;main() done&gt; result=None&gt;</pre>
<p>Each sample runs on Python 3.11 and later versions of the interpreter as well.</p>
</section></div><footer><p>&copy; Copyright 2010. Last updated on Jan 01, 2023.</p></footer>
</body></html>"""


def test_extracted_page_has_blocks_code_and_a_clean_title():
    extracted = extract_html(PAGE.encode(), url="https://docs.example.org/tasks")

    assert extracted.title == "Tasks"
    assert [h.text for h in extracted.headings] == ["Tasks"]
    assert "¶" not in extracted.text
    text = extracted.text
    code = [text[b.start : b.end] for b in extracted.blocks if b.kind == "code"]
    assert code == [
        'import asyncio\n\nasync def main():\n    print("hello")',
        "task = asyncio.create_task(main())\nawait task",
        ">>> task\n<Task finished coro=<main() done> result=None>",
    ]
    assert "Note\nIf the wait is cancelled" in text
    assert "propagated.If" not in text and "NoteIf" not in text
    # Every block is exactly the text at its offsets; separators are white space only.
    for block, following in zip(extracted.blocks, extracted.blocks[1:], strict=False):
        assert text[block.end : following.start].strip() == ""
    # Navigation and the footer are not main content, so the copyright year dates nothing.
    assert "Home" not in text and "Copyright" not in text
    assert extracted.published_at is None and extracted.date_source is None


@pytest.mark.parametrize(
    ("html", "expected"),
    [
        ("<p>if a&lt;b and c&gt;d then</p>", "if a<b and c>d then"),
        ("<p>&amp;amp; stays &amp;amp;</p>", "&amp; stays &amp;"),
        ("<p>Traceback in &lt;module&gt;</p>", "Traceback in <module>"),
    ],
)
def test_tag_like_text_is_kept_as_text(html, expected):
    assert texts(f"<body>{html}</body>") == [("paragraph", expected)]


def test_details_summary_and_content_are_folded_blocks_but_hidden_parts_stay_out():
    html = (
        "<body><p>before</p><details><summary>History</summary>"
        "<table><tr><th>Version</th><th>Changes</th></tr>"
        "<tr><td>v2.0</td><td>No longer behind a flag.</td></tr></table>"
        "<p hidden>secret</p><div style='display:none'>none</div>"
        "<template><p>t</p></template><script>x()</script></details><p>after</p></body>"
    )
    blocks = blocks_of(html)
    assert [(b.text, b.folded, b.separator) for b in blocks] == [
        ("before", False, "\n\n"),
        ("History", True, "\n\n"),
        ("Version", True, "\n\n"),
        ("Changes", True, "\t"),
        ("v2.0", True, "\n"),
        ("No longer behind a flag.", True, "\t"),
        ("after", False, "\n\n"),
    ]


def test_folded_blocks_the_extraction_lacks_come_back_only_inside_the_main_content():
    blocks = [
        PageBlock("paragraph", "intro", key="intro"),
        PageBlock("paragraph", "History", key="History", folded=True),
        PageBlock("cell", "v2.0", separation=1, key="v2.0", folded=True),
        PageBlock("cell", "changed", separation=0, key="changed", folded=True),
        PageBlock("paragraph", "body", key="body"),
        PageBlock("item", "menu", key="menu"),
        PageBlock("paragraph", "Sidebar", key="Sidebar", folded=True),
        PageBlock("paragraph", "end", key="end"),
    ]
    kept = main_blocks(blocks, "intro body end")
    assert [(b.text, b.after_gap, b.separator) for b in kept] == [
        ("intro", False, "\n\n"),
        ("History", False, "\n\n"),
        ("v2.0", False, "\n"),
        ("changed", False, "\t"),
        ("body", False, "\n\n"),
        # The menu entry next to the folded block was left out, so both stay out.
        ("end", True, "\n\n"),
    ]


API_PAGE = """<!DOCTYPE html><html lang="en"><head><title>Globals | Runtime docs</title></head>
<body><nav><details><summary>Other versions</summary><ul><li><a href="/v1">v1</a></li>
<li><a href="/v2">v2</a></li></ul></details><a href="/">Home</a></nav>
<main><article><h1>Global objects</h1>
<p>These objects are available in all modules of the runtime, without being imported.</p>
<section><h3><code>fetch</code></h3>
<div class="api_metadata"><details class="changelog"><summary>History</summary>
<table><tr><th>Version</th><th>Changes</th></tr>
<tr><td>v18.0.0</td><td><p>No longer behind <code>--experimental-fetch</code> CLI flag.</p></td></tr>
<tr><td>v17.5.0</td><td><p><span>Added in: v17.5.0</span></p></td></tr>
</table><template><p>Template text</p></template><p hidden>Hidden text</p></details></div>
<blockquote><p>Stability: 1 - Experimental. Disable this API with the command-line flag
that turns experimental features off, when the runtime starts.</p></blockquote>
<p>A browser-compatible implementation of the fetch() function, available to every module
of the program without an import statement, as browsers offer it to their pages.</p>
</section>
<section><h3><code>queueMicrotask(callback)</code></h3>
<p>The queueMicrotask() method queues a microtask to invoke the callback, which runs after
the current task and before control returns to the event loop of the runtime.</p>
</section></article></main><footer>Copyright 2026 Example Foundation</footer></body></html>
"""


def test_details_text_stays_in_its_place_with_table_rows_as_rows():
    extracted = extract_html(API_PAGE.encode(), url="https://docs.example.org/api/globals.html")
    text = extracted.text
    assert (
        "fetch\n\nHistory\n\nVersion\tChanges\n"
        "v18.0.0\tNo longer behind --experimental-fetch CLI flag.\n"
        "v17.5.0\tAdded in: v17.5.0\n\nStability: 1 - Experimental."
    ) in text
    # Hidden content inside details stays hidden; the site menu's details stays out.
    assert "Template text" not in text and "Hidden text" not in text
    assert "Other versions" not in text and "Copyright" not in text
