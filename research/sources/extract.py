"""From a fetched response to a ``SourceDocument``: the normalised, hashed snapshot.

Dispatches on the media type (HTML, PDF, plain text), refuses access gates,
bounds the snapshot to the per-source byte budget and fills in identity
(canonical URL and hashes) and metadata.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urljoin, urlsplit

from research.engine.contracts import SourceDocument
from research.engine.urls import (
    UnsupportedURLError,
    canonical_url,
    normalize_url,
    registrable_domain,
    url_hash,
)
from research.sources.errors import blocked, unsupported
from research.sources.extract_html import extract_html
from research.sources.extract_pdf import extract_pdf
from research.sources.responses import FetchResponse
from research.sources.snapshot import ExtractedText, SnapshotBuilder, bound_snapshot

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})


def extract_document(
    response: FetchResponse, *, max_bytes: int, retrieved_at: datetime | None = None
) -> SourceDocument:
    """Turn a fetched response into a bounded, hashed ``SourceDocument``.

    ``max_bytes`` is the per-source budget for the snapshot text (UTF-8
    bytes). Raises ``SourceError`` when the content is a CAPTCHA, a paywall,
    unreadable or empty.
    """
    url = response.final_url
    retrieved = retrieved_at or response.retrieved_at or datetime.now(UTC)
    if response.media_type in HTML_TYPES:
        kind = "html"
        extracted = extract_html(response.content, url=url, charset=response.charset, now=retrieved)
        _refuse_gate(extracted, url)
    elif response.media_type == "application/pdf":
        kind = "pdf"
        if response.truncated:
            raise unsupported(
                f"{url} is a PDF larger than the download limit; a partial PDF cannot be read.",
                downloaded=True,
            )
        extracted = extract_pdf(response.content, url=url, max_chars=max_bytes)
    elif response.media_type == "text/plain":
        kind = "text"
        extracted = extract_plain_text(response.content, charset=response.charset)
    else:
        raise unsupported(f"{url} is {response.media_type}, which cannot be read as a source.")
    if not extracted.text.strip():
        raise unsupported(f"{url} has no readable text.", downloaded=True)
    snapshot = bound_snapshot(
        extracted.text, extracted.headings, extracted.pages, max_bytes, extracted.blocks
    )
    identity, declared = _canonical(url, extracted.canonical_link)
    return SourceDocument(
        requested_url=response.requested_url,
        final_url=url,
        canonical_url=identity,
        canonical_url_hash=url_hash(identity),
        content_hash=snapshot.content_hash,
        mime_type=response.media_type,
        kind=kind,
        title=extracted.title[:500],
        author=extracted.author,
        publisher=extracted.publisher,
        published_at=extracted.published_at,
        date_source=extracted.date_source if extracted.published_at else None,
        language=extracted.language,
        text=snapshot.text,
        headings=snapshot.headings,
        pages=snapshot.pages,
        blocks=snapshot.blocks,
        truncated=snapshot.truncated or response.truncated,
        content_bytes=snapshot.content_bytes,
        retrieved_at=retrieved,
        declared_canonical_url=declared,
    )


def extract_plain_text(content: bytes, *, charset: str | None) -> ExtractedText:
    """Plain text keeps its lines; the first non-empty line serves as the title."""
    text = _decode_text(content, charset)
    builder = SnapshotBuilder()
    builder.block(text)
    body = builder.text
    title = next((line for line in body.splitlines() if line.strip()), "")[:200]
    return ExtractedText(text=body, title=title)


def _decode_text(content: bytes, charset: str | None) -> str:
    if charset:
        try:
            return content.decode(charset, errors="replace")
        except LookupError:
            pass
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return content.decode("cp1252", errors="replace")


def _refuse_gate(extracted: ExtractedText, url: str) -> None:
    gate = extracted.gate
    if gate is None:
        return
    if gate.kind == "challenge":
        raise unsupported(
            f"{url} showed an access challenge (CAPTCHA or bot check) instead of its content; "
            "it cannot be read automatically."
        )
    raise blocked(f"{url} shows only a subscription paywall; the article text is not available.")


def _canonical(final_url: str, link: str | None) -> tuple[str, str | None]:
    """The source's identity, and a cross-site canonical link if the page declared one.

    A page may only name a canonical URL on its own site; a link to another
    site is kept separately as a sign of syndication instead of being trusted.
    """
    identity = canonical_url(final_url, link)
    if not link:
        return identity, None
    try:
        declared = normalize_url(urljoin(final_url, link.strip()))
    except (UnsupportedURLError, ValueError):
        return identity, None
    own = registrable_domain(urlsplit(identity).hostname or "")
    if registrable_domain(urlsplit(declared).hostname or "") != own:
        return identity, declared
    return identity, None
