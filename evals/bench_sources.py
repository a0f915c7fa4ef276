"""Extraction throughput of the source pipeline against calling trafilatura directly.

Run with ``python evals/bench_sources.py [--rounds N]``. The frozen web is started on
127.0.0.1, every HTML page of its corpus is fetched once through ``SafeFetcher``, and then
the same response bytes are extracted over and over:

* **pipeline** - ``research.sources.extract.extract_document``: trafilatura plus our
  heading walk, gate detection, snapshot normalisation, bounding and hashing;
* **direct** - ``trafilatura.extract(bytes, with_metadata=True)``, the plain call.

The figure that matters is the ratio pipeline / direct (1.0 means our work is free).
PDF extraction and the full fetch-and-extract loop over loopback are printed for context.
It is a script, not a timed test: absolute figures depend on the machine.
"""

import argparse
import contextlib
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import trafilatura  # noqa: E402

from research.sources.errors import SourceError  # noqa: E402
from research.sources.extract import extract_document  # noqa: E402
from research.sources.safe_fetch import FetchResponse, SafeFetcher  # noqa: E402
from tests.fixtures.frozen_web.server import serve_frozen_web  # noqa: E402

BUDGET = 200_000


def pages_per_second(run_once: Callable[[], int], rounds: int) -> tuple[float, float]:
    """Median and best pages/second over ``rounds`` runs of ``run_once`` (which returns a page count)."""
    rates = []
    for _ in range(rounds):
        started = time.perf_counter()
        pages = run_once()
        rates.append(pages / (time.perf_counter() - started))
    return statistics.median(rates), max(rates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per measurement")
    args = parser.parse_args()

    with serve_frozen_web() as web:
        fetcher = SafeFetcher(web.sources_config())
        urls = [d.url(web.port) for d in web.documents if d.kind == "html"]
        pdf_urls = [d.url(web.port) for d in web.documents if d.kind == "pdf"]
        html: list[FetchResponse] = [fetcher.fetch(u) for u in urls]
        pdfs: list[FetchResponse] = [fetcher.fetch(u) for u in pdf_urls]

        def pipeline() -> int:
            count = 0
            for response in html:
                # Gated pages (CAPTCHA, paywall) are refused, which is work done too.
                with contextlib.suppress(SourceError):
                    extract_document(response, max_bytes=BUDGET)
                count += 1
            return count

        def direct() -> int:
            for response in html:
                trafilatura.extract(response.content, url=response.final_url, with_metadata=True)
            return len(html)

        def pdf_pipeline() -> int:
            for response in pdfs:
                extract_document(response, max_bytes=BUDGET)
            return len(pdfs)

        def fetch_and_extract() -> int:
            count = 0
            for url in urls:
                with contextlib.suppress(SourceError):
                    extract_document(fetcher.fetch(url), max_bytes=BUDGET)
                count += 1
            return count

        # Warm-up: imports, lxml and htmldate caches.
        pipeline()
        direct()
        ours, ours_best = pages_per_second(pipeline, args.rounds)
        theirs, theirs_best = pages_per_second(direct, args.rounds)
        pdf_rate, _ = pages_per_second(pdf_pipeline, args.rounds)
        e2e_rate, _ = pages_per_second(fetch_and_extract, max(3, args.rounds // 3))

    print(f"HTML pages in the frozen corpus: {len(html)}; PDFs: {len(pdfs)}; rounds: {args.rounds}")
    print(f"{'measurement':<40}{'median pages/s':>16}{'best pages/s':>14}")
    print(f"{'pipeline (extract_document)':<40}{ours:>16.1f}{ours_best:>14.1f}")
    print(f"{'direct (trafilatura.extract)':<40}{theirs:>16.1f}{theirs_best:>14.1f}")
    print(f"{'PDF pipeline (pypdf, per document)':<40}{pdf_rate:>16.1f}")
    print(f"{'fetch + extract over loopback':<40}{e2e_rate:>16.1f}")
    print(f"ratio pipeline / direct (median): {ours / theirs:.2f}")


if __name__ == "__main__":
    main()
