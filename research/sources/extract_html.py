"""HTML (and XHTML) to snapshot text plus metadata, with trafilatura.

trafilatura finds the main content and the metadata (title, author, site
name, publication date via htmldate). We walk the element tree it returns
instead of using its text output, so that every heading's offset in the
snapshot is known exactly.
"""

from __future__ import annotations

import trafilatura
from lxml import etree

from research.sources.challenges import detect_gate
from research.sources.snapshot import ExtractedText, SnapshotBuilder, normalize_inline

# How much of the raw document the gate detector looks at: challenge pages are
# small, and scanning megabytes of a real article for markers would be waste.
_GATE_SCAN_CHARS = 60_000
_BLOCK_TAGS = frozenset({"head", "p", "list", "table", "quote", "code"})


def extract_html(content: bytes, *, url: str, charset: str | None = None) -> ExtractedText:
    """Extract the main text and metadata of an HTML page.

    ``charset`` is the one declared in the Content-Type header; without it
    trafilatura guesses from the bytes and any ``<meta charset>``.
    """
    document = _decode(content, charset)
    tree = trafilatura.load_html(document)
    if tree is None:
        return ExtractedText(text="")
    # Read these before trafilatura cleans the tree.
    language = _language(tree)
    canonical = _canonical_link(tree)
    raw_title = normalize_inline(tree.findtext(".//title") or "")
    result = trafilatura.bare_extraction(
        tree,
        url=url,
        with_metadata=True,
        include_comments=False,
        include_tables=True,
        include_images=False,
        include_links=False,
        include_formatting=False,
        deduplicate=False,
    )
    builder = SnapshotBuilder()
    if result is not None and result.body is not None and len(result.body):
        _walk(result.body, builder)
    else:
        # Very short pages defeat the main-content heuristics; the baseline
        # extractor still returns their paragraphs.
        _body, text, _length = trafilatura.baseline(tree)
        for paragraph in text.split("\n"):
            builder.paragraph(paragraph)
    title = normalize_inline((result.title if result is not None else None) or raw_title)
    extracted = ExtractedText(
        text=builder.text,
        headings=builder.headings,
        title=title,
        author=_clean(result.author) if result is not None else None,
        publisher=_clean(result.sitename) if result is not None else None,
        published_at=result.date if result is not None and result.date else None,
        language=language or (result.language if result is not None else None),
        canonical_link=canonical,
    )
    raw_head = (
        document[:_GATE_SCAN_CHARS]
        if isinstance(document, str)
        else document[:_GATE_SCAN_CHARS].decode("utf-8", "ignore")
    )
    extracted.gate = detect_gate(
        title=raw_title or title, main_text=extracted.text, raw_html=raw_head
    )
    return extracted


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


def _text(element: etree._Element) -> str:
    return " ".join("".join(element.itertext()).split())


def _walk(body: etree._Element, builder: SnapshotBuilder) -> None:
    """Turn trafilatura's output tree (head, p, list, table, quote...) into blocks."""
    for element in body:
        tag = element.tag if isinstance(element.tag, str) else ""
        if tag == "head":
            rend = (element.get("rend") or "h2").lower()
            level = int(rend[1]) if len(rend) == 2 and rend[0] == "h" and rend[1].isdigit() else 2
            builder.heading(_text(element), level)
        elif tag == "list":
            builder.lines([f"- {_text(item)}" for item in element.iter("item") if _text(item)])
        elif tag == "table":
            rows = []
            for row in element.iter("row"):
                cells = [_text(cell) for cell in row.iter("cell")]
                if any(cells):
                    rows.append(" | ".join(cells))
            builder.lines(rows)
        elif tag in ("quote", "div") and any(
            isinstance(child.tag, str) and child.tag in _BLOCK_TAGS for child in element
        ):
            # A block quote holding headings or paragraphs (an abstract, say) keeps its structure.
            if element.text and element.text.strip():
                builder.paragraph(element.text)
            _walk(element, builder)
        elif tag in ("p", "quote", "code", "item"):
            builder.paragraph(_text(element))
        elif tag in ("graphic", "ref", "lb"):
            continue
        else:
            builder.paragraph(_text(element))
