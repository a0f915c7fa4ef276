"""DOCX: headings, lists and tables from real packages; zip bombs and hostile XML refused."""

from __future__ import annotations

import pytest

from research.sources.documents.docx import parse_docx
from research.sources.documents.errors import DocumentRefused
from research.sources.documents.ooxml import MAX_PARTS
from research.sources.documents.structure import (
    HeadingBlock,
    ListBlock,
    ParagraphBlock,
    TableBlock,
    build_snapshot,
)
from tests.sources.documents.files import (
    build_docx,
    entity_bomb_docx,
    many_parts_docx,
    mark_encrypted,
    paragraph,
    patch_declared_size,
    ratio_bomb_docx,
    report_docx,
    run,
)


def refusal(data: bytes) -> DocumentRefused:
    with pytest.raises(DocumentRefused) as caught:
        parse_docx(data)
    return caught.value


def test_heading_styles_become_headings_in_any_installation() -> None:
    document = parse_docx(report_docx())

    headings = [block for block in document.blocks if isinstance(block, HeadingBlock)]
    # Title, built-in Heading 1, a German Word's "heading 2" and a style based on Heading 1.
    assert [(h.level, h.text) for h in headings] == [
        (1, "Harbour Survey 2024"),
        (1, "Method"),
        (2, "Sites"),
        (1, "Results"),
    ]


def test_paragraphs_lists_and_tables_keep_their_order_and_shape() -> None:
    document = parse_docx(report_docx())

    assert document.blocks[2] == ParagraphBlock(
        "Divers counted seagrass shoots along twelve transects in May."
    )
    # One item numbered by its style (List Bullet), one by its own numbering.
    assert document.blocks[4] == ListBlock(("North mole", "Ferry slip"))
    assert document.blocks[7] == TableBlock(
        (("Site", "2023", "2024"), ("North mole", "410", "455"), ("Ferry slip", "120", "96"))
    )
    assert document.blocks[8] == ParagraphBlock("The ferry slip lost shoots to propeller scour.")


def test_the_snapshot_has_heading_offsets_and_table_rows_with_separators() -> None:
    document = parse_docx(report_docx())
    extracted = build_snapshot(document.blocks, title=document.title)

    for heading in extracted.headings:
        assert extracted.text[heading.offset : heading.offset + len(heading.text)] == heading.text
    # The web pipeline's layout: a tab between the cells of a row, a line break between rows
    # and between list items, each cell and item a block of its own (no added bullets or pipes).
    assert "\n\nSite\t2023\t2024\nNorth mole\t410\t455\nFerry slip\t120\t96\n\n" in (extracted.text)
    assert "\n\nNorth mole\nFerry slip\n\n" in extracted.text
    kinds = {extracted.text[b.start : b.end]: b.kind for b in extracted.blocks}
    assert kinds["Ferry slip"] in ("cell", "item") and kinds["455"] == "cell"


def test_core_properties_give_title_author_date_and_language() -> None:
    document = parse_docx(report_docx())

    assert (document.title, document.author, document.published_at, document.language) == (
        "Harbour Survey",
        "Ines Duarte",
        "2024-06-03",
        "en-gb",
    )


def test_revisions_field_codes_and_drawing_fallbacks_are_not_text() -> None:
    body = (
        "<w:p>"
        + run("Budget was ")
        + '<w:del w:id="1"><w:r><w:delText>4.1</w:delText></w:r></w:del>'
        + '<w:ins w:id="2">'
        + run("4.6")
        + "</w:ins>"
        + run(" million")
        + '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        + "<w:r><w:instrText> PAGEREF _Toc1 \\h </w:instrText></w:r>"
        + '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        + run(" (page 7)")
        + '<w:r><w:fldChar w:fldCharType="end"/></w:r>'
        + '<w:r><mc:AlternateContent><mc:Choice Requires="wps"><w:drawing><w:txbxContent>'
        + paragraph("Box text")
        + "</w:txbxContent></w:drawing></mc:Choice><mc:Fallback><w:pict><w:txbxContent>"
        + paragraph("Box text")
        + "</w:txbxContent></w:pict></mc:Fallback></mc:AlternateContent></w:r>"
        + "</w:p>"
    )
    document = parse_docx(build_docx(body))

    assert document.blocks == [ParagraphBlock("Budget was 4.6 million (page 7) Box text")]


