"""Document libraries: search time over a 500-document library, and upload-to-searchable time
per MB through the whole upload path.

A library of ``DOCUMENTS`` generated documents (Markdown, plain text and a share of PDFs, a few
pages to a few dozen KB each, each on its own mix of topic words) is uploaded with
``research.libraries.document_upload`` (sniffing, parsing, the PDF reader's own process, the
file written to the documents storage, the row saved). Then:

* **search**: ``LibraryCatalog.search`` — the document search step of a run — for queries
  drawn from the documents' vocabulary. The first search of a document set builds its BM25
  index over every passage (*cold*); later searches reuse it until the set changes (*warm*).
  Both are reported as p50 and p95 over the queries.
* **upload to searchable**: for a ~1 MB file of each format, the time from
  ``document_upload`` until a search of the library finds the new document (which rebuilds
  the library's index, 500 documents included), per MB of uploaded file.

Figures depend on the machine (recorded with them); docs/performance.md summarises them.
"""

from __future__ import annotations

import random
import statistics
import time
from typing import Any

from evals.bench.documents import MB, _as_docx, _as_markdown, _as_pdf, _as_text, _sections
from tests.fixtures.frozen_web.pdf import PdfSource, build_pdf

DOCUMENTS = 500
# One document in ten is a PDF: enough to measure pages, few enough that building the library
# (each PDF read in its own process) stays a minute on a small machine.
PDF_EVERY = 10
QUERIES = 60
_TOPICS = [
    "reservoir",
    "spillway",
    "gate",
    "corrosion",
    "inspection",
    "seepage",
    "culvert",
    "pump",
    "pressure",
    "turbine",
    "sediment",
    "dredging",
    "levee",
    "flood",
    "gauge",
    "rainfall",
    "discharge",
    "treatment",
    "filtration",
    "chlorine",
    "nitrate",
    "phosphate",
    "aquifer",
    "borehole",
    "irrigation",
    "tariff",
    "budget",
    "maintenance",
    "contractor",
    "valve",
    "pipeline",
    "leakage",
    "meter",
    "billing",
    "drought",
    "permit",
    "hydropower",
    "embankment",
    "monitoring",
]
_FILLER = [
    "the",
    "of",
    "and",
    "a",
    "to",
    "in",
    "was",
    "were",
    "on",
    "at",
    "by",
    "for",
    "with",
    "from",
    "that",
    "this",
    "as",
]


