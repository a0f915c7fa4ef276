"""Uploaded documents: upload-to-searchable time per MB for each format, and what the PDF
reader's separate process costs.

The same generated report (headings, paragraphs, lists and tables; about 1 MB of text) is
written as plain text, Markdown, HTML, DOCX and PDF, and each file goes through
``parse_upload`` and then the engine's ``SnapshotIndex`` (what excerpt verification searches):
that is "searchable" until the library search index arrives with the model layer. Figures
are medians of a few rounds of each step, reported as MB of uploaded file (and of snapshot
text) per second and seconds per MB;
the PDF reader's start-up (a one-page PDF) and the ratio of reading a PDF through the reader
process to calling ``extract_pdf`` in-process show what isolation costs.

``python -m evals.bench.documents --hostile`` also reads the two hostile PDFs of the tests
*in-process* without limits (each in a child process so the machine survives), to show what
the reader's limits stop; it takes minutes and is not part of ``make bench``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from datetime import date
from html import escape
from typing import Any

from research.engine.ledger import SnapshotIndex
from research.sources.documents import DocumentLimits, document_url, parse_upload
from research.sources.extract_pdf import extract_pdf
from tests.fixtures.frozen_web.pdf import MAX_LINES, WRAP, PdfSource, build_pdf
from tests.sources.documents.files import build_docx, paragraph, table

MB = 1024 * 1024
URL = document_url("bench", "doc-1")
# Large enough that per-file costs (process start, parser set-up) are a small share, small
# enough that the PDF (about 3 KB of text a page) stays under the reader's 500-page limit.
TEXT_BYTES = MB
_PROSE = (
    "the survey measured flow rates at each station across three seasons while engineers "
    "recorded pressure loss and pump hours against the design values published in the "
    "previous review of the network maintenance budget which rose sharply after storms "
    "damaged two culverts near the northern reservoir in early spring"
)


def _sections(text_bytes: int) -> list[dict[str, Any]]:
    """A deterministic report: sections of a heading, prose, a list and a small table."""
    words = _PROSE.split()
    rng = random.Random(20240701)
    sections: list[dict[str, Any]] = []
    size = 0
    while size < text_bytes:
        number = len(sections) + 1
        paragraphs = [
            " ".join(rng.choice(words) for _ in range(rng.randint(40, 80))).capitalize() + "."
            for _ in range(4)
        ]
        items = [
            f"Station {number}.{index} reported {rng.randint(10, 99)} faults" for index in range(3)
        ]
        rows = [["Season", "Flow", "Loss"]] + [
            [season, str(rng.randint(100, 900)), f"{rng.random():.2f}"]
            for season in ("Spring", "Summer", "Autumn")
        ]
        sections.append(
            {"heading": f"Section {number}", "paragraphs": paragraphs, "items": items, "rows": rows}
        )
        size += sum(len(p) for p in paragraphs) + sum(len(i) for i in items) + 60
    return sections


def _as_text(sections: list[dict[str, Any]]) -> bytes:
    parts = []
    for section in sections:
        parts.append(section["heading"])
        parts.extend(section["paragraphs"])
        parts.append("\n".join(section["items"]))
        parts.append("\n".join("\t".join(row) for row in section["rows"]))
    return "\n\n".join(parts).encode()


def _as_markdown(sections: list[dict[str, Any]]) -> bytes:
    parts = []
    for section in sections:
        parts.append("## " + section["heading"])
        parts.extend(section["paragraphs"])
        parts.append("\n".join(f"- {item}" for item in section["items"]))
        rows = section["rows"]
        parts.append(
            "\n".join(
                ["| " + " | ".join(rows[0]) + " |", "|---|---|---|"]
                + ["| " + " | ".join(row) + " |" for row in rows[1:]]
            )
        )
    return "\n\n".join(parts).encode()


def _as_html(sections: list[dict[str, Any]]) -> bytes:
    parts = ["<!DOCTYPE html><html lang=en><head><title>Network review</title></head><body>"]
    parts.append("<article><h1>Network review</h1>")
    for section in sections:
        parts.append(f"<h2>{escape(section['heading'])}</h2>")
        parts.extend(f"<p>{escape(p)}</p>" for p in section["paragraphs"])
        parts.append("<ul>" + "".join(f"<li>{escape(i)}</li>" for i in section["items"]) + "</ul>")
        parts.append(
            "<table>"
            + "".join(
                "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>"
                for row in section["rows"]
            )
            + "</table>"
        )
    parts.append("</article></body></html>")
    return "".join(parts).encode()


def _as_docx(sections: list[dict[str, Any]]) -> bytes:
    body = []
    for section in sections:
        body.append(paragraph(section["heading"], "Heading1"))
        body.extend(paragraph(p) for p in section["paragraphs"])
        body.extend(paragraph(i, "ListBullet") for i in section["items"])
        body.append(table(section["rows"]))
    return build_docx("".join(body))


def _pdf_lines(block: str) -> int:
    """How many lines the frozen web's PDF writer gives a block (its own wrapping rule)."""
    if block.startswith("# "):
        return 2
    if "|" in block:
        return block.count("\n") + 2
    return len(textwrap.wrap(" ".join(block.split()), WRAP)) + 1


