"""From an uploaded file to the ``SourceDocument`` a web page would have become.

``parse_upload`` is the one entry point: size check, content sniffing, the parser of the
sniffed format, then the same bounding and hashing as the web pipeline. Nothing is stored
here; the caller stores the file and the snapshot only after this returned, so a refused
file leaves nothing behind.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import PurePosixPath
from typing import Literal

from research.engine.contracts import SourceDocument
from research.engine.urls import UnsupportedURLError, normalize_url
from research.sources.documents.addresses import document_url_hash, is_document_url
from research.sources.documents.docx import parse_docx
from research.sources.documents.errors import DocumentRefused
from research.sources.documents.limits import DocumentLimits, check_file_size
from research.sources.documents.markdown import parse_markdown
from research.sources.documents.pdf_reader import PdfReaderUnavailable, read_pdf
from research.sources.documents.sniff import Sniffed, sniff
from research.sources.documents.structure import build_snapshot
from research.sources.extract import extract_plain_text
from research.sources.extract_html import extract_html
from research.sources.snapshot import ExtractedText, bound_snapshot, normalize_inline

logger = logging.getLogger(__name__)

_KINDS: dict[str, Literal["html", "pdf", "text"]] = {"pdf": "pdf", "html": "html"}


def parse_upload(
    name: str,
    data: bytes,
    *,
    url: str,
    limits: DocumentLimits,
    uploaded_at: datetime | None = None,
) -> SourceDocument:
    """Parse one uploaded file into a bounded, hashed snapshot.

    ``name`` is the file name as uploaded (only its extension is used, and only to check the
    content); ``url`` is the document's address (``addresses.document_url``), which becomes
    its canonical URL. Raises ``DocumentRefused`` with a sentence for an empty file, a file
    over ``limits.max_file_bytes``, a format we do not read, a name that disagrees with the
    content, a hostile or damaged file and one without readable text, and
    ``PdfReaderUnavailable`` when the PDF reader process cannot start (a server fault: the
    file was not judged). DOCX, PDF and Markdown keep their headings with offsets, PDFs their
    page spans; DOCX and Markdown are ``kind="text"`` sources (their locators are offsets plus
    nearest heading), with the format in ``mime_type``.
    """
    if not is_document_url(url):
        raise ValueError(f"{url[:80]!r} is not a document address (see document_url).")
    check_file_size(len(data), limits)
    sniffed = sniff(name, data)
    try:
        extracted, truncated = _extract(sniffed, data, url=url, limits=limits)
    except (DocumentRefused, PdfReaderUnavailable):
        raise
    except Exception:
        # A parser bug must not become a server error, and must not go unseen either.
        logger.exception("Unexpected failure parsing an uploaded %s file", sniffed.format)
        raise DocumentRefused(
            "damaged", "This file could not be read, probably because it is damaged."
        ) from None
    if not extracted.text.strip():
        raise DocumentRefused("no_text", "This document has no readable text.")
    snapshot = bound_snapshot(
        extracted.text,
        extracted.headings,
        extracted.pages,
        limits.max_text_bytes,
        extracted.blocks,
    )
    title = normalize_inline(extracted.title) or normalize_inline(PurePosixPath(name).stem)
    return SourceDocument(
        requested_url=url,
        final_url=url,
        canonical_url=url,
        canonical_url_hash=document_url_hash(url),
        content_hash=snapshot.content_hash,
        mime_type=sniffed.media_type,
        kind=_KINDS.get(sniffed.format, "text"),
        title=title[:500],
        author=extracted.author,
        publisher=extracted.publisher,
        published_at=extracted.published_at,
        language=extracted.language,
        text=snapshot.text,
        headings=snapshot.headings,
        pages=snapshot.pages,
        blocks=snapshot.blocks,
        truncated=snapshot.truncated or truncated,
        content_bytes=snapshot.content_bytes,
        retrieved_at=uploaded_at or datetime.now(UTC),
        declared_canonical_url=_declared_canonical(extracted),
    )


def _extract(
    sniffed: Sniffed, data: bytes, *, url: str, limits: DocumentLimits
) -> tuple[ExtractedText, bool]:
    if sniffed.format == "pdf":
        return read_pdf(data, limits=limits)
    if sniffed.format == "docx":
        document = parse_docx(data)
        return build_snapshot(
            document.blocks,
            title=document.title,
            author=document.author,
            published_at=document.published_at,
            language=document.language,
        ), False
    if sniffed.format == "markdown":
        markdown = parse_markdown(data.decode(sniffed.encoding or "utf-8"))
        return build_snapshot(
            markdown.blocks,
            title=markdown.title,
            author=markdown.author,
            published_at=markdown.published_at,
        ), False
    if sniffed.format == "text":
        return extract_plain_text(data, charset=sniffed.encoding), False
    extracted = extract_html(data, url=url, charset=sniffed.encoding)
    if extracted.gate is not None:
        what = "an access check (CAPTCHA)" if extracted.gate.kind == "challenge" else "a paywall"
        raise DocumentRefused(
            "not_content",
            f"This HTML file is a saved page showing {what} instead of the document's text; "
            "save the page again once its content is visible.",
        )
    return extracted, False


def _declared_canonical(extracted: ExtractedText) -> str | None:
    """A saved web page's canonical link: a sign that the upload is a copy of that page, which
    the independence clustering uses (it never becomes the document's identity)."""
    if not extracted.canonical_link:
        return None
    try:
        return normalize_url(extracted.canonical_link.strip())
    except (UnsupportedURLError, ValueError):
        return None
