"""Real files for the upload tests, written byte by byte: DOCX packages, PDFs (good and
hostile), and the tricks attackers play with ZIP headers.

Nothing here is a fixture on disk: every file is built from readable text by the code below,
so a reviewer can see exactly what each test uploads.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from datetime import date
from xml.sax.saxutils import escape

from tests.fixtures.frozen_web.pdf import PdfSource, build_pdf

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
WORD_MAIN = "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"

CONTENT_TYPES = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">
<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>
<Default Extension="xml" ContentType="application/xml"/>
<Override PartName="/word/document.xml" ContentType="{main}"/>
<Override PartName="/word/styles.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.styles+xml"/>
<Override PartName="/docProps/core.xml" ContentType="application/vnd.openxmlformats-package.core-properties+xml"/>
</Types>"""

PACKAGE_RELS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">
<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/>
</Relationships>"""

# Word's built-in styles as Word writes them (English names, outline levels on headings),
# plus what other Word installations produce: a German style id for "heading 2", a custom
# chapter style based on Heading 1, and a bulleted list style.
STYLES = f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<w:styles xmlns:w="{W}">
<w:docDefaults><w:rPrDefault><w:rPr><w:lang w:val="en-GB"/></w:rPr></w:rPrDefault></w:docDefaults>
<w:style w:type="paragraph" w:default="1" w:styleId="Normal"><w:name w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/><w:basedOn w:val="Normal"/><w:pPr><w:outlineLvl w:val="0"/></w:pPr></w:style>
<w:style w:type="paragraph" w:styleId="berschrift2"><w:name w:val="heading 2"/><w:basedOn w:val="Normal"/></w:style>
<w:style w:type="paragraph" w:styleId="Chapter"><w:name w:val="Chapter"/><w:basedOn w:val="Heading1"/></w:style>
<w:style w:type="paragraph" w:styleId="ListBullet"><w:name w:val="List Bullet"/><w:basedOn w:val="Normal"/><w:pPr><w:numPr><w:numId w:val="1"/></w:numPr></w:pPr></w:style>
<w:style w:type="character" w:styleId="Strong"><w:name w:val="Strong"/></w:style>
</w:styles>"""


