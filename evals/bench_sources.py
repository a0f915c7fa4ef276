"""Extraction throughput of the source pipeline against calling trafilatura directly.

Run with ``python evals/bench_sources.py [--rounds N]``. The frozen web is started on
127.0.0.1, every HTML page of its corpus is fetched once through ``SafeFetcher``, and then
the same response bytes are extracted over and over:

* **pipeline** - ``research.sources.extract.extract_document``: trafilatura plus our
  heading walk, gate detection, snapshot normalisation, bounding and hashing;
* **direct** - ``trafilatura.extract(bytes, with_metadata=True)``, the plain call.

The figure that matters is the ratio pipeline / direct (1.0 means our work is free). The two
are measured in alternating rounds, so a change in the machine's load during the run affects
both alike. The same ratio is then measured on real documentation pages (the Debian
documentation sets of tests/fixtures/real_docs, when installed; ``--real-pages``), where
pages are long and the snapshot builder lays out every block of them. PDF extraction and the
full fetch-and-extract loop over loopback are printed for context. It is a script, not a timed
test: absolute figures depend on the machine.
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
from research.sources.responses import FetchResponse  # noqa: E402
from research.sources.safe_fetch import SafeFetcher  # noqa: E402
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


def alternating(
    first: Callable[[], int], second: Callable[[], int], rounds: int
) -> tuple[tuple[float, float], tuple[float, float]]:
    """``pages_per_second`` of two measurements taken in alternating rounds."""
    rates: tuple[list[float], list[float]] = ([], [])
    for _ in range(rounds):
        for run_once, collected in ((first, rates[0]), (second, rates[1])):
            started = time.perf_counter()
            pages = run_once()
            collected.append(pages / (time.perf_counter() - started))
    return (
        (statistics.median(rates[0]), max(rates[0])),
        (statistics.median(rates[1]), max(rates[1])),
    )


def real_documentation(pages_wanted: int, rounds: int) -> None:
    """The pipeline / trafilatura ratio on real documentation pages, fetched once from the
    frozen web under their own host names."""
    from tests.fixtures.real_docs.catalogue import DOC_SETS
    from tests.fixtures.real_docs.measure import sample_pages

    installed = [name for name, docset in DOC_SETS.items() if docset.installed()]
    if not installed:
        print("real documentation: no Debian documentation package is installed; skipped")
        return
    per_set = max(1, pages_wanted // len(installed))
    pages = sample_pages(per_set)
    with serve_frozen_web(real_docs=installed) as web:
        fetcher = SafeFetcher(web.sources_config())
        responses = [fetcher.fetch(page.url(web.port)) for page in pages]

    def pipeline() -> int:
        for response in responses:
            with contextlib.suppress(SourceError):
                extract_document(response, max_bytes=BUDGET)
        return len(responses)

    def direct() -> int:
        for response in responses:
            trafilatura.extract(response.content, url=response.final_url, with_metadata=True)
        return len(responses)

    pipeline()
    direct()
    (ours, ours_best), (theirs, theirs_best) = alternating(pipeline, direct, rounds)
    print(
        f"real documentation pages: {len(responses)} from {len(installed)} sets; rounds: {rounds}"
    )
    print(f"{'pipeline on real documentation':<40}{ours:>16.1f}{ours_best:>14.1f}")
    print(f"{'direct on real documentation':<40}{theirs:>16.1f}{theirs_best:>14.1f}")
    print(f"ratio on real documentation (median): {ours / theirs:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15, help="timed rounds per measurement")
    parser.add_argument(
        "--real-pages",
        type=int,
        default=60,
        help="real documentation pages for the second ratio (0 skips it)",
    )
    parser.add_argument(
        "--real-rounds", type=int, default=5, help="timed rounds on real documentation"
    )
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
        (ours, ours_best), (theirs, theirs_best) = alternating(pipeline, direct, args.rounds)
        pdf_rate, _ = pages_per_second(pdf_pipeline, args.rounds)
        e2e_rate, _ = pages_per_second(fetch_and_extract, max(3, args.rounds // 3))

    print(f"HTML pages in the frozen corpus: {len(html)}; PDFs: {len(pdfs)}; rounds: {args.rounds}")
    print(f"{'measurement':<40}{'median pages/s':>16}{'best pages/s':>14}")
    print(f"{'pipeline (extract_document)':<40}{ours:>16.1f}{ours_best:>14.1f}")
    print(f"{'direct (trafilatura.extract)':<40}{theirs:>16.1f}{theirs_best:>14.1f}")
    print(f"{'PDF pipeline (pypdf, per document)':<40}{pdf_rate:>16.1f}")
    print(f"{'fetch + extract over loopback':<40}{e2e_rate:>16.1f}")
    print(f"ratio pipeline / direct (median): {ours / theirs:.2f}")
    if args.real_pages:
        real_documentation(args.real_pages, args.real_rounds)


if __name__ == "__main__":
    main()
