"""``python -m evals.bench``: every performance benchmark, one after another, in one process.

Figures are ratios or distributions measured side by side in one run, on a throwaway
database and the frozen web; absolute numbers depend on the machine, which is recorded with
them. Results go to ``evals/results/bench.json``; docs/performance.md summarises them.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from evals.cli import RESULTS_DIR, machine
from evals.environment import isolated_django

BENCHMARKS = (
    "overhead",
    "telemetry",
    "extraction",
    "documents",
    "library_search",
    "report_page",
    "api_latency",
    "live_progress",
    "throughput",
)


def _print_overhead(result: dict[str, Any]) -> None:
    for row in result["runs"]:
        print(
            f"  model {row['model_delay_s']:.2f} s, web {row['web_latency_s']:.2f} s: wall "
            f"{row['wall_s']:.2f} s / lower bound {row['lower_bound_s']:.2f} s = ratio "
            f"{row['ratio']:.3f} (target <= {row['target_ratio']}); idle {row['idle_s']:.2f} s "
            f"({row['idle_share']:.1%}); {row['status']}, {row['operations']}"
        )


def _print_telemetry(result: dict[str, Any]) -> None:
    print(
        f"  off {result['off_wall_s']} s, on {result['on_wall_s']} s: ratio {result['ratio']:.4f} "
        f"(target <= {result['target_ratio']}); {result['spans_exported']} spans exported"
    )


def _print_extraction(result: dict[str, Any]) -> None:
    print(
        f"  pipeline {result['pipeline_pages_per_s']:.0f} pages/s, trafilatura "
        f"{result['trafilatura_pages_per_s']:.0f} pages/s: ratio "
        f"{result['ratio_pipeline_to_trafilatura']:.2f}; PDF {result['pdf_pages_per_s']:.0f}/s; "
        f"fetch+extract {result['fetch_and_extract_pages_per_s']:.0f}/s"
    )


def _print_documents(result: dict[str, Any]) -> None:
    for kind, row in result["formats"].items():
        print(
            f"  {kind:<8} {row['file_mb']:.2f} MB file, {row['text_mb']:.2f} MB text: parse "
            f"{row['parse_s']:.2f} s + index {row['index_s']:.2f} s = {row['s_per_file_mb']:.2f} s "
            f"per file MB ({row['text_mb_per_s']:.2f} MB of text/s)"
        )
    print(
        f"  PDF reader process: one page {result['pdf_one_page_seconds']:.2f} s; "
        f"x{result['pdf_reader_ratio']} of extract_pdf in-process"
    )


def _print_library_search(result: dict[str, Any]) -> None:
    print(
        f"  {result['documents']} documents ({result['library_mb']} MB, {result['passages']} "
        f"passages) uploaded in {result['build_seconds']:.0f} s; search cold p50 "
        f"{result['cold_p50_ms']:.0f} / p95 {result['cold_p95_ms']:.0f} ms, warm p50 "
        f"{result['warm_p50_ms']:.1f} / p95 {result['warm_p95_ms']:.1f} ms; a cold search "
        f"reads snapshots {result['cold_load_ms']} ms + builds BM25 {result['cold_index_ms']} ms"
    )
    for kind, row in result["upload_to_searchable"].items():
        print(
            f"  upload to searchable, {kind:<8} {row['file_mb']:.2f} MB: upload "
            f"{row['upload_s']:.2f} s + library re-index {row['reindex_s']:.2f} s = "
            f"{row['seconds']:.2f} s ({row['s_per_mb']:.2f} s per MB)"
        )


def _print_report_page(result: dict[str, Any]) -> None:
    print(f"  ({result['method']})")
    for row in result["sizes"]:
        print(
            f"  {row['evidence_rows']:>5} evidence rows: {row['server_ms']:8.1f} ms, "
            f"{row['sql_queries']} queries"
        )
    print(
        f"  queries flat: {result['queries_flat']}; time x{result['time_growth_10_to_1000']} "
        f"from 10 to 1,000 rows (linear would be x{result['linear_growth_would_be']:.0f})"
    )


def _print_live_progress(result: dict[str, Any]) -> None:
    print(f"  consumer coalescing window: {result['coalesce_seconds']} s")
    for layer in ("in_memory", "redis"):
        rows = result.get(layer, {})
        if "skipped" in rows:
            print(f"  {layer}: skipped — {rows['skipped']}")
            continue
        for viewers, paths in rows.items():
            cells = ", ".join(
                f"{path} p50 {figures['p50_ms']:.1f} / p95 {figures['p95_ms']:.1f} ms"
                for path, figures in paths.items()
            )
            print(f"  {layer}, {viewers.replace('_', ' ')}: {cells}")
    if "note" in result:
        print(f"  {result['note']}")


def _print_throughput(result: dict[str, Any]) -> None:
    print(
        f"  {result['runs']} quick runs, {result['workers']} workers x "
        f"{result['threads_per_worker']} threads: {result['elapsed_s']:.1f} s, "
        f"{result['runs_per_minute']:.1f} runs/min; statuses {result['statuses']}; peak RSS "
        f"{result['peak_rss_mb_per_worker']} MB; errors {result['errors']}"
    )


def _print_api_latency(result: dict[str, Any]) -> None:
    for row in result["rows"]:
        print(
            f"  {row['endpoint']} at {row['evidence_rows']} evidence rows: p50 "
            f"{row['p50_ms']} ms, p95 {row['p95_ms']} ms, {row['sql_queries']} SQL queries, "
            f"{row['response_bytes']} bytes ({result['repeats']} requests)"
        )


def _run(name: str, web: Any, data_dir: Path, redis_url: str) -> dict[str, Any]:
    if name == "overhead":
        from evals.bench.overhead import measure

        return {
            "runs": [
                measure(model_delay=0.5, latency=0.3),
                measure(model_delay=0.2, latency=0.2),
            ]
        }
    if name == "telemetry":
        from evals.bench.telemetry import measure

        return measure()
    if name == "extraction":
        from evals.bench.extraction import measure

        return measure(rounds=15)
    if name == "documents":
        from evals.bench.documents import measure

        return measure(rounds=3)
    if name == "library_search":
        from evals.bench.library_search import measure

        return measure()
    if name == "report_page":
        from evals.bench.report_page import measure

        return measure()
    if name == "api_latency":
        from evals.bench.api_latency import measure

        return measure()
    if name == "live_progress":
        from evals.bench.live_progress import measure

        return measure(redis_url=redis_url)
    from evals.bench.throughput import measure

    return measure(web=web, data_dir=data_dir)


PRINTERS: dict[str, Callable[[dict[str, Any]], None]] = {
    "overhead": _print_overhead,
    "telemetry": _print_telemetry,
    "extraction": _print_extraction,
    "documents": _print_documents,
    "library_search": _print_library_search,
    "report_page": _print_report_page,
    "api_latency": _print_api_latency,
    "live_progress": _print_live_progress,
    "throughput": _print_throughput,
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evals.bench", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--only",
        help=f"comma-separated benchmarks to run (default: all of {', '.join(BENCHMARKS)})",
    )
    parser.add_argument("--output", help="results file (default: evals/results/bench.json)")
    args = parser.parse_args(argv)
    chosen = args.only.split(",") if args.only else list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(
            f"No benchmark named {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}.",
            file=sys.stderr,
        )
        return 2
    # Read before the isolated environment hides it: the Redis channel layer is measured
    # against the Redis the deployment would use, or a local one.
    redis_url = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/15"

    results: dict[str, Any] = {
        "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": machine(),
    }
    started = time.perf_counter()
    with isolated_django() as (web, data_dir):
        for name in chosen:
            print(f"{name}:", flush=True)
            began = time.perf_counter()
            results[name] = _run(name, web, data_dir, redis_url)
            results[name]["benchmark_seconds"] = round(time.perf_counter() - began, 1)
            PRINTERS[name](results[name])
            print(f"  ({results[name]['benchmark_seconds']:.0f} s)", flush=True)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    output = Path(args.output) if args.output else RESULTS_DIR / "bench.json"
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(f"All benchmarks took {results['total_seconds']:.0f} s; wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
