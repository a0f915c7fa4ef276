"""Extraction throughput: our pipeline against raw trafilatura on the same bytes.

The measurement itself is ``evals/bench_sources.py`` (it owns the method); this runs it in a
child process, so its frozen web and imports do not disturb the other benchmarks, and reads
its figures back.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).resolve().parent.parent / "bench_sources.py"
_NAMES = {
    "pipeline (extract_document)": "pipeline_pages_per_s",
    "direct (trafilatura.extract)": "trafilatura_pages_per_s",
    "PDF pipeline (pypdf, per document)": "pdf_pages_per_s",
    "fetch + extract over loopback": "fetch_and_extract_pages_per_s",
    "pipeline on real documentation": "real_docs_pipeline_pages_per_s",
    "direct on real documentation": "real_docs_trafilatura_pages_per_s",
}


def parse(output: str) -> dict[str, Any]:
    """The figures ``bench_sources.py`` printed."""
    figures: dict[str, Any] = {}
    for line in output.splitlines():
        line = line.strip()
        if line.startswith("HTML pages in the frozen corpus"):
            numbers = [int(n) for n in re.findall(r"\d+", line)]
            figures.update(html_pages=numbers[0], pdfs=numbers[1], rounds=numbers[2])
        elif line.startswith("ratio pipeline / direct"):
            figures["ratio_pipeline_to_trafilatura"] = float(line.rsplit(":", 1)[1])
        elif line.startswith("ratio on real documentation"):
            figures["real_docs_ratio_pipeline_to_trafilatura"] = float(line.rsplit(":", 1)[1])
        elif line.startswith("real documentation pages"):
            figures["real_docs_pages"] = int(re.findall(r"\d+", line)[0])
        else:
            # Table rows: a name, then the median (and the best) separated by wide gaps.
            cells = re.split(r"\s{2,}", line)
            if cells[0] in _NAMES and len(cells) > 1:
                figures[_NAMES[cells[0]]] = float(cells[1])
    return figures


def measure(*, rounds: int = 15) -> dict[str, Any]:
    """Run the extraction benchmark once; raises when it fails or prints no ratio."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--rounds", str(rounds)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    figures = parse(done.stdout)
    if done.returncode != 0 or "ratio_pipeline_to_trafilatura" not in figures:
        raise RuntimeError(f"bench_sources.py failed: {done.stderr.strip()[-500:]}")
    figures["note"] = (
        "pages per second of extract_document (trafilatura plus headings, gate detection, "
        "normalisation, bounding, hashing) over trafilatura.extract on the same response "
        "bytes; a ratio above 1 means our pipeline is faster (gated pages are refused early)"
    )
    return figures
