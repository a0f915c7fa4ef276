"""HTML (and XHTML) to snapshot text, block map and metadata.

The text is the page's own, laid out in blocks the way a browser shows it
(:mod:`research.sources.blocks`); trafilatura decides which of those blocks are the main
content, so navigation and boilerplate stay out. Generator permalink marks ("¶") are removed
first, so they reach neither the text nor the title. Title, author and site name come from
trafilatura's metadata readers; the publication date from :mod:`research.sources.dates`,
which reads only what the page says about its own publication.
"""

from __future__ import annotations

import logging
from datetime import datetime

import trafilatura
from lxml import etree
from trafilatura.metadata import (  # type: ignore[attr-defined]
    examine_meta,
    extract_author,
    extract_meta_json,
    extract_sitename,
    extract_title,
)

from research.sources.blocks import PageBlock, main_blocks, page_blocks, remove_permalink_marks
from research.sources.challenges import detect_gate
from research.sources.dates import publication_date
from research.sources.snapshot import ExtractedText, SnapshotBuilder, normalize_inline

logger = logging.getLogger(__name__)

# How much of the raw document the gate detector looks at: challenge pages are
# small, and scanning megabytes of a real article for markers would be waste.
_GATE_SCAN_CHARS = 60_000


def extract_html(
    content: bytes, *, url: str, charset: str | None = None, now: datetime | None = None
) -> ExtractedText:
    """Extract the main text, its block map and the metadata of an HTML page.

    ``charset`` is the one declared in the Content-Type header; without it trafilatura
    guesses from the bytes and any ``<meta charset>``. ``now`` is the moment of retrieval
    (no publication date can be later).
    """
    document = _decode(content, charset)
    tree = trafilatura.load_html(document)
    if tree is None:
        return ExtractedText(text="")
    # Read these before anything changes the tree.
    language = _language(tree)
    canonical = _canonical_link(tree)
    raw_title = normalize_inline(tree.findtext(".//title") or "")
    remove_permalink_marks(tree)
    blocks = page_blocks(tree)
    # trafilatura works on its own copy of the tree.
    result = trafilatura.bare_extraction(
        tree,
        url=url,
        with_metadata=False,
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        include_formatting=False,
        deduplicate=False,
    )
    if result is not None and result.body is not None and len(result.body):
        kept = main_blocks(blocks, "".join(result.body.itertext()))
    else:
        # Very short pages defeat the main-content heuristics; the baseline extractor still
        # finds their text, and failing that the page is short enough to keep whole, less
        # what is never content (navigation, site header and footer, forms).
        _body, baseline_text, _length = trafilatura.baseline(tree)
        kept = main_blocks(blocks, baseline_text) or [block for block in blocks if block.key]
    builder = _build(kept)
    title, author, publisher = _metadata(tree)
    published, date_source = publication_date(tree, [b.text for b in kept], now=now)
    extracted = ExtractedText(
        text=builder.text,
        headings=builder.headings,
        blocks=builder.blocks,
        title=normalize_inline(title or raw_title),
        author=_clean(author),
        publisher=_clean(publisher),
        published_at=published,
        date_source=date_source,
        language=language,
        canonical_link=canonical,
    )
    raw_head = (
        document[:_GATE_SCAN_CHARS]
        if isinstance(document, str)
        else document[:_GATE_SCAN_CHARS].decode("utf-8", "ignore")
    )
    extracted.gate = detect_gate(
        title=raw_title or extracted.title, main_text=extracted.text, raw_html=raw_head
    )
    return extracted


def _build(blocks: list[PageBlock]) -> SnapshotBuilder:
    builder = SnapshotBuilder()
    for block in blocks:
        where = {"separator": block.separator, "after_gap": block.after_gap}
        if block.kind == "heading":
            builder.heading(block.text, block.level, **where)
        elif block.kind == "code":
            builder.code(block.text, **where)
        else:
            builder.paragraph(block.text, kind=block.kind, **where)
    return builder


def _metadata(tree: etree._Element) -> tuple[str | None, str | None, str | None]:
    """Title, author and site name by trafilatura's readers (meta tags, JSON-LD, the single
    ``h1``, bylines), without its date search: the date is ours to read."""
    metadata = examine_meta(tree)
    if metadata.author and " " not in metadata.author:
        metadata.author = None  # a bare handle, as trafilatura's own metadata rules say
    try:
        metadata = extract_meta_json(tree, metadata)
    except Exception:  # noqa: BLE001 - malformed JSON-LD must not cost the page its text
        logger.debug("JSON-LD metadata could not be read", exc_info=True)
    title = metadata.title or extract_title(tree)
    author = metadata.author or extract_author(tree)
    sitename = metadata.sitename or extract_sitename(tree)
    if sitename:
        sitename = sitename.lstrip("@")
    return title, author, sitename


def _decode(content: bytes, charset: str | None) -> str | bytes:
    if charset:
        try:
            text = content.decode(charset, errors="replace")
        except LookupError:
            return content
        # lxml refuses str input that still carries an XML encoding declaration.
        if text.lstrip().startswith("<?xml"):
            text = text.split("?>", 1)[-1]
        return text
    return content


def _language(tree: etree._Element) -> str | None:
    value = tree.get("lang") or tree.get("{http://www.w3.org/XML/1998/namespace}lang")
    if not value:
        meta = tree.xpath(
            './/meta[@http-equiv="content-language" or @http-equiv="Content-Language"]/@content'
        )
        value = meta[0] if meta else None
    value = (value or "").strip().lower().replace("_", "-")
    return value[:35] or None


def _canonical_link(tree: etree._Element) -> str | None:
    for link in tree.iter("link"):
        rel = (link.get("rel") or "").lower().split()
        href = (link.get("href") or "").strip()
        if "canonical" in rel and href:
            return href
    return None


def _clean(value: str | None) -> str | None:
    value = normalize_inline(value or "")
    return value or None
