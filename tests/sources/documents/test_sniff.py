"""Content sniffing: the format comes from the bytes; the name only has to agree."""

from __future__ import annotations

import io
import zipfile

import pytest

from research.sources.documents.errors import DocumentRefused
from research.sources.documents.sniff import sniff
from tests.sources.documents.files import build_docx, paragraph, report_docx, report_pdf

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x02"
SUPPORTED = "upload a PDF, DOCX, Markdown, HTML or text file."


def refusal(name: str, data: bytes) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        sniff(name, data)
    return caught.value


def zip_of(parts: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("name", "data", "expected", "media_type"),
    [
        ("review.pdf", report_pdf(), "pdf", "application/pdf"),
        (
            "survey.docx",
            report_docx(),
            "docx",
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        ("notes.md", b"# Notes\n\nText.\n", "markdown", "text/markdown"),
        ("notes.markdown", b"Plain words.", "markdown", "text/markdown"),
        ("notes.txt", b"Plain words.\n", "text", "text/plain"),
        ("page.html", b"<!DOCTYPE html><html><body><p>Hi</p></body></html>", "html", "text/html"),
        ("page.htm", b"\n  <!-- saved by a browser -->\n<html lang=en>", "html", "text/html"),
        ("page.xhtml", b'<?xml version="1.0"?>\n<html xmlns="x"><body/>', "html", "text/html"),
    ],
)
def test_each_format_is_recognised_by_its_content(name, data, expected, media_type) -> None:
    found = sniff(name, data)

    assert (found.format, found.media_type) == (expected, media_type)


def test_the_upload_in_the_issue_is_refused_with_its_sentence() -> None:
    error = refusal("scan.pdf", PNG)

    assert error.code == "wrong_extension"
    assert error.reason == f"This file says .pdf but is a PNG image; {SUPPORTED}"


@pytest.mark.parametrize(
    ("name", "data", "sentence"),
    [
        (
            "review.txt",
            report_pdf(),
            "This file says .txt but is a PDF document; rename it to .pdf or upload the file "
            "you meant.",
        ),
        (
            "survey.pdf",
            report_docx(),
            "This file says .pdf but is a DOCX document; rename it to .docx or upload the file "
            "you meant.",
        ),
        (
            "notes.pdf",
            b"Meeting notes, not a PDF at all.\n",
            "This file says .pdf but is plain text; rename it to .txt or upload the file you "
            "meant.",
        ),
        (
            "notes.docx",
            b"# Heading\n",
            "This file says .docx but is plain text; rename it to .txt or upload the file you "
            "meant.",
        ),
        (
            "notes.html",
            b"Just a sentence.",
            "This file says .html but does not start like an HTML document; rename it to .txt "
            "to upload it as text.",
        ),
        (
            "photo.md",
            b"\xff\xd8\xff\xe0\x00\x10JFIF",
            f"This file says .md but is a JPEG image; {SUPPORTED}",
        ),
        (
            "tool.txt",
            b"\x7fELF\x02\x01\x01\x00",
            f"This file says .txt but is a program (ELF executable); {SUPPORTED}",
        ),
        (
            "letter.txt",
            b"{\\rtf1\\ansi Dear Sir}",
            "This file says .txt but is an RTF document; save it as DOCX and upload that.",
        ),
        (
            "old.docx",
            b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64,
            "This file says .docx but is an old-format Office file (.doc, .xls, .ppt) or a "
            "password-protected one; save it as DOCX without a password and upload that.",
        ),
        (
            "sheet.docx",
            zip_of({"[Content_Types].xml": b"<Types/>", "xl/workbook.xml": b"<workbook/>"}),
            f"This file says .docx but is an Excel workbook (XLSX); {SUPPORTED}",
        ),
        (
            "text.docx",
            zip_of(
                {"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": b"<x/>"}
            ),
            "This file says .docx but is an OpenDocument text file (ODT); save it as DOCX and "
            "upload that.",
        ),
        (
            "bundle.docx",
            zip_of({"readme.txt": b"hello"}),
            f"This file says .docx but is a ZIP archive; {SUPPORTED}",
        ),
        (
            "data.txt",
            b"col\x00umn\x01\x02 binary",
            f"This file says .txt but is binary data of an unknown kind; {SUPPORTED}",
        ),
    ],
)
def test_an_extension_that_disagrees_with_the_content_is_refused(name, data, sentence) -> None:
    error = refusal(name, data)

    assert error.code == "wrong_extension"
    assert error.reason == sentence


def test_a_zip_with_word_paths_but_another_main_part_is_not_a_docx() -> None:
    data = build_docx(paragraph("Hi"), main_type="application/xml")

    assert refusal("fake.docx", data).reason == (
        f"This file says .docx but is an Office file whose main part is not a Word document; "
        f"{SUPPORTED}"
    )


@pytest.mark.parametrize(
    ("name", "sentence"),
    [
        ("table.csv", f"Files ending in .csv cannot be read; {SUPPORTED}"),
        ("picture.png", f"Files ending in .png cannot be read; {SUPPORTED}"),
        ("letter.doc", "Files ending in .doc cannot be read; save it as DOCX and upload that."),
    ],
)
def test_extensions_we_do_not_read_are_refused_whatever_the_content(name, sentence) -> None:
    error = refusal(name, b"plain words")

    assert (error.code, error.reason) == ("unsupported_format", sentence)


def test_a_name_without_extension_is_read_as_its_content_says() -> None:
    assert sniff("README", b"Read me first.\n").format == "text"
    assert sniff("saved-page", b"<html><body><p>x</p></body></html>").format == "html"
    assert sniff("report", report_pdf()).format == "pdf"
    assert refusal("photo", PNG).reason == f"This file is a PNG image; {SUPPORTED}"


def test_text_with_markup_keeps_the_reading_its_extension_asks_for() -> None:
    # A .txt file is shown as written, tags included; only .html files are read as HTML.
    assert sniff("snippet.txt", b"<html><p>x</p></html>").format == "text"
    assert sniff("snippet.md", b"<div>x</div>").format == "markdown"


def test_utf16_and_utf32_with_a_byte_order_mark_are_text() -> None:
    assert sniff("notes.txt", "Grüße\n".encode("utf-16")).encoding == "utf-16"
    assert sniff("notes.txt", "Grüße\n".encode("utf-32")).encoding == "utf-32"
    assert sniff("notes.md", "\ufeff# Grüße\n".encode()).encoding == "utf-8-sig"


def test_text_in_a_legacy_encoding_is_refused_with_advice() -> None:
    error = refusal("notes.txt", "Café crème".encode("cp1252"))

    assert error.code == "text_encoding"
    assert error.reason == (
        "This file is text in an encoding other than UTF-8 (or UTF-16 with a byte-order "
        "mark); save it as UTF-8 and upload it again."
    )


def test_utf16_without_a_byte_order_mark_is_not_taken_for_text() -> None:
    # Every other byte is NUL: binary to a strict reader, as the standard's rules say.
    assert refusal("notes.txt", "plain".encode("utf-16-le")).code == "wrong_extension"


def test_a_pdf_header_after_some_junk_still_makes_a_pdf_but_a_mention_does_not() -> None:
    assert sniff("review.pdf", b"\x00\x01junk" + report_pdf()).format == "pdf"
    note = b"PDF files start with the bytes %PDF-1.7 and end with a trailer.\n"
    assert sniff("note.txt", note).format == "text"