def core_properties(title: str, author: str, created: str) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/" xmlns:dcterms="http://purl.org/dc/terms/" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">
<dc:title>{escape(title)}</dc:title><dc:creator>{escape(author)}</dc:creator>
<dcterms:created xsi:type="dcterms:W3CDTF">{created}</dcterms:created>
</cp:coreProperties>"""


def run(text: str) -> str:
    return f'<w:r><w:t xml:space="preserve">{escape(text)}</w:t></w:r>'


def paragraph(text: str, style: str | None = None, *, numbered: bool = False) -> str:
    properties = ""
    if style or numbered:
        inner = f'<w:pStyle w:val="{style}"/>' if style else ""
        if numbered:
            inner += '<w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr>'
        properties = f"<w:pPr>{inner}</w:pPr>"
    return f"<w:p>{properties}{run(text)}</w:p>"


def table(rows: list[list[str]]) -> str:
    cells = "".join(
        "<w:tr>" + "".join(f"<w:tc>{paragraph(cell)}</w:tc>" for cell in row) + "</w:tr>"
        for row in rows
    )
    return f"<w:tbl><w:tblPr/>{cells}</w:tbl>"


def document_xml(body: str) -> str:
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        f'<w:document xmlns:w="{W}" '
        'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
        f"<w:body>{body}<w:sectPr/></w:body></w:document>"
    )


def build_docx(
    body: str,
    *,
    document: str | None = None,
    styles: str | None = STYLES,
    core: str | None = None,
    main_type: str = WORD_MAIN,
    extra: dict[str, bytes] | None = None,
) -> bytes:
    """A DOCX package around ``body`` (WordprocessingML inside ``<w:body>``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", CONTENT_TYPES.format(main=main_type))
        archive.writestr("_rels/.rels", PACKAGE_RELS)
        archive.writestr("word/document.xml", document or document_xml(body))
        if styles is not None:
            archive.writestr("word/styles.xml", styles)
        if core is not None:
            archive.writestr("docProps/core.xml", core)
        for name, data in (extra or {}).items():
            archive.writestr(name, data)
    return buffer.getvalue()


def report_docx() -> bytes:
    """A report with a title, headings (built-in, localised and custom styles), prose, a
    bulleted list and a table."""
    body = "".join(
        [
            paragraph("Harbour Survey 2024", "Title"),
            paragraph("Method", "Heading1"),
            paragraph("Divers counted seagrass shoots along twelve transects in May."),
            paragraph("Sites", "berschrift2"),
            paragraph("North mole", "ListBullet"),
            paragraph("Ferry slip", numbered=True),
            paragraph("Results", "Chapter"),
            paragraph("Shoot density rose at every site but one."),
            table(
                [
                    ["Site", "2023", "2024"],
                    ["North mole", "410", "455"],
                    ["Ferry slip", "120", "96"],
                ]
            ),
            paragraph("The ferry slip lost shoots to propeller scour."),
        ]
    )
    return build_docx(
        body, core=core_properties("Harbour Survey", "Ines Duarte", "2024-06-03T09:30:00Z")
    )


def ratio_bomb_docx(unpacked_bytes: int = 24 * 1024 * 1024) -> bytes:
    """A DOCX whose document.xml really inflates ``unpacked_bytes`` of empty paragraphs from
    a few kilobytes (about 1,000 to 1, DEFLATE's ceiling)."""
    header = document_xml("").split("<w:body>")[0].encode() + b"<w:body>"
    filler = b"<w:p/>" * (unpacked_bytes // 6)
    return build_docx("", document=(header + filler + b"</w:body></w:document>").decode())


def many_parts_docx(parts: int) -> bytes:
    extra = {f"word/media/image{index}.bin": b"x" for index in range(parts)}
    return build_docx(paragraph("Hello"), extra=extra)


def _patch_central_directory(data: bytes, name: str, offset: int, layout: str, value: int) -> bytes:
    out = bytearray(data)
    position = out.find(b"PK\x01\x02")
    while position >= 0:
        name_length = struct.unpack_from("<H", out, position + 28)[0]
        member = bytes(out[position + 46 : position + 46 + name_length]).decode()
        if member == name:
            struct.pack_into(layout, out, position + offset, value)
            return bytes(out)
        position = out.find(b"PK\x01\x02", position + 46)
    raise KeyError(name)


def patch_declared_size(data: bytes, name: str, size: int) -> bytes:
    """Rewrite the uncompressed size the central directory declares for member ``name``:
    what a crafted archive does to slip past checks that trust the directory."""
    return _patch_central_directory(data, name, 24, "<I", size)


def mark_encrypted(data: bytes, name: str) -> bytes:
    """Set the "encrypted" flag of member ``name`` in the central directory."""
    return _patch_central_directory(data, name, 8, "<H", 0x1)


def entity_bomb_docx() -> bytes:
    """document.xml with "billion laughs" entities and an external entity naming a local file."""
    declarations = '<!ENTITY lol "lol">' + "".join(
        f'<!ENTITY lol{n} "{("&lol" + (str(n - 1) if n > 1 else "") + ";") * 10}">'
        for n in range(1, 10)
    )
    document = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<!DOCTYPE w:document [{declarations}<!ENTITY xxe SYSTEM "file:///etc/hostname">]>\n'
        f'<w:document xmlns:w="{W}"><w:body><w:p><w:r><w:t>&lol9; &xxe;</w:t></w:r></w:p>'
        "</w:body></w:document>"
    )
    return build_docx("", document=document)


# --------------------------------------------------------------------------------------------
# PDFs
# --------------------------------------------------------------------------------------------


def report_pdf() -> bytes:
    """Three pages with an outline, written by the frozen web's PDF writer."""
    return build_pdf(
        PdfSource(
            title="Tide Gauge Review",
            author="Port Authority",
            created=date(2023, 11, 20),
            pages=[
                "# Summary\n\nThe gauge at Pier 4 drifted 3 cm over the year.",
                "# Calibration\n\nEngineers recalibrated the gauge on 14 August.",
                "# Outlook\n\nA second gauge will be installed in 2025.",
            ],
            outline=[("Summary", 1), ("Calibration", 2), ("Outlook", 3)],
        )
    )


def write_pdf(objects: dict[int, bytes]) -> bytes:
    """A PDF from numbered object bodies (object 1 is the catalog), with a correct xref."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets: dict[int, int] = {}
    for number in sorted(objects):
        offsets[number] = len(out)
        out += f"{number} 0 obj\n".encode() + objects[number] + b"\nendobj\n"
    xref = len(out)
    size = max(objects) + 1
    out += f"xref\n0 {size}\n".encode() + b"0000000000 65535 f \n"
    for number in range(1, size):
        if number in offsets:
            out += f"{offsets[number]:010d} 00000 n \n".encode()
        else:
            out += b"0000000000 65535 f \n"
    out += f"trailer\n<< /Size {size} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _stream(data: bytes, *, extra: bytes = b"", compress: bool = False) -> bytes:
    if compress:
        data = zlib.compress(data, 9)
        extra += b" /Filter /FlateDecode"
    return b"<< /Length %d%s >>\nstream\n" % (len(data), extra) + data + b"\nendstream"


_CATALOG = b"<< /Type /Catalog /Pages 2 0 R >>"
_ONE_PAGE = b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"
_FONT = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"


def nested_forms_pdf(*, depth: int = 3, fan: int = 60, leaf_lines: int = 1000) -> bytes:
    """One page that draws a form that draws ``fan`` copies of a form that draws ... and at
    the bottom ``leaf_lines`` lines of text: 22 KB that pypdf must walk 3,600 times (under its
    own limit of 5,000 form invocations per page), producing about 40 million characters."""
    objects = {1: _CATALOG, 2: _ONE_PAGE, 4: _FONT}
    first = 10
    objects[3] = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R"
        b" >> /XObject << /X %d 0 R >> >> /Contents 5 0 R >>" % first
    )
    objects[5] = _stream(b"/X Do")
    for level in range(depth):
        number = first + level
        if level < depth - 1:
            body = b" ".join([b"/X Do"] * fan)
            resources = b"/Resources << /XObject << /X %d 0 R >> >>" % (number + 1)
        else:
            body = b"BT /F1 10 Tf " + b"(hello world) Tj T* " * leaf_lines + b"ET"
            resources = b"/Resources << /Font << /F1 4 0 R >> >>"
        objects[number] = _stream(
            body, extra=b" /Type /XObject /Subtype /Form /BBox [0 0 612 792] " + resources
        )
    return write_pdf(objects)


def inflating_string_pdf(*, characters: int = 70_000_000) -> bytes:
    """One page whose 68 KB content stream inflates to a single 70-million-character string
    (just under pypdf's 75 MB decompression cap): read in-process, pypdf needs about 880 MB
    and over a minute for it."""
    content = b"BT /F1 10 Tf (" + b"a" * characters + b") Tj ET"
    objects = {
        1: _CATALOG,
        2: _ONE_PAGE,
        3: b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1"
        b" 4 0 R >> >> /Contents 5 0 R >>",
        4: _FONT,
        5: _stream(content, compress=True),
    }
    return write_pdf(objects)


def encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(report_pdf())))
    writer.encrypt(user_password="harbour", algorithm="RC4-128")
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
