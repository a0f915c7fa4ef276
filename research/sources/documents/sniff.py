"""What an uploaded file really is, from its bytes; the name only has to agree.

The browser's content type is never consulted (it is whatever the client says) and the
extension is not trusted either: the format comes from the content — magic bytes for PDF, the
package structure for DOCX, the WHATWG sniffing rules for HTML, a strict decode for text.
The extension must then agree with what was found, so a file never reaches a parser its
owner did not mean (a PDF renamed to .txt, an image renamed to .pdf); within the text family
the extension chooses how the text is read (see docs/sources.md, "Uploaded documents").
"""

from __future__ import annotations

import codecs
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal, NoReturn

from research.sources.documents.errors import DocumentRefused
from research.sources.documents.ooxml import open_package

DocumentFormat = Literal["pdf", "docx", "html", "markdown", "text"]

MEDIA_TYPES: dict[DocumentFormat, str] = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "html": "text/html",
    "markdown": "text/markdown",
    "text": "text/plain",
}

EXTENSIONS: dict[str, DocumentFormat] = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".mdown": "markdown",
    ".mkd": "markdown",
    ".txt": "text",
    ".text": "text",
}

_SUPPORTED = "upload a PDF, DOCX, Markdown, HTML or text file."
_SAVE_AS_DOCX = "save it as DOCX and upload that."
# Formats a word processor can turn into DOCX: say so instead of listing what we read.
_EXTENSION_ADVICE = {".doc": _SAVE_AS_DOCX, ".rtf": _SAVE_AS_DOCX, ".odt": _SAVE_AS_DOCX}
_DESCRIPTIONS: dict[DocumentFormat, str] = {
    "pdf": "a PDF document",
    "docx": "a DOCX document",
    "html": "an HTML page",
    "markdown": "plain text",
    "text": "plain text",
}
_RENAME: dict[DocumentFormat, str] = {
    "pdf": ".pdf",
    "docx": ".docx",
    "html": ".html",
    "markdown": ".txt",
    "text": ".txt",
}

# Acrobat accepts the PDF header anywhere in the first 1,024 bytes (PDF 1.7, annex H), and
# files with a few bytes of junk in front exist; pypdf reads them too. A header that is not at
# the very start only counts with an end-of-file marker in the last 1,024 bytes as well, so a
# text file that merely mentions "%PDF-" stays text.
_PDF_HEADER_WINDOW = 1024
_PDF_TRAILER_WINDOW = 1024
_ZIP_SIGNATURES = (b"PK\x03\x04", b"PK\x05\x06", b"PK\x07\x08")
_OLE_SIGNATURE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"

# Signatures of files people upload by mistake, so that the refusal can say what they are.
# fmt: off
_BINARY_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "a PNG image"),
    (b"\xff\xd8\xff", 0, "a JPEG image"),
    (b"GIF87a", 0, "a GIF image"),
    (b"GIF89a", 0, "a GIF image"),
    (b"WEBP", 8, "a WebP image"),
    (b"II*\x00", 0, "a TIFF image"),
    (b"MM\x00*", 0, "a TIFF image"),
    (b"ftyp", 4, "a video, audio or HEIC image file"),
    (b"\x1aE\xdf\xa3", 0, "a Matroska or WebM video"),
    (b"ID3", 0, "an MP3 audio file"),
    (b"OggS", 0, "an Ogg audio or video file"),
    (b"fLaC", 0, "a FLAC audio file"),
    (b"WAVE", 8, "a WAV audio file"),
    (b"AVI ", 8, "an AVI video"),
    (b"\x1f\x8b", 0, "a gzip archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "a 7-Zip archive"),
    (b"Rar!\x1a\x07", 0, "a RAR archive"),
    (b"\xfd7zXZ\x00", 0, "an xz archive"),
    (b"\x28\xb5\x2f\xfd", 0, "a Zstandard archive"),
    (b"\x7fELF", 0, "a program (ELF executable)"),
    (b"\xcf\xfa\xed\xfe", 0, "a program (Mach-O executable)"),
    (b"\xca\xfe\xba\xbe", 0, "a program or Java class file"),
    (b"SQLite format 3\x00", 0, "an SQLite database"),
    (b"{\\rtf", 0, "an RTF document"),
    (b"%!PS", 0, "a PostScript file"),
)
# fmt: on

