"""DOCX (WordprocessingML) to document blocks, with the standard library's zipfile and lxml.

The package is opened through ``ooxml.open_package`` (decompression limits, hardened XML) and
the body of ``word/document.xml`` is read incrementally: each top-level paragraph or table is
turned into blocks as soon as it ends and then dropped, so a long document is never held as
one tree. A paragraph is a heading when its outline level or its style says so — Word's
built-in "Title" and "Heading 1" to "Heading 9" styles, or any style based on them, in any
interface language (styles.xml keeps the English names) — a list item when it carries
numbering, else running text. Tables become rows of cells; text boxes, content controls and
field results are read where they stand; deleted revisions, field codes and the fallback
copies of drawings are not text. Headers, footers, comments and footnotes are left out, as
the web pipeline leaves out a page's navigation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from research.sources.documents.ooxml import Package, open_package
from research.sources.documents.structure import (
    Block,
    HeadingBlock,
    ListBlock,
    ParagraphBlock,
    TableBlock,
)
from research.sources.snapshot import normalize_inline

# Word writes the transitional namespace; "Strict Open XML" documents use the second.
_WORD_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)
_MC = "{http://schemas.openxmlformats.org/markup-compatibility/2006}"
_DC = "{http://purl.org/dc/elements/1.1/}"
_DCTERMS = "{http://purl.org/dc/terms/}"
_HEADING_NAME = re.compile(r"^heading ([1-9])$")
_HEADING_ID = re.compile(r"^heading([1-9])$", re.IGNORECASE)
# outlineLvl 0-8 are the nine heading levels; 9 means body text.
_BODY_TEXT_LEVEL = 9
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}")


class _Names:
    """Qualified tag and attribute names in one WordprocessingML namespace."""

    def __init__(self, namespace: str) -> None:
        w = "{" + namespace + "}"
        self.w = w
        self.p, self.tbl, self.tr, self.tc = w + "p", w + "tbl", w + "tr", w + "tc"
        self.sdt, self.sdt_content, self.custom_xml = w + "sdt", w + "sdtContent", w + "customXml"
        self.ppr, self.pstyle, self.outline, self.numpr = (
            w + "pPr",
            w + "pStyle",
            w + "outlineLvl",
            w + "numPr",
        )
        self.num_id, self.val = w + "numId", w + "val"
        self.t, self.tab, self.br, self.cr = w + "t", w + "tab", w + "br", w + "cr"
        self.no_break_hyphen = w + "noBreakHyphen"
        # Subtrees that hold no visible text of the paragraph (properties, deleted revisions,
        # field codes) or hold a second copy of it (a drawing's fallback for old readers).
        self.skipped = frozenset(
            {
                w + "pPr",
                w + "rPr",
                w + "del",
                w + "delText",
                w + "instrText",
                w + "delInstrText",
                w + "fldData",
                _MC + "Fallback",
            }
        )


@dataclass
class _Style:
    name: str = ""
    based_on: str | None = None
    outline_level: int | None = None
    numbered: bool = False


@dataclass
class DocxDocument:
    """The blocks of a Word document and the metadata of its core properties."""

    blocks: list[Block]
    title: str = ""
    author: str | None = None
    published_at: str | None = None
    language: str | None = None


@dataclass
class _Reader:
    names: _Names
    styles: dict[str, _Style]
    blocks: list[Block] = field(default_factory=list)
    items: list[str] = field(default_factory=list)

    def flush_list(self) -> None:
        if self.items:
            self.blocks.append(ListBlock(tuple(self.items)))
            self.items = []

    def element(self, element: etree._Element) -> None:
        """One element of the body (or of a content control or custom-XML wrapper in it)."""
        n = self.names
        if element.tag == n.p:
            self.paragraph(element)
        elif element.tag == n.tbl:
            self.flush_list()
            rows = tuple(tuple(row) for row in table_rows(element, n))
            if rows:
                self.blocks.append(TableBlock(rows))
        elif element.tag == n.sdt:
            content = element.find(n.sdt_content)
            for child in content if content is not None else ():
                self.element(child)
        elif element.tag == n.custom_xml:
            for child in element:
                self.element(child)

    def paragraph(self, paragraph: etree._Element) -> None:
        text = normalize_inline(paragraph_text(paragraph, self.names))
        if not text:
            return
        level, numbered = _paragraph_role(paragraph, self.names, self.styles)
        if level is not None:
            self.flush_list()
            self.blocks.append(HeadingBlock(text, level))
        elif numbered:
            self.items.append(text)
        else:
            self.flush_list()
            self.blocks.append(ParagraphBlock(text))


def parse_docx(data: bytes) -> DocxDocument:
    """Read a DOCX file into blocks and metadata.

    Raises ``DocumentRefused`` for archives over the decompression limits, hostile or
    malformed XML and missing main parts (see ``ooxml``).
    """
    package = open_package(data)
    styles, language = _styles(package)
    reader: _Reader | None = None
    tags = tuple(
        f"{{{namespace}}}{local}"
        for namespace in _WORD_NAMESPACES
        for local in ("p", "tbl", "sdt", "customXml")
    )
    for element in package.iterparse("word/document.xml", tags):
        parent = element.getparent()
        if parent is None or etree.QName(parent).localname != "body":
            continue
        if reader is None:
            reader = _Reader(names=_Names(etree.QName(element).namespace or ""), styles=styles)
        reader.element(element)
        # Drop what has been read: the element's content and the siblings before it.
        element.clear(keep_tail=False)
        while element.getprevious() is not None:
            del parent[0]
    blocks: list[Block] = []
    if reader is not None:
        reader.flush_list()
        blocks = reader.blocks
    title, author, published = _core_properties(package)
    return DocxDocument(
        blocks=blocks, title=title, author=author, published_at=published, language=language
    )


def paragraph_text(paragraph: etree._Element, names: _Names) -> str:
    """The visible text of one paragraph, text boxes and field results included."""
    parts: list[str] = []

    def visit(element: etree._Element) -> None:
        for child in element:
            tag = child.tag
            if not isinstance(tag, str) or tag in names.skipped:
                continue
            if tag == names.t:
                parts.append(child.text or "")
            elif tag in (names.tab, names.br, names.cr):
                parts.append(" ")
            elif tag == names.no_break_hyphen:
                parts.append("-")
            elif tag == names.p:
                # A paragraph of a text box inside this one.
                parts.append(" ")
                visit(child)
                parts.append(" ")
            else:
                visit(child)

    visit(paragraph)
    return "".join(parts)


def table_rows(table: etree._Element, names: _Names) -> list[list[str]]:
    """The rows of a table as cell texts; a table nested in a cell is read into that cell."""
    rows: list[list[str]] = []
    for row in _children(table, names.tr, names):
        cells = [
            normalize_inline(_cell_text(cell, names)) for cell in _children(row, names.tc, names)
        ]
        if any(cells):
            rows.append(cells)
    return rows


def _cell_text(cell: etree._Element, names: _Names) -> str:
    parts: list[str] = []
    for child in _children(cell, None, names):
        if child.tag == names.p:
            parts.append(paragraph_text(child, names))
        elif child.tag == names.tbl:
            parts.extend(" ".join(row) for row in table_rows(child, names))
    return " ".join(parts)


def _children(element: etree._Element, tag: str | None, names: _Names) -> list[etree._Element]:
    """Children with ``tag`` (any when ``None``), looking through content-control and
    custom-XML wrappers, which Word puts around rows, cells and paragraphs alike."""
    found: list[etree._Element] = []
    for child in element:
        if child.tag == names.sdt:
            content = child.find(names.sdt_content)
            if content is not None:
                found.extend(_children(content, tag, names))
        elif child.tag == names.custom_xml:
            found.extend(_children(child, tag, names))
        elif isinstance(child.tag, str) and (tag is None or child.tag == tag):
            found.append(child)
    return found


def _paragraph_role(
    paragraph: etree._Element, names: _Names, styles: dict[str, _Style]
) -> tuple[int | None, bool]:
    """The heading level of a paragraph (``None`` for body text) and whether it is numbered."""
    properties = paragraph.find(names.ppr)
    style_id = None
    own_level = None
    own_numbering = None
    if properties is not None:
        style = properties.find(names.pstyle)
        style_id = style.get(names.val) if style is not None else None
        own_level = _outline_level(properties, names)
        own_numbering = _numbering(properties, names)
    # An outline level of its own wins over the style's; 0 says "body text" explicitly.
    level = (own_level or None) if own_level is not None else _style_level(style_id, styles)
    numbered = own_numbering if own_numbering is not None else _style_numbered(style_id, styles)
    return level, numbered


def _outline_level(properties: etree._Element, names: _Names) -> int | None:
    """The heading level an outline level gives (1-6), 0 for body text, ``None`` if unset."""
    element = properties.find(names.outline)
    value = element.get(names.val) if element is not None else None
    if value is None or not value.isdigit():
        return None
    return min(int(value) + 1, 6) if int(value) < _BODY_TEXT_LEVEL else 0


def _numbering(properties: etree._Element, names: _Names) -> bool | None:
    numbering = properties.find(names.numpr)
    if numbering is None:
        return None
    number = numbering.find(names.num_id)
    # numId 0 switches off the numbering a style would give.
    return number is None or number.get(names.val) != "0"


def _style_chain(style_id: str | None, styles: dict[str, _Style]) -> list[tuple[str, _Style]]:
    chain: list[tuple[str, _Style]] = []
    seen: set[str] = set()
    while style_id and style_id not in seen:
        seen.add(style_id)
        style = styles.get(style_id)
        chain.append((style_id, style or _Style()))
        style_id = style.based_on if style else None
    return chain


def _style_level(style_id: str | None, styles: dict[str, _Style]) -> int | None:
    for identifier, style in _style_chain(style_id, styles):
        if style.outline_level is not None:
            return style.outline_level or None
        name = style.name
        match = _HEADING_NAME.match(name) or (None if name else _HEADING_ID.match(identifier))
        if match:
            return min(int(match.group(1)), 6)
        if name == "title" or (not name and identifier.lower() == "title"):
            return 1
    return None


def _style_numbered(style_id: str | None, styles: dict[str, _Style]) -> bool:
    return any(style.numbered for _identifier, style in _style_chain(style_id, styles))


def _styles(package: Package) -> tuple[dict[str, _Style], str | None]:
    """Paragraph styles by id, and the document's default language, from styles.xml."""
    root = package.parse("word/styles.xml")
    if root is None:
        return {}, None
    names = _Names(etree.QName(root).namespace or _WORD_NAMESPACES[0])
    styles: dict[str, _Style] = {}
    for element in root.iter(names.w + "style"):
        if element.get(names.w + "type") not in (None, "paragraph"):
            continue
        identifier = element.get(names.w + "styleId")
        if not identifier:
            continue
        name = element.find(names.w + "name")
        based_on = element.find(names.w + "basedOn")
        properties = element.find(names.ppr)
        styles[identifier] = _Style(
            name=(name.get(names.val) or "").strip().lower() if name is not None else "",
            based_on=based_on.get(names.val) if based_on is not None else None,
            outline_level=_outline_level(properties, names) if properties is not None else None,
            numbered=bool(properties is not None and _numbering(properties, names)),
        )
    language = None
    defaults = root.find(f"{names.w}docDefaults/{names.w}rPrDefault/{names.w}rPr/{names.w}lang")
    if defaults is not None and defaults.get(names.val):
        language = defaults.get(names.val, "").strip().lower()[:35] or None
    return styles, language


def _core_properties(package: Package) -> tuple[str, str | None, str | None]:
    root = package.parse("docProps/core.xml")
    if root is None:
        return "", None, None
    title = normalize_inline(root.findtext(f"{_DC}title") or "")
    author = normalize_inline(root.findtext(f"{_DC}creator") or "") or None
    created = (root.findtext(f"{_DCTERMS}created") or "").strip()
    return title, author, created[:10] if _ISO_DATE.match(created) else None
