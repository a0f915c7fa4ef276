"""Markdown: ATX and Setext headings with offsets, code kept as code, HTML left as text."""

from __future__ import annotations

from research.sources.documents.markdown import parse_markdown
from research.sources.documents.structure import (
    CodeBlock,
    HeadingBlock,
    ListBlock,
    ParagraphBlock,
    TableBlock,
    build_snapshot,
)

GUIDE = """\
Deployment guide
================

The service runs behind *nginx* with **two** workers; see [the manual](https://example.org/m).

Configuration
-------------

### Environment ###

- `DATA_DIR` holds the database
- `PORT` defaults to 8000
  - below 1024 needs root

```sh
export DATA_DIR=/srv/data
make run
```

| setting | default |
|---------|---------|
| workers | 2       |

    indented code stays code

<div class="warning">Raw <b>HTML</b> is shown as written.</div>

---

Last line with a hard\\
break and an ![architecture diagram](arch.png).
"""


def test_atx_and_setext_headings_become_headings_with_offsets() -> None:
    document = parse_markdown(GUIDE)
    extracted = build_snapshot(document.blocks)

    assert [(h.level, h.text) for h in extracted.headings] == [
        (1, "Deployment guide"),
        (2, "Configuration"),
        (3, "Environment"),
    ]
    for heading in extracted.headings:
        assert extracted.text[heading.offset : heading.offset + len(heading.text)] == heading.text
    assert extracted.title == "Deployment guide"


def test_blocks_follow_the_rendered_document() -> None:
    blocks = parse_markdown(GUIDE).blocks

    assert blocks == [
        HeadingBlock("Deployment guide", 1),
        ParagraphBlock("The service runs behind nginx with two workers; see the manual."),
        HeadingBlock("Configuration", 2),
        HeadingBlock("Environment", 3),
        ListBlock(
            ("DATA_DIR holds the database", "PORT defaults to 8000", "below 1024 needs root")
        ),
        CodeBlock("export DATA_DIR=/srv/data\nmake run\n"),
        TableBlock((("setting", "default"), ("workers", "2"))),
        CodeBlock("indented code stays code\n"),
        ParagraphBlock('<div class="warning">Raw <b>HTML</b> is shown as written.</div>'),
        ParagraphBlock("Last line with a hard break and an architecture diagram."),
    ]


def test_code_keeps_its_line_breaks_in_the_snapshot() -> None:
    extracted = build_snapshot(parse_markdown(GUIDE).blocks)

    assert "\n\nexport DATA_DIR=/srv/data\nmake run\n\n" in extracted.text
    assert "<b>HTML</b>" in extracted.text


def test_front_matter_is_metadata_not_text() -> None:
    document = parse_markdown(
        '---\ntitle: "Field notes"\nauthor: Ana Lima\ndate: 2024-05-06\ntags:\n  - reef\n---\n'
        "# Day one\n\nCalm sea.\n"
    )

    assert (document.title, document.author, document.published_at) == (
        "Field notes",
        "Ana Lima",
        "2024-05-06",
    )
    assert document.blocks == [HeadingBlock("Day one", 1), ParagraphBlock("Calm sea.")]


def test_a_leading_thematic_break_is_not_front_matter() -> None:
    document = parse_markdown("---\nThis is prose, not YAML.\n\n---\n\nMore prose.\n")

    assert document.title == ""
    assert document.blocks == [
        ParagraphBlock("This is prose, not YAML."),
        ParagraphBlock("More prose."),
    ]


def test_windows_line_endings_read_like_unix_ones() -> None:
    assert (
        parse_markdown("Title\r\n=====\r\n\r\nBody\r\n").blocks
        == parse_markdown("Title\n=====\n\nBody\n").blocks
    )