# The WHATWG MIME Sniffing standard's "binary data bytes": control characters that never occur
# in text (tab, line feed, form feed, carriage return and escape are not among them).
_BINARY_CHARACTERS = re.compile("[\x00-\x08\x0b\x0e-\x1a\x1c-\x1f]")
# Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# The WHATWG sniffing patterns for HTML: these tags (or a comment) as the first thing after
# white space, each followed by a space or ">". XHTML starts with an XML declaration instead.
_HTML_START = re.compile(
    r"<(?:!doctype\s+html|html|head|script|iframe|h1|div|font|table|a|style|title|b|body|br|p"
    r"|!--)(?:[\s>]|$)",
    re.IGNORECASE,
)
_XML_DECLARATION = re.compile(r"<\?xml[^>]*\?>", re.IGNORECASE)
_LEADING_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_XHTML_ROOT = re.compile(r"(?:<!doctype\s+html[^>]*>\s*)?<html[\s>]", re.IGNORECASE)
# How much of the start of a file the HTML patterns look at, as in the WHATWG standard.
_HTML_SNIFF_BYTES = 1445

# Package part names that tell other Office and ZIP-based formats apart.
_CONTENT_TYPES = "[Content_Types].xml"
_WORD_MAIN = "word/document.xml"
_CT_NAMESPACE = "{http://schemas.openxmlformats.org/package/2006/content-types}"
# The main-part content types of Word documents, templates and their macro-enabled variants:
# one body format, read the same way (macros are never looked at).
_WORD_MAIN_TYPES = frozenset(
    {
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.template.main+xml",
        "application/vnd.ms-word.document.macroenabled.main+xml",
        "application/vnd.ms-word.template.macroenabledtemplate.main+xml",
    }
)
_ODF_KINDS = {
    "application/vnd.oasis.opendocument.text": "an OpenDocument text file (ODT)",
    "application/vnd.oasis.opendocument.spreadsheet": "an OpenDocument spreadsheet (ODS)",
    "application/vnd.oasis.opendocument.presentation": "an OpenDocument presentation (ODP)",
    "application/epub+zip": "an EPUB e-book",
}
# The "mimetype" part of ODF and EPUB files is one short line.
_MIMETYPE_PART_BYTES = 200


@dataclass(frozen=True)
class Sniffed:
    """The format of an upload and how to read it.

    ``encoding`` is the codec its text decodes with (``utf-8``, ``utf-8-sig``, ``utf-16``,
    ``utf-32``) for Markdown and text, the codec of a byte-order mark for HTML, else ``None``
    (an HTML file without a mark declares its own encoding; PDF and DOCX are binary).
    """

    format: DocumentFormat
    media_type: str
    encoding: str | None = None


@dataclass(frozen=True)
class _Content:
    """What the bytes are: one of our formats, or a description of something else (with
    advice for the refusal and, for text in a legacy encoding, a code of its own)."""

    format: DocumentFormat | None
    description: str
    encoding: str | None = None
    advice: str = _SUPPORTED
    legacy_text: bool = False


def extension_of(name: str) -> str:
    """The lower-cased last suffix of a file name (``""`` when there is none)."""
    return PurePosixPath(name.replace("\\", "/")).suffix.lower()


def sniff(name: str, data: bytes) -> Sniffed:
    """Decide the format of ``data`` and check that ``name``'s extension agrees.

    Raises ``DocumentRefused`` for an extension we do not read, content that is none of the
    five formats, a mismatch between extension and content, and text that is not UTF-8 (or
    UTF-16/32 with a byte-order mark).
    """
    extension = extension_of(name)
    claimed = EXTENSIONS.get(extension) if extension else None
    if extension and claimed is None:
        advice = _EXTENSION_ADVICE.get(extension, _SUPPORTED)
        raise DocumentRefused(
            "unsupported_format", f"Files ending in {extension} cannot be read; {advice}"
        )
    content = _content_of(data)
    if content.format is None:
        _refuse_other(extension, content)
    found = content.format
    if claimed is None:
        return Sniffed(found, MEDIA_TYPES[found], content.encoding)
    if claimed in ("markdown", "text") and found in ("markdown", "text", "html"):
        # Any text may be read as text or Markdown: markup in a .txt file is shown as written.
        encoding = content.encoding or _strict_text_encoding(data)
        if encoding is None:
            raise _not_utf8()
        return Sniffed(claimed, MEDIA_TYPES[claimed], encoding)
    if claimed == found:
        return Sniffed(found, MEDIA_TYPES[found], content.encoding)
    if claimed == "html" and found in ("markdown", "text"):
        raise DocumentRefused(
            "wrong_extension",
            f"This file says {extension} but does not start like an HTML document; rename it "
            "to .txt to upload it as text.",
        )
    raise DocumentRefused(
        "wrong_extension",
        f"This file says {extension} but is {_DESCRIPTIONS[found]}; rename it to "
        f"{_RENAME[found]} or upload the file you meant.",
    )


def _refuse_other(extension: str, content: _Content) -> NoReturn:
    if content.legacy_text:
        raise _not_utf8()
    if extension:
        raise DocumentRefused(
            "wrong_extension",
            f"This file says {extension} but is {content.description}; {content.advice}",
        )
    raise DocumentRefused(
        "unsupported_format", f"This file is {content.description}; {content.advice}"
    )


