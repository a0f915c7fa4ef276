"""The one error an upload can end in: a refusal with a sentence the user can act on."""

from __future__ import annotations

from typing import Literal

RefusalCode = Literal[
    "empty",  # 0 bytes
    "too_large",  # over the per-file limit
    "library_full",  # would take the library over its limit
    "duplicate",  # the same bytes are already in the library
    "unsupported_format",  # not one of the five formats, or an extension we do not read
    "wrong_extension",  # the name says one format, the bytes are another
    "text_encoding",  # text that is neither UTF-8 nor UTF-16/32 with a byte-order mark
    "damaged",  # the format is right but the file cannot be parsed
    "encrypted",  # password-protected
    "archive_bomb",  # a DOCX whose ZIP expands beyond the decompression limits
    "unsafe_xml",  # XML with a document type declaration (entities, external references)
    "no_text",  # parsed, but nothing readable in it (a scanned PDF, an empty document)
    "not_content",  # an HTML file that is a saved CAPTCHA or paywall page
    "timeout",  # the PDF reader ran out of time
    "memory",  # the PDF reader ran out of memory
]


class DocumentRefused(Exception):
    """An uploaded file was not accepted; nothing about it may be stored.

    ``reason`` is one sentence for the person who uploaded the file (it never repeats the
    file's name, which the interface shows beside it); ``code`` is a stable word for programs
    (the API, metrics) that must not parse the sentence.
    """

    def __init__(self, code: RefusalCode, reason: str) -> None:
        super().__init__(reason)
        self.code: RefusalCode = code
        self.reason = reason

    def __str__(self) -> str:
        return self.reason
