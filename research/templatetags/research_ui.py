"""Template filters for research pages: escaped text, excerpts, safe links, durations, labels.

Everything a model wrote, everything a person typed and everything taken from a source
(titles, publishers, excerpts, step summaries) goes through ``clean`` (or ``excerpt``) before
it reaches a page. It is plain text, so it is escaped, never stripped: ``a<b and c>d`` and
``<Task finished coro=<bug() done>>`` show exactly as stored, and a ``<script>`` shows as text
and never runs. Only invisible characters that would make text read differently from what it
is (controls, bidirectional overrides and isolates: "Trojan source") are dropped.
"""

from __future__ import annotations

import re
from typing import Any

from django import template
from django.utils.html import escape, format_html
from django.utils.safestring import SafeString, mark_safe

from research.engine.quality import FIRST_PARTY_LABEL, FIRST_PARTY_NOTE_PREFIX
from research.engine.states import RunStatus
from research.engine.urls import safe_source_url

register = template.Library()

# Control characters (except tab and newline) and the bidirectional overrides and isolates
# that can make text read differently from what it is ("Trojan source").
_INVISIBLE = re.compile(
    r"[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069\u200b\u200e\u200f\ufeff]"
)


def clean_text(value: Any) -> str:
    """Plain text HTML-escaped (``&``, ``<``, ``>`` and both quotes, so it is safe in element
    content and attribute values alike), with invisible control characters removed."""
    if value is None:
        return ""
    return escape(_INVISIBLE.sub("", str(value)))


@register.filter(name="clean")
def clean(value: Any) -> SafeString:
    """``{{ source.title|clean }}``: untrusted text made safe to show."""
    return mark_safe(clean_text(value))  # noqa: S308 - clean_text escapes everything


def is_code_excerpt(evidence: Any) -> bool:
    """Whether an evidence row or contract quotes one whole code block."""
    locator = getattr(evidence, "locator", None)
    if isinstance(locator, dict):
        return bool(locator.get("code"))
    return bool(getattr(locator, "code", False))


@register.filter(name="excerpt")
def excerpt(evidence: Any) -> SafeString:
    """``{{ item|excerpt }}``: an evidence excerpt exactly as stored, escaped. A whole code
    block is shown as code; an excerpt of consecutive blocks keeps its line breaks (the
    excerpt's container has ``white-space: pre-wrap``)."""
    text = getattr(evidence, "excerpt", "") or ""
    if is_code_excerpt(evidence):
        return format_html('<pre class="code"><code>{}</code></pre>', mark_safe(clean_text(text)))  # noqa: S308
    return mark_safe(clean_text(text))  # noqa: S308 - clean_text escapes everything


@register.filter
def source_url(value: Any) -> str:
    """The http(s) URL to link a source by, or "" when the address may not be linked."""
    return safe_source_url(str(value) if value else None) or ""


@register.filter
def duration(seconds: Any) -> str:
    """``75`` → "1 min 15 s"; whole hours and minutes for long spans."""
    try:
        exact = float(seconds)
    except (TypeError, ValueError):
        return ""
    if 0 < exact < 1:
        return "under 1 s"
    total = int(round(exact))
    hours, rest = divmod(max(total, 0), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    if minutes:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    return f"{secs} s"


@register.filter
def thousands(value: Any) -> str:
    """``250000`` → "250,000"."""
    try:
        return f"{int(value):,}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def class_label(source: Any) -> str:
    """A source's class as shown: the first-party heuristic's label when it gave the class,
    otherwise the class's display name."""
    quality = getattr(source, "quality", None)
    notes = quality.get("notes", []) if isinstance(quality, dict) else getattr(quality, "notes", [])
    if any(str(note).startswith(FIRST_PARTY_NOTE_PREFIX) for note in notes or []):
        return FIRST_PARTY_LABEL[0].upper() + FIRST_PARTY_LABEL[1:]
    display = getattr(source, "get_source_class_display", None)
    return display() if callable(display) else label(getattr(source, "source_class", ""))


@register.filter
def label(value: Any) -> str:
    """``reputable_secondary`` → "reputable secondary"."""
    return str(value or "").replace("_", " ")


@register.filter
def get(mapping: Any, key: Any) -> Any:
    """``{{ counts|get:status }}``: a dictionary look-up in a template."""
    try:
        return mapping.get(key)
    except AttributeError:
        return None


@register.filter
def progress_percent(run: Any) -> int:
    """A rough percentage for run lists: finished runs are full, research is measured
    against its search, source and round budget."""
    if run.status in (RunStatus.COMPLETED, RunStatus.BUDGET_EXHAUSTED):
        return 100
    if run.status == RunStatus.SYNTHESIZING:
        return 90
    if run.status not in (RunStatus.RESEARCHING, RunStatus.PAUSED, RunStatus.FAILED):
        return 0
    budget, usage = run.budget or {}, run.usage or {}
    ratios = [
        usage.get(name, 0) / budget[name]
        for name in ("searches", "fetched_sources", "iterations")
        if budget.get(name)
    ]
    return min(85, round(100 * max(ratios, default=0)))
