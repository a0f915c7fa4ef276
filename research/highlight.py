"""Render a stored snapshot with evidence excerpts marked at their stored offsets."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe


@dataclass(frozen=True)
class Span:
    start: int
    end: int
    label: str


def highlight_spans(text: str, spans: Iterable[Span]) -> SafeString:
    """Escape ``text`` and wrap each span in ``<mark>``.

    Spans outside the text are ignored; overlapping spans are clipped so the
    markup stays well formed and every character is shown exactly once.
    """
    parts: list[str] = []
    cursor = 0
    for span in sorted(spans, key=lambda s: (s.start, s.end)):
        start, end = max(span.start, cursor), min(span.end, len(text))
        if start >= end:
            continue
        parts.append(escape(text[cursor:start]))
        parts.append(
            format_html('<mark class="evidence" title="{}">{}</mark>', span.label, text[start:end])
        )
        cursor = end
    parts.append(escape(text[cursor:]))
    return mark_safe("".join(parts))  # noqa: S308 - every part above is escaped