def test_content_controls_and_nested_tables_are_read_where_they_stand() -> None:
    body = (
        "<w:sdt><w:sdtPr/><w:sdtContent>"
        + paragraph("Contents", "Heading1")
        + "</w:sdtContent></w:sdt>"
        + "<w:tbl><w:tr><w:tc>"
        + paragraph("Outer")
        + "<w:tbl><w:tr><w:tc>"
        + paragraph("inner a")
        + "</w:tc><w:tc>"
        + paragraph("inner b")
        + "</w:tc></w:tr></w:tbl></w:tc><w:tc>"
        + paragraph("Right")
        + "</w:tc></w:tr></w:tbl>"
    )
    document = parse_docx(build_docx(body))

    assert document.blocks == [
        HeadingBlock("Contents", 1),
        TableBlock((("Outer inner a inner b", "Right"),)),
    ]


def test_a_document_without_styles_part_still_knows_builtin_heading_ids() -> None:
    document = parse_docx(
        build_docx(paragraph("Scope", "Heading2") + paragraph("Text"), styles=None)
    )

    assert document.blocks == [HeadingBlock("Scope", 2), ParagraphBlock("Text")]


def test_outline_level_on_the_paragraph_wins_over_its_style() -> None:
    body = (
        '<w:p><w:pPr><w:pStyle w:val="Heading1"/><w:outlineLvl w:val="9"/></w:pPr>'
        + run("Styled like a heading, marked body text")
        + '</w:p><w:p><w:pPr><w:outlineLvl w:val="2"/></w:pPr>'
        + run("Marked level 3")
        + "</w:p>"
    )
    document = parse_docx(build_docx(body))

    assert document.blocks == [
        ParagraphBlock("Styled like a heading, marked body text"),
        HeadingBlock("Marked level 3", 3),
    ]


def test_zip_bomb_is_refused_before_it_is_inflated() -> None:
    data = ratio_bomb_docx()
    assert len(data) < 100_000  # 24 MB of XML inside

    error = refusal(data)

    assert error.code == "archive_bomb"
    assert error.reason.startswith("This DOCX file holds a part (word/document.xml) compressed ")
    assert error.reason.endswith(
        " to 1, beyond any document; it looks like a zip bomb and was not read."
    )


def test_a_part_declared_larger_than_any_document_is_refused() -> None:
    data = patch_declared_size(report_docx(), "word/document.xml", 200 * 1024 * 1024)

    assert refusal(data).reason == (
        "This DOCX file holds a part (word/document.xml) that expands to more than 128 MB; "
        "it looks like a zip bomb and was not read."
    )


def test_a_part_that_holds_more_than_it_declares_stops_at_the_declared_size() -> None:
    # The directory says 100 bytes; zipfile inflates no further and the CRC check fails.
    data = patch_declared_size(ratio_bomb_docx(), "word/document.xml", 100)

    error = refusal(data)

    assert (error.code, error.reason) == (
        "damaged",
        "This DOCX file is damaged (word/document.xml cannot be unpacked).",
    )


def test_too_many_parts_are_refused() -> None:
    error = refusal(many_parts_docx(MAX_PARTS))

    assert error.code == "archive_bomb"
    assert error.reason == (
        f"This DOCX file holds {MAX_PARTS + 4:,} parts, more than the {MAX_PARTS:,} allowed; "
        "it looks like a zip bomb and was not read."
    )


def test_entity_expansion_and_external_entities_are_refused_before_parsing() -> None:
    error = refusal(entity_bomb_docx())

    assert error.code == "unsafe_xml"
    assert error.reason == (
        "This DOCX file declares an XML document type in word/document.xml, which Word never "
        "writes (it is how entity-expansion and external-entity attacks work); it was not read."
    )


def test_a_damaged_archive_is_refused_with_a_sentence() -> None:
    data = report_docx()

    error = refusal(data[: len(data) // 2])

    assert (error.code, error.reason) == (
        "damaged",
        "This DOCX file is damaged (its ZIP structure cannot be read).",
    )


def test_malformed_xml_is_refused_with_the_part_named() -> None:
    error = refusal(build_docx("", document="<w:document><w:body><w:p>"))

    assert error.code == "damaged"
    assert error.reason.startswith(
        "This DOCX file is damaged (word/document.xml is not well-formed XML: "
    )


def test_an_encrypted_part_is_refused() -> None:
    error = refusal(mark_encrypted(report_docx(), "word/document.xml"))

    assert (error.code, error.reason) == (
        "encrypted",
        "This DOCX file is encrypted; save it without a password and upload it again.",
    )


def test_strict_open_xml_documents_are_read_too() -> None:
    strict = "http://purl.oclc.org/ooxml/wordprocessingml/main"
    document = (
        f'<w:document xmlns:w="{strict}"><w:body>'
        + paragraph("Scope", "Heading1")
        + paragraph("Strict body text.")
        + "</w:body></w:document>"
    )

    blocks = parse_docx(build_docx("", document=document, styles=None)).blocks

    assert blocks == [HeadingBlock("Scope", 1), ParagraphBlock("Strict body text.")]
