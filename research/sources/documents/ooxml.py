"""Opening an Office Open XML package (a DOCX is a ZIP of XML parts) without trusting it.

Two kinds of attack hide in such a file. A *zip bomb* declares or holds parts that expand far
beyond the upload's size; ``open_package`` checks the central directory against the limits
below before a single part is decompressed, and zipfile never inflates a member past the size
the directory declares, so a member that lies about its size ends in a CRC error instead of
a flood. *Hostile XML* (entity expansion, external entities, DTDs that fetch URLs) is refused
before parsing whenever it declares a document type — Office never writes one — and parsed
with a parser that resolves no entities, loads no DTD and touches no network in any case.
"""

from __future__ import annotations

import io
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

from lxml import etree

from research.sources.documents.errors import DocumentRefused

MIB = 1024 * 1024

# A Word document is a few dozen parts; one with a thousand pictures has about a thousand.
# Far more parts than that only make the central directory expensive to walk.
MAX_PARTS = 2_000
# Word's own specification limits a document file, pictures included, to 512 MB.
MAX_UNPACKED_BYTES = 512 * MIB
# Word limits a document's text to 32 MB; the XML around the characters (runs, properties,
# revision ids) takes a few times that, so no part Word writes needs more than this.
MAX_PART_BYTES = 128 * MIB
# WordprocessingML compresses about 5-20 to 1, very repetitive tables up to about 50 to 1;
# DEFLATE itself tops out near 1,000 to 1, which only a bomb approaches. Apache POI, the Java
# Office library, refuses the same ratio (its minimum inflate ratio of 1 %).
MAX_COMPRESSION_RATIO = 100
# Tiny parts compress oddly (a 40-byte part may inflate to 5 KB of defaults) and cannot hurt;
# the ratio is only judged above this size, as POI does.
RATIO_GRACE_BYTES = 100 * 1024
# Word writes stored and deflated members only; other methods (bzip2, LZMA) are refused so
# that only the one decompressor whose limits we know runs on untrusted data.
_METHODS = frozenset({zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED})
# Bit 0 of a member's general-purpose flags: the member is encrypted.
_ENCRYPTED_FLAG = 0x1

# Resolves no entities, loads no DTD, never reaches the network, keeps libxml2's own limits on
# depth and node size (huge_tree off); comments and processing instructions carry no text.
_PARSER_OPTIONS = {
    "resolve_entities": False,
    "load_dtd": False,
    "dtd_validation": False,
    "no_network": True,
    "huge_tree": False,
    "remove_comments": True,
    "remove_pis": True,
}


def xml_parser() -> etree.XMLParser:
    """A hardened lxml parser for one untrusted XML part."""
    return etree.XMLParser(**_PARSER_OPTIONS)


def _refuse_bomb(detail: str) -> DocumentRefused:
    return DocumentRefused(
        "archive_bomb", f"This DOCX file {detail}; it looks like a zip bomb and was not read."
    )


def _damaged(what: str = "its ZIP structure cannot be read") -> DocumentRefused:
    return DocumentRefused("damaged", f"This DOCX file is damaged ({what}).")


@dataclass
class Package:
    """An opened, checked package; ``read`` and ``parse`` give its parts within the limits."""

    archive: zipfile.ZipFile

    def names(self) -> set[str]:
        """The part names, as stored in the archive."""
        return {info.filename for info in self.archive.infolist()}

    def read(self, name: str) -> bytes | None:
        """The inflated bytes of one part, or ``None`` when the package has no such part.

        zipfile never inflates a member past the size the directory declares (which
        ``open_package`` has bounded), and a member holding more than it declares fails its
        CRC check, so what comes back is never larger than what was checked.
        """
        try:
            info = self.archive.getinfo(name)
        except KeyError:
            return None
        try:
            with self.archive.open(info) as stream:
                data = stream.read()
        except (zipfile.BadZipFile, EOFError, OSError, ValueError, zlib.error):
            raise _damaged(f"{name} cannot be unpacked") from None
        return data

    def parse(self, name: str) -> etree._Element | None:
        """One part parsed with the hardened parser, or ``None`` when it is absent."""
        data = self.read(name)
        if data is None:
            return None
        refuse_doctype_bytes(data, name)
        try:
            root = etree.fromstring(data, parser=xml_parser())
        except etree.XMLSyntaxError as exc:
            raise _damaged(f"{name} is not well-formed XML: {exc.msg}") from None
        refuse_doctype(root.getroottree(), name)
        return root

    def iterparse(self, name: str, tags: tuple[str, ...]) -> Iterator[etree._Element]:
        """Elements with one of ``tags`` as they end, parsing the part incrementally.

        The caller may clear what it has read, so a long document is never held as one tree.
        """
        data = self.read(name)
        if data is None:
            return
        refuse_doctype_bytes(data, name)
        events = etree.iterparse(io.BytesIO(data), events=("end",), tag=tags, **_PARSER_OPTIONS)
        checked = False
        try:
            for _event, element in events:
                if not checked:
                    refuse_doctype(element.getroottree(), name)
                    checked = True
                yield element
        except etree.XMLSyntaxError as exc:
            raise _damaged(f"{name} is not well-formed XML: {exc.msg}") from None
        if not checked and events.root is not None:
            refuse_doctype(events.root.getroottree(), name)


