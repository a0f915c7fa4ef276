"""The arithmetic behind the performance figures (the benchmarks themselves are scripts)."""

from __future__ import annotations

import pytest

from evals.bench.extraction import parse
from evals.bench.live_progress import percentile
from evals.bench.overhead import Operation, busy_time, lower_bound

pytestmark = pytest.mark.service_neutral


def op(kind: str, started: float, ended: float, site: str = "") -> Operation:
    return Operation(kind, started, ended, site)


def test_the_lower_bound_follows_the_concurrency_limits():
    operations = [
        op("plan", 0, 1),
        op("decide", 1, 2),
        # three searches: two pairs at best
        *[op("search", 2, 3) for _ in range(3)],
        op("decide", 3, 4),
        # four reads, two on one site: two waves, then one extraction after the last
        op("read", 4, 5, "a.test"),
        op("read", 4, 5, "b.test"),
        op("read", 4, 5, "c.test"),
        op("read", 5, 6, "a.test"),
        *[op("extract", 6, 7) for _ in range(4)],
        op("synthesize", 7, 8),
    ]

    bound = lower_bound(operations, model_delay=1.0, latency=0.5)

    # plan + decide + max(2 search pairs x 0.5) + decide
    # + max(2 waves x 0.5 + 1, 0.5 + 2 extraction batches x 1) + synthesis
    assert bound == pytest.approx(1 + 1 + 1.0 + 1 + 2.5 + 1)


def test_busy_time_counts_overlapping_work_once():
    assert busy_time([op("read", 0, 2), op("read", 1, 3), op("decide", 5, 6)]) == 4


def test_extraction_figures_are_read_from_the_scripts_table():
    output = """HTML pages in the frozen corpus: 24; PDFs: 3; rounds: 5
measurement                               median pages/s  best pages/s
pipeline (extract_document)                        595.5         603.2
direct (trafilatura.extract)                       566.2         569.3
PDF pipeline (pypdf, per document)                 269.0
fetch + extract over loopback                      321.8
ratio pipeline / direct (median): 1.05"""

    assert parse(output) == {
        "html_pages": 24,
        "pdfs": 3,
        "rounds": 5,
        "pipeline_pages_per_s": 595.5,
        "trafilatura_pages_per_s": 566.2,
        "pdf_pages_per_s": 269.0,
        "fetch_and_extract_pages_per_s": 321.8,
        "ratio_pipeline_to_trafilatura": 1.05,
    }


def test_percentiles_pick_ranked_values():
    values = [float(n) for n in range(1, 101)]
    assert percentile(values, 0.5) == 51.0 and percentile(values, 0.95) == 95.0


def test_real_documentation_figures_are_read_too():
    output = """ratio pipeline / direct (median): 0.92
real documentation pages: 60 from 6 sets; rounds: 5
pipeline on real documentation                       2.7           3.8
direct on real documentation                         2.4           3.9
ratio on real documentation (median): 1.11"""

    assert parse(output) == {
        "ratio_pipeline_to_trafilatura": 0.92,
        "real_docs_pages": 60,
        "real_docs_pipeline_pages_per_s": 2.7,
        "real_docs_trafilatura_pages_per_s": 2.4,
        "real_docs_ratio_pipeline_to_trafilatura": 1.11,
    }