def _as_pdf(sections: list[dict[str, Any]]) -> bytes:
    pages: list[list[str]] = [[]]
    used = 0
    for section in sections:
        blocks = [
            "# " + section["heading"],
            *section["paragraphs"],
            "\n".join(section["items"]),
            "\n".join(" | ".join(row) for row in section["rows"]),
        ]
        for block in blocks:
            lines = _pdf_lines(block)
            if used + lines > MAX_LINES:
                pages.append([])
                used = 0
            pages[-1].append(block)
            used += lines
    return build_pdf(
        PdfSource(
            title="Network review",
            author="Bench",
            created=date(2024, 7, 1),
            pages=["\n\n".join(page) for page in pages],
        )
    )


def _median_seconds(action: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def measure(*, rounds: int = 3) -> dict[str, Any]:
    """Upload-to-searchable figures for each format (see the module docstring)."""
    sections = _sections(TEXT_BYTES)
    files = {
        "text": ("report.txt", _as_text(sections)),
        "markdown": ("report.md", _as_markdown(sections)),
        "html": ("report.html", _as_html(sections)),
        "docx": ("report.docx", _as_docx(sections)),
        "pdf": ("report.pdf", _as_pdf(sections)),
    }
    limits = DocumentLimits()
    formats: dict[str, Any] = {}
    for kind, (name, data) in files.items():
        document = parse_upload(name, data, url=URL, limits=limits)
        parse = _median_seconds(
            lambda n=name, d=data: parse_upload(n, d, url=URL, limits=limits), rounds
        )
        index = _median_seconds(
            lambda doc=document: SnapshotIndex(doc.text, headings=doc.headings, pages=doc.pages),
            rounds,
        )
        file_mb = len(data) / MB
        searchable = parse + index
        formats[kind] = {
            "file_mb": round(file_mb, 2),
            "text_mb": round(document.content_bytes / MB, 2),
            "headings": len(document.headings),
            "pages": len(document.pages),
            "truncated": document.truncated,
            "parse_s": round(parse, 3),
            "index_s": round(index, 3),
            "file_mb_per_s": round(file_mb / searchable, 2),
            "s_per_file_mb": round(searchable / file_mb, 3),
            "text_mb_per_s": round(document.content_bytes / MB / searchable, 2),
        }
    pdf = files["pdf"][1]
    in_process = _median_seconds(
        lambda: extract_pdf(pdf, url="bench", max_chars=limits.max_text_bytes), rounds
    )
    one_page = build_pdf(
        PdfSource(title="One", author="Bench", created=None, pages=["One page of text."])
    )
    start_up = _median_seconds(
        lambda: parse_upload("one.pdf", one_page, url=URL, limits=limits), rounds
    )
    return {
        "rounds": rounds,
        "formats": formats,
        "pdf_in_process_seconds": round(in_process, 3),
        "pdf_reader_ratio": round(formats["pdf"]["parse_s"] / in_process, 2),
        "pdf_one_page_seconds": round(start_up, 3),
        "note": (
            "upload-to-searchable = parse_upload (sniffing, parsing, snapshot, hash) plus the "
            "engine's SnapshotIndex; MB are MiB of uploaded file; pdf_reader_ratio is the PDF "
            "through its own process over extract_pdf in-process on the same bytes"
        ),
    }


_HOSTILE_SCRIPT = """
import io, resource, sys, time
from pypdf import PdfReader
from tests.sources.documents import files
data = getattr(files, sys.argv[1])()
started = time.perf_counter()
try:
    text = PdfReader(io.BytesIO(data)).pages[0].extract_text()
    outcome = f"{len(text):,} characters"
except Exception as exc:
    outcome = type(exc).__name__
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"{len(data)} {time.perf_counter() - started:.1f} {peak} {outcome}")
"""


def hostile(*, cap_seconds: float) -> dict[str, Any]:
    """Read each hostile test PDF with pypdf in-process (no limits), up to ``cap_seconds``."""
    results: dict[str, Any] = {}
    for builder in ("nested_forms_pdf", "inflating_string_pdf"):
        try:
            done = subprocess.run(
                [sys.executable, "-c", _HOSTILE_SCRIPT, builder],
                capture_output=True,
                text=True,
                timeout=cap_seconds,
                check=True,
            )
            size, seconds, peak, outcome = done.stdout.split(" ", 3)
            results[builder] = {
                "file_bytes": int(size),
                "seconds": float(seconds),
                "peak_rss_mb": int(peak),
                "outcome": outcome.strip(),
            }
        except subprocess.TimeoutExpired:
            results[builder] = {"seconds": f"> {cap_seconds:g}", "outcome": "still reading"}
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evals.bench.documents")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--hostile", action="store_true", help="also read the hostile PDFs in-process"
    )
    parser.add_argument("--cap", type=float, default=900.0, help="seconds per hostile file")
    args = parser.parse_args(argv)
    result = measure(rounds=args.rounds)
    if args.hostile:
        result["hostile_in_process"] = hostile(cap_seconds=args.cap)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
