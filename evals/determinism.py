"""Determinism: the same question on the same frozen web gives the same report.

A run document is compared on what a reader sees (status, plan, report, the sources its
citations name, the searches made, the pages read), with the identifiers that differ by
construction — run, source and evidence ids, which embed the run — numbered in order of
appearance and the frozen web's port left out. ``python -m evals twice`` runs tasks several
times and says which of those parts differed; ``tests/evals/test_determinism.py`` asserts that
none did for every held-out task.

For the held-out set only counts are shown (how many tasks differed, and in which parts): its
tasks are not for reading one by one while the method changes (docs/evaluation.md). For the
other sets the command names each differing task and prints the first differing lines of each
part, which is what finding the tie behind a difference needs.
"""

from __future__ import annotations

import difflib
import json
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO

# Run ids (UUIDs), evidence ids ("ev-" + 20 hex) and any other long hex or decimal id.
_IDS = re.compile(
    r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|ev-[0-9a-f]{20}|"
    r"\b[0-9a-f]{32,64}\b"
)

# The frozen web's port differs between processes (not within one run of the command).
_PORT = re.compile(r"(://[A-Za-z0-9.-]+):\d+")

# The parts of a run document a reader sees, in the order a difference is reported.
PARTS = (
    "status",
    "stop_reason",
    "plan",
    "searches",
    "reads",
    "cited_sources",
    "report",
    "report_markdown",
)

# Lines of a part's difference printed for a task that may be read (tune, fictional).
DIFF_LINES = 40


def shown_parts(document: dict[str, Any]) -> dict[str, Any]:
    """The parts of a run document a reader sees, with run-specific ids numbered in order of
    appearance (over all parts together) and the web's port left out."""
    source_ids = {s["id"]: s for s in document["sources"]}
    shown = {
        "status": document["status"],
        "stop_reason": document["stop_reason"],
        "plan": document["plan"],
        "report": document["report"],
        "report_markdown": document["report_markdown"],
        "cited_sources": [
            source_ids[c["evidence"]["source_id"]]["url"]
            for c in document["citations"]
            if c.get("evidence") and c["evidence"].get("source_id") in source_ids
        ],
        "searches": [s.get("query") for s in document["steps"] if s["kind"] == "search"],
        "reads": sorted(
            _PORT.sub(r"\1", s["url"]) for s in document["sources"] if s["status"] == "fetched"
        ),
    }
    seen: dict[str, str] = {}

    def number(match: re.Match[str]) -> str:
        return seen.setdefault(match.group(0), f"id{len(seen)}")

    text = _PORT.sub(r"\1", json.dumps(shown, sort_keys=True, ensure_ascii=False))
    return json.loads(_IDS.sub(number, text))


def comparable(document: dict[str, Any]) -> str:
    """:func:`shown_parts` as one string: equal for two runs that read the same to a person."""
    return json.dumps(shown_parts(document), sort_keys=True, ensure_ascii=False)


def differing_parts(first: dict[str, Any], second: dict[str, Any]) -> list[str]:
    """The parts (:data:`PARTS`) in which two run documents differ, in that order."""
    return _differing(shown_parts(first), shown_parts(second))


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    return [part for part in PARTS if a[part] != b[part]]


def part_diff(first: dict[str, Any], second: dict[str, Any], part: str) -> list[str]:
    """The unified difference of one part of two run documents, at most DIFF_LINES lines."""
    return _diff_lines(shown_parts(first)[part], shown_parts(second)[part])


def _diff_lines(a: Any, b: Any) -> list[str]:
    lines = difflib.unified_diff(
        json.dumps(a, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
        json.dumps(b, indent=1, sort_keys=True, ensure_ascii=False).splitlines(),
        "first run",
        "later run",
        lineterm="",
        n=1,
    )
    return list(lines)[:DIFF_LINES]


@dataclass
class Repeated:
    """What running each task of a set several times found."""

    tasks: int = 0
    differing: int = 0
    # How many differing tasks differed in each part.
    parts: Counter[str] = field(default_factory=Counter)


def run_repeatedly(
    tasks: Sequence[Any],
    run: Callable[[Any], dict[str, Any]],
    *,
    runs: int,
    readable: bool,
    out: TextIO,
) -> Repeated:
    """Run every task ``runs`` times with ``run`` (task → run document), compare each later
    document with the first and report the differences: per task when ``readable``, as
    counts only otherwise."""
    found = Repeated(tasks=len(tasks))
    for task in tasks:
        first = shown_parts(run(task))
        for _ in range(runs - 1):
            later = shown_parts(run(task))
            parts = _differing(first, later)
            if not parts:
                continue
            found.differing += 1
            found.parts.update(parts)
            if readable:
                out.write(f"{task.id}: differs in {', '.join(parts)}\n")
                for part in parts:
                    out.write("\n".join(_diff_lines(first[part], later[part])) + "\n")
                out.flush()
            break
    return found


def summary(task_set: str, runs: int, found: Repeated) -> str:
    """One line: how many tasks of ``task_set`` gave differing reports, and in which parts."""
    line = (
        f"{task_set}: {found.differing} of {found.tasks} tasks gave differing run documents "
        f"in {runs} runs each"
    )
    if found.parts:
        line += " (" + ", ".join(f"{part} {count}" for part, count in found.parts.items()) + ")"
    return line