def _unsafe(name: str) -> DocumentRefused:
    return DocumentRefused(
        "unsafe_xml",
        f"This DOCX file declares an XML document type in {name}, which Word never writes "
        "(it is how entity-expansion and external-entity attacks work); it was not read.",
    )


# "<!DOCTYPE" as it appears in a part encoded in UTF-8 (or any ASCII superset), UTF-16 or
# UTF-32: the only encodings an XML parser detects without a declaration.
_DOCTYPE_MARKS = tuple(
    "<!DOCTYPE".encode(encoding)
    for encoding in ("ascii", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be")
)


def refuse_doctype_bytes(data: bytes, name: str) -> None:
    """Refuse a part whose bytes hold a document type declaration, before it is parsed.

    In XML the characters ``<!DOCTYPE`` can only be markup (in text they are escaped), so
    this finds every declaration; it may also refuse one inside a comment, which Office does
    not write either.
    """
    if any(mark in data for mark in _DOCTYPE_MARKS):
        raise _unsafe(name)


def refuse_doctype(tree: etree._ElementTree, name: str) -> None:
    """Refuse a parsed part that carries a document type declaration (a second line behind
    ``refuse_doctype_bytes``, for encodings it does not know)."""
    info = tree.docinfo
    if info.doctype or info.internalDTD is not None or info.externalDTD is not None:
        raise _unsafe(name)


def open_package(data: bytes) -> Package:
    """Open a ZIP and check its central directory against the decompression limits.

    Nothing is decompressed here. Raises ``DocumentRefused`` for a damaged archive, duplicate
    or too many parts, encrypted parts, unknown compression methods, declared sizes over the
    limits and compression ratios no document reaches.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError):
        raise _damaged() from None
    if len(members) > MAX_PARTS:
        raise _refuse_bomb(f"holds {len(members):,} parts, more than the {MAX_PARTS:,} allowed")
    names = [info.filename for info in members]
    if len(set(names)) != len(names):
        raise _damaged("two parts share one name")
    total = 0
    for info in members:
        if info.flag_bits & _ENCRYPTED_FLAG:
            raise DocumentRefused(
                "encrypted",
                "This DOCX file is encrypted; save it without a password and upload it again.",
            )
        if info.compress_type not in _METHODS:
            raise _damaged(f"{info.filename} uses a compression method Word never writes")
        if info.file_size > MAX_PART_BYTES:
            raise _refuse_bomb(
                f"holds a part ({info.filename}) that expands to more than "
                f"{MAX_PART_BYTES // MIB} MB"
            )
        if info.file_size > RATIO_GRACE_BYTES and info.file_size > MAX_COMPRESSION_RATIO * max(
            info.compress_size, 1
        ):
            ratio = info.file_size // max(info.compress_size, 1)
            raise _refuse_bomb(
                f"holds a part ({info.filename}) compressed {ratio:,} to 1, beyond any document"
            )
        total += info.file_size
    if total > MAX_UNPACKED_BYTES:
        raise _refuse_bomb(f"expands to more than {MAX_UNPACKED_BYTES // MIB} MB in all")
    return Package(archive=archive)