def _not_utf8() -> DocumentRefused:
    return DocumentRefused(
        "text_encoding",
        "This file is text in an encoding other than UTF-8 (or UTF-16 with a byte-order "
        "mark); save it as UTF-8 and upload it again.",
    )


def _is_pdf(data: bytes) -> bool:
    if data.startswith(b"%PDF-"):
        return True
    return b"%PDF-" in data[:_PDF_HEADER_WINDOW] and b"%%EOF" in data[-_PDF_TRAILER_WINDOW:]


def _content_of(data: bytes) -> _Content:
    if _is_pdf(data):
        return _Content("pdf", _DESCRIPTIONS["pdf"])
    if data.startswith(_ZIP_SIGNATURES):
        return _zip_content(data)
    if data.startswith(_OLE_SIGNATURE):
        return _Content(
            None,
            "an old-format Office file (.doc, .xls, .ppt) or a password-protected one",
            advice="save it as DOCX without a password and upload that.",
        )
    for signature, offset, description in _BINARY_SIGNATURES:
        if data[offset : offset + len(signature)] == signature:
            advice = _SAVE_AS_DOCX if description == "an RTF document" else _SUPPORTED
            return _Content(None, description, advice=advice)
    html_encoding = _html_encoding(data)
    if html_encoding is not False:
        return _Content("html", _DESCRIPTIONS["html"], html_encoding)
    encoding = _strict_text_encoding(data)
    if encoding is not None:
        return _Content("text", _DESCRIPTIONS["text"], encoding)
    # Not UTF-8: legacy-encoded text still has no binary bytes (Latin-1 maps every byte).
    if _BINARY_CHARACTERS.search(data.decode("latin-1")):
        return _Content(None, "binary data of an unknown kind")
    return _Content(None, "text in a legacy encoding", legacy_text=True)


def _bom_encoding(data: bytes) -> str | None:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return encoding
    return None


def _strict_text_encoding(data: bytes) -> str | None:
    """The codec the whole of ``data`` decodes with as text, or ``None`` (binary, not UTF-8)."""
    encoding = _bom_encoding(data) or "utf-8"
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError:
        return None
    if _BINARY_CHARACTERS.search(text):
        return None
    return encoding


def _html_encoding(data: bytes) -> str | None | Literal[False]:
    """``False`` unless ``data`` starts like HTML; else the byte-order mark's codec or ``None``."""
    encoding = _bom_encoding(data)
    head = data[: _HTML_SNIFF_BYTES * 4 if encoding in ("utf-16", "utf-32") else _HTML_SNIFF_BYTES]
    text = head.decode(encoding or "latin-1", errors="ignore").lstrip("\ufeff").lstrip()
    if _BINARY_CHARACTERS.search(text):
        return False
    declaration = _XML_DECLARATION.match(text)
    if declaration:
        rest = text[declaration.end() :].lstrip()
        while comment := _LEADING_COMMENT.match(rest):
            rest = rest[comment.end() :].lstrip()
        return encoding if _XHTML_ROOT.match(rest) else False
    while (comment := _LEADING_COMMENT.match(text)) and _HTML_START.match(
        text[comment.end() :].lstrip()
    ):
        text = text[comment.end() :].lstrip()
    return encoding if _HTML_START.match(text) else False


def _zip_content(data: bytes) -> _Content:
    """Tell a DOCX from the other things a ZIP can be; checks the package's limits first."""
    package = open_package(data)
    names = package.names()
    if _CONTENT_TYPES in names and _WORD_MAIN in names:
        types = package.parse(_CONTENT_TYPES)
        main = None
        if types is not None:
            for override in types.iter(f"{_CT_NAMESPACE}Override"):
                if (override.get("PartName") or "").lstrip("/") == _WORD_MAIN:
                    main = (override.get("ContentType") or "").strip().lower()
        if main in _WORD_MAIN_TYPES:
            return _Content("docx", _DESCRIPTIONS["docx"])
        return _Content(None, "an Office file whose main part is not a Word document")
    if _CONTENT_TYPES in names and "xl/workbook.xml" in names:
        return _Content(None, "an Excel workbook (XLSX)")
    if _CONTENT_TYPES in names and "ppt/presentation.xml" in names:
        return _Content(None, "a PowerPoint presentation (PPTX)")
    if "mimetype" in names and package.archive.getinfo("mimetype").file_size <= (
        _MIMETYPE_PART_BYTES
    ):
        kind = (package.read("mimetype") or b"").decode("ascii", "replace").strip()
        if kind in _ODF_KINDS:
            text_document = kind == "application/vnd.oasis.opendocument.text"
            advice = _SAVE_AS_DOCX if text_document else _SUPPORTED
            return _Content(None, _ODF_KINDS[kind], advice=advice)
    return _Content(None, "a ZIP archive")