def _document(number: int, rng: random.Random) -> tuple[str, bytes]:
    topics = rng.sample(_TOPICS, 6)
    paragraphs = []
    for _ in range(rng.randint(6, 40)):
        words = [rng.choice(topics if rng.random() < 0.4 else _FILLER) for _ in range(60)]
        words.insert(rng.randrange(60), f"{rng.randint(2, 950)}")
        paragraphs.append(" ".join(words).capitalize() + ".")
    title = f"Report {number}: {' and '.join(topics[:2])}"
    if number % PDF_EVERY == 0:
        pages = ["\n\n".join(paragraphs[i : i + 4]) for i in range(0, len(paragraphs), 4)]
        pages[0] = f"# {title}\n\n{pages[0]}"
        source = PdfSource(title=title, author="Bench", created=None, pages=pages)
        return f"report-{number}.pdf", build_pdf(source)
    if number % 2:
        return f"report-{number}.txt", (title + "\n\n" + "\n\n".join(paragraphs)).encode()
    body = "\n\n".join(f"## Part {i}\n\n{p}" if i % 5 == 0 else p for i, p in enumerate(paragraphs))
    return f"report-{number}.md", f"# {title}\n\n{body}\n".encode()


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(*, documents: int = DOCUMENTS, queries: int = QUERIES) -> dict[str, Any]:
    """Build the library, then time searches and uploads (see the module docstring)."""
    from django.conf import settings

    from accounts.models import User
    from research import libraries
    from research.engine.contracts import SourcePolicy
    from research.models import Library
    from research.sources.documents.search import DocumentIndex
    from research.worker.documents import LibraryCatalog, documents_for_policy, load_snapshots

    rng = random.Random(20241201)
    user = User.objects.create_user(username=f"bench-{time.time_ns()}")
    # The benchmark's library holds more than the default 1 GB would ever need; the limits
    # themselves are the tests' business.
    settings.RESEARCH_LIBRARY_MAX_BYTES = 8 * 1024 * MB
    library = libraries.library_create(user=user, name="Bench library")
    started = time.perf_counter()
    total_bytes = 0
    for number in range(1, documents + 1):
        name, data = _document(number, rng)
        total_bytes += len(data)
        libraries.document_upload(library=library, user=user, name=name, data=data)
    build_seconds = time.perf_counter() - started
    policy = SourcePolicy(documents="library", library_id=library.address_id, web=False)

    catalog = LibraryCatalog()
    words = [" ".join(rng.sample(_TOPICS, 3)) for _ in range(queries)]
    cold, warm, results = [], [], []
    for query in words:
        fresh = LibraryCatalog()  # a worker that has not searched this library yet
        began = time.perf_counter()
        fresh.search(query, policy=policy, limit=10)
        cold.append(time.perf_counter() - began)
    catalog.search(words[0], policy=policy, limit=10)
    for query in words:
        began = time.perf_counter()
        found = catalog.search(query, policy=policy, limit=10)
        warm.append(time.perf_counter() - began)
        results.append(len(found))
    index = catalog.index(policy)
    # Where a cold search goes: reading and validating the stored snapshots, then BM25.
    began = time.perf_counter()
    snapshots = load_snapshots(documents_for_policy(policy))
    loaded = time.perf_counter()
    DocumentIndex(snapshots)
    load_ms, index_ms = (loaded - began) * 1000, (time.perf_counter() - loaded) * 1000

    uploads: dict[str, Any] = {}
    writers = {"text": _as_text, "markdown": _as_markdown, "docx": _as_docx, "pdf": _as_pdf}
    suffixes = {"text": "txt", "markdown": "md", "docx": "docx", "pdf": "pdf"}
    for kind, write in writers.items():
        # One word no other document has, so the search that follows must find exactly the
        # new document.
        marker = f"benchmarkmarker{kind}"
        closing = {
            "heading": "Closing note",
            "paragraphs": [f"The closing note mentions {marker}."],
            "items": ["One item"],
            "rows": [["Key", "Value"], ["marker", marker]],
        }
        data = write([*_sections(MB), closing])
        began = time.perf_counter()
        document = libraries.document_upload(
            library=library, user=user, name=f"big.{suffixes[kind]}", data=data
        )
        stored = time.perf_counter()
        found = catalog.search(marker, policy=policy, limit=5)
        seconds = time.perf_counter() - began
        assert found and found[0].url.endswith(document.address_id), f"{kind} was not found"
        uploads[kind] = {
            "file_mb": round(len(data) / MB, 2),
            "upload_s": round(stored - began, 2),
            "reindex_s": round(seconds - (stored - began), 2),
            "seconds": round(seconds, 2),
            "s_per_mb": round(seconds / (len(data) / MB), 2),
        }
    Library.objects.filter(pk=library.pk).delete()
    return {
        "documents": documents,
        "library_mb": round(total_bytes / MB, 1),
        "passages": len(index.passages),
        "build_seconds": round(build_seconds, 1),
        "queries": queries,
        "cold_p50_ms": round(statistics.median(cold) * 1000, 1),
        "cold_p95_ms": round(_percentile(cold, 0.95) * 1000, 1),
        "warm_p50_ms": round(statistics.median(warm) * 1000, 1),
        "warm_p95_ms": round(_percentile(warm, 0.95) * 1000, 1),
        "mean_results": round(statistics.mean(results), 1),
        "cold_load_ms": round(load_ms),
        "cold_index_ms": round(index_ms),
        "upload_to_searchable": uploads,
    }
