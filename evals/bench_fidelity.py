"""Snapshot fidelity on real documentation, measured against an independent rendering.

Run with ``python evals/bench_fidelity.py [--per-set N] [--dates-table]``. The frozen web serves
the Debian documentation sets of tests/fixtures/real_docs under their own host names; every
sampled page goes through the real pipeline (fetch, ``extract_document``, the extractive
backend's quotations verified as the engine does) and is held against the page's visible text
as lxml renders it, with no pipeline code (tests/fixtures/real_docs/rendering.py):

* excerpts cited, and how many of them occur in the rendering (white space aside);
* glued joins: block boundaries of the page the snapshot writes without a space;
* permalink marks left in titles and headings;
* publication dates stored, by source.

``--dates-table`` prints the Markdown table of docs/dates-on-real-pages.md: for 5 pages of each
set, the date stored (and where it was read) and the dates a reader sees on the page. The
snapshot-fidelity tests assert the same measures on a sample; this script gives the figures.
"""

import argparse
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from research.sources.safe_fetch import SafeFetcher  # noqa: E402
from tests.fixtures.frozen_web.server import serve_frozen_web  # noqa: E402
from tests.fixtures.real_docs.catalogue import DOC_SETS  # noqa: E402
from tests.fixtures.real_docs.measure import PageFidelity, measure_page, sample_pages  # noqa: E402
from tests.fixtures.real_docs.rendering import visible_text  # noqa: E402

# Pages per set for the dates table: 6 sets, 30 pages.
DATES_PER_SET = 5
# What a reader takes for the date of a documentation page: a "last modified/updated" stamp, a
# release date or a copyright line, wherever on the page it is.
_SHOWN_DATES = re.compile(
    r"(?:(?:last\s+(?:modified|updated)(?:\s+on)?|release\s+date)\s*:?\s*"
    r"(?:\d{4}-\d\d-\d\d|[A-Z][a-z]{2,8}\.? \d{1,2},? \d{4}))"
    r"|(?:(?:©|\(c\)|copyright)\s*(?:copyright\s*)?(?:©\s*)?\d{4}(?:\s*[-–]\s*\d{4})?)",
    re.IGNORECASE,
)


def shown_dates(html: bytes) -> str:
    """The date lines a reader sees on the page, as written there."""
    found = dict.fromkeys(
        " ".join(m.group().split()) for m in _SHOWN_DATES.finditer(visible_text(html))
    )
    return "; ".join(found) or "none"


def dates_table(web) -> str:
    fetcher = SafeFetcher(web.sources_config())
    lines = [
        "| page | date stored (source) | dates a reader sees on the page |",
        "|---|---|---|",
    ]
    for page in sample_pages(DATES_PER_SET):
        result = measure_page(page, fetcher, web.port)
        document = result.document
        stored = (
            "not read"
            if document is None
            else (
                f"{document.published_at} ({document.date_source})"
                if document.published_at
                else "unknown"
            )
        )
        lines.append(
            f"| {page.host}{page.path} | {stored} | {shown_dates(page.file.read_bytes())} |"
        )
    return "\n".join(lines)


def summary(results: list[PageFidelity]) -> None:
    read = [r for r in results if r.document is not None]
    excerpts = sum(len(r.excerpts) for r in read)
    missing = sum(len(r.missing) for r in read)
    glued = sum(len(r.glued) for r in read)
    marked = sum(len(r.marked) for r in read)
    sources = Counter(r.document.date_source or "unknown" for r in read if r.document)
    print(
        f"pages read: {len(read)} of {len(results)} from {len({r.page.docset.name for r in read})} sets"
    )
    print(
        f"excerpts cited: {excerpts}; in the independent rendering: {excerpts - missing}"
        f" ({100 * (excerpts - missing) / max(1, excerpts):.2f}%)"
    )
    print(f"code blocks quoted whole: {sum(r.code_excerpts for r in read)}")
    print(f"glued joins: {glued} on {sum(bool(r.glued) for r in read)} pages")
    print(
        f"permalink marks in titles and headings: {marked} on {sum(bool(r.marked) for r in read)} pages"
    )
    print(
        "publication dates by source: " + ", ".join(f"{k} {v}" for k, v in sorted(sources.items()))
    )
    for result in read:
        for excerpt in result.missing[:2]:
            print(f"  not in the rendering: {result.page.path}: {excerpt[:120]!r}")
        if result.glued:
            print(f"  glued: {result.page.path}: {result.glued[:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-set", type=int, default=1000, help="pages per documentation set")
    parser.add_argument("--dates-table", action="store_true", help="print the dates table only")
    args = parser.parse_args()
    installed = [name for name, docset in DOC_SETS.items() if docset.installed()]
    if not installed:
        sys.exit("No Debian documentation package of tests/fixtures/real_docs is installed.")
    with serve_frozen_web(real_docs=installed) as web:
        if args.dates_table:
            print(dates_table(web))
            return
        fetcher = SafeFetcher(web.sources_config())
        summary([measure_page(page, fetcher, web.port) for page in sample_pages(args.per_set)])


if __name__ == "__main__":
    main()
