"""PDF to page-aware snapshot text with pypdf.

Each page becomes one block of the snapshot and a ``PageSpan`` records which
characters came from which page, so evidence from a PDF can cite a page
number. The outline (bookmarks), when present, becomes headings.
"""

from __future__ import annotations

import io
import logging
from datetime import datetime

from pypdf import PdfReader
from pypdf.errors import PyPdfError

from research.engine.contracts import Heading
from research.sources.errors import unsupported
from research.sources.snapshot import ExtractedText, SnapshotBuilder, normalize_inline

# pypdf logs every oddity of a malformed file as a warning; those are not ours to act on.
logging.getLogger("pypdf").setLevel(logging.ERROR)

MAX_PAGES = 500


def extract_pdf(content: bytes, *, url: str, max_chars: int) -> ExtractedText:
    """Extract text page by page; stop once ``max_chars`` characters are collected.

    Raises ``SourceError`` (unsupported) for encrypted, unreadable or
    image-only PDFs.
    """
    try:
        reader = PdfReader(io.BytesIO(content), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise unsupported(
                f"{url} is a password-protected PDF and cannot be read.", downloaded=True
            )
        builder = SnapshotBuilder()
        for number, page in enumerate(reader.pages, start=1):
            if number > MAX_PAGES or builder.length > max_chars:
                break
            builder.page(number, page.extract_text() or "")
        headings = _outline_headings(reader, builder)
        title, author, published = _metadata(reader)
    except PyPdfError as exc:
        raise unsupported(f"{url} could not be read as a PDF ({exc}).", downloaded=True) from None
    except (ValueError, KeyError, TypeError, AttributeError, IndexError, RecursionError) as exc:
        # pypdf reports damaged files through ordinary exceptions as well.
        raise unsupported(
            f"{url} is a damaged PDF that could not be read ({type(exc).__name__}).",
            downloaded=True,
        ) from None
    text = builder.text
    if not text.strip():
        raise unsupported(
            f"{url} is a PDF without extractable text (it may be a scanned image).",
            downloaded=True,
        )
    if not title:
        title = next((line for line in text.splitlines() if line.strip()), "")[:200]
    return ExtractedText(
        text=text,
        headings=headings,
        pages=builder.pages,
        title=title,
        author=author,
        published_at=published,
        date_source="pdf_info" if published else None,
    )


def _metadata(reader: PdfReader) -> tuple[str, str | None, str | None]:
    try:
        info = reader.metadata
    except PyPdfError:
        return "", None, None
    if info is None:
        return "", None, None
    title = normalize_inline(str(info.title or ""))
    author = normalize_inline(str(info.author or "")) or None
    published = None
    try:
        created = info.creation_date
    except (ValueError, TypeError):
        created = None
    if isinstance(created, datetime):
        published = created.date().isoformat()
    return title, author, published


def _outline_headings(reader: PdfReader, builder: SnapshotBuilder) -> list[Heading]:
    """Turn outline entries into headings at the position of their title on their page."""
    try:
        outline = reader.outline
    except PyPdfError:
        return []
    text = builder.text
    spans = {span.page: span for span in builder.pages}
    headings: list[Heading] = []

    def visit(items: list, level: int) -> None:
        for item in items:
            if isinstance(item, list):
                visit(item, level + 1)
                continue
            try:
                page_number = reader.get_destination_page_number(item) + 1
            except (PyPdfError, ValueError, KeyError, TypeError, AttributeError):
                continue
            span = spans.get(page_number)
            title = normalize_inline(str(getattr(item, "title", "") or ""))
            if span is None or not title:
                continue
            found = text.find(title, span.start, span.end)
            offset = found if found >= 0 else span.start
            headings.append(Heading(offset=offset, level=min(level, 6), text=title))

    visit(list(outline), 1)
    headings.sort(key=lambda h: h.offset)
    return headings
