"""Text, source and run-document matching for the eval scorer (``evals.scoring``).

How a fact is stated (normalised, whole words), how a URL names a source, how an excerpt
overlaps a gold passage, and how a run document's statements, citations and excerpts are
read and checked against its stored snapshots. Deterministic; no model or person.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from evals.taskset import GoldFact
from research.engine.ledger import normalize_for_matching

# Contiguous words an excerpt must share with a gold passage (or the whole passage if shorter).
PASSAGE_OVERLAP_WORDS = 8


# --------------------------------------------------------------------------------------------
# Text and source matching
# --------------------------------------------------------------------------------------------

_THOUSANDS = re.compile(r"(?<=\d)[,\u00a0\u202f ](?=\d{3}(?!\d))")


def normalize_text(text: str) -> str:
    """Text in the form facts are matched in: the excerpt-matching form, case-folded, with
    thousands separators removed (``48,200`` and ``48 200`` read as ``48200``)."""
    return _THOUSANDS.sub("", normalize_for_matching(text).casefold())


def states(text: str, variants: Iterable[str]) -> bool:
    """Whether ``text`` contains any of ``variants`` after normalisation, as whole words:
    ``7 per cent`` is not stated by ``27 per cent``, nor ``2.6`` by ``2.65``."""
    folded = normalize_text(text)
    return any(
        re.search(rf"(?<![\w.]){re.escape(normalize_text(variant))}(?!\w)", folded)
        for variant in variants
    )


def states_pattern(text: str, patterns: Iterable[str]) -> bool:
    """Whether any of ``patterns`` occurs in ``text``'s normalised form (case-folded, plain
    quotes and dashes, single spaces, no thousands separators), ignoring case."""
    folded = normalize_text(text)
    return any(re.search(pattern, folded, re.IGNORECASE) for pattern in patterns)


def states_fact(text: str, fact: GoldFact) -> bool:
    """Whether ``text`` states ``fact``: one of its literal variants, or one of its patterns."""
    return states(text, fact.any_of) if fact.any_of else states_pattern(text, fact.patterns)


def source_name(url: str) -> str:
    """``host/path`` of a URL, without scheme, port, query or fragment."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    path = parts.path.rstrip("/")
    return f"{host}{path}"


def matches_source(url: str, names: Iterable[str]) -> bool:
    """Whether ``url`` is one of ``names`` (``host`` for a whole site, ``host/path`` for a page)."""
    name = source_name(url)
    host = name.split("/", 1)[0]
    return any(name == wanted.rstrip("/") or host == wanted for wanted in names)


def _words(text: str) -> list[str]:
    return re.findall(r"\w+", normalize_text(text))


def longest_shared_run(first: Sequence[str], second: Sequence[str]) -> int:
    """Length of the longest run of consecutive words found in both sequences."""
    best = 0
    previous = [0] * (len(second) + 1)
    for word in first:
        current = [0] * (len(second) + 1)
        for index, other in enumerate(second, start=1):
            if word == other:
                current[index] = previous[index - 1] + 1
                best = max(best, current[index])
        previous = current
    return best


def overlaps_passage(excerpt: str, passage: str) -> bool:
    """Whether an excerpt quotes enough of a gold passage to count as finding it."""
    wanted = _words(passage)
    needed = min(PASSAGE_OVERLAP_WORDS, len(wanted))
    return needed > 0 and longest_shared_run(wanted, _words(excerpt)) >= needed


# --------------------------------------------------------------------------------------------
# Reading a run document
# --------------------------------------------------------------------------------------------


def statements(report: dict[str, Any] | None) -> Iterator[dict[str, Any]]:
    """Every statement of a report in reading order."""
    if not report:
        return
    yield from report.get("executive_summary", [])
    for section in report.get("sections", []):
        yield from section.get("statements", [])


def citation_problem(citation: dict[str, Any], run_id: str) -> str | None:
    """Why a citation does not resolve to evidence of this run, or ``None`` when it does."""
    evidence = citation.get("evidence")
    source = citation.get("source")
    if not citation.get("resolved") or evidence is None:
        return f"{citation['evidence_id']} does not exist"
    if evidence.get("run_id") != run_id:
        return f"{citation['evidence_id']} belongs to another run"
    if source is None or source.get("run_id") != run_id:
        return f"the source of {citation['evidence_id']} is not a source of this run"
    if evidence.get("locator_text") is None:
        return f"the locator of {citation['evidence_id']} points outside the stored snapshot"
    snapshot_hash = (evidence.get("locator") or {}).get("snapshot_hash")
    if snapshot_hash and source.get("content_hash") and snapshot_hash != source["content_hash"]:
        return f"the locator of {citation['evidence_id']} refers to another snapshot"
    return None


def excerpt_verified(evidence: dict[str, Any], sources: dict[str, dict[str, Any]]) -> bool:
    """The text at the locator is the excerpt, in a snapshot that is still the one stored."""
    located = evidence.get("locator_text")
    source = sources.get(evidence.get("source_id", ""))
    if located is None or source is None or source.get("snapshot_intact") is False:
        return False
    return normalize_for_matching(located) == normalize_for_matching(evidence["excerpt"])
