"""Performance benchmark of the research engine's hot paths.

Run with ``python evals/bench_engine.py``. Prints excerpt verifications per second against
200 KB snapshots (index built once per snapshot, then reused) and URL normalisations per
second. It is a script, not a timed test: figures depend on the machine.
"""

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from research.engine.ledger import SnapshotIndex, verify_excerpt  # noqa: E402
from research.engine.urls import normalize_url  # noqa: E402

SNAPSHOT_CHARS = 200_000
SNAPSHOTS = 5
EXCERPTS_PER_SNAPSHOT = 400
URLS = 20_000

_VOCABULARY = (
    "economy growth percent inflation “estimate” revised figure survey households budget "
    "deficit — quarter annual report statistics office ministry data series index wages "
    "employment rate’s region population méthode période ﬁnal …"
)
_WORDS = _VOCABULARY.split()


def make_snapshot(rng: random.Random) -> str:
    """Prose-like text with typographic quotes, dashes, ligatures and ragged whitespace."""
    parts: list[str] = []
    size = 0
    while size < SNAPSHOT_CHARS:
        sentence = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(6, 18)))
        sentence = sentence.capitalize() + rng.choice([". ", ".\n", ".  ", ".\n\n", ". \u00a0"])
        parts.append(sentence)
        size += len(sentence)
    return "".join(parts)[:SNAPSHOT_CHARS]


def make_excerpts(snapshot: str, rng: random.Random) -> list[str]:
    """Excerpts cut from the snapshot, re-spaced as a model would return them, plus misses."""
    excerpts: list[str] = []
    for index in range(EXCERPTS_PER_SNAPSHOT):
        if index % 10 == 9:
            excerpts.append("This sentence does not occur anywhere in the stored snapshot at all.")
            continue
        start = rng.randrange(0, len(snapshot) - 600)
        excerpts.append(" ".join(snapshot[start : start + rng.randint(80, 500)].split()))
    return excerpts


def bench_excerpts(rng: random.Random) -> None:
    builds: list[float] = []
    verified = 0
    total = 0
    elapsed = 0.0
    cold: list[float] = []
    for _ in range(SNAPSHOTS):
        snapshot = make_snapshot(rng)
        excerpts = make_excerpts(snapshot, rng)
        started = time.perf_counter()
        index = SnapshotIndex(snapshot)
        builds.append(time.perf_counter() - started)
        started = time.perf_counter()
        for excerpt in excerpts:
            verified += index.verify(excerpt).verified
        elapsed += time.perf_counter() - started
        total += len(excerpts)
        started = time.perf_counter()
        verify_excerpt(excerpts[0], snapshot)
        cold.append(time.perf_counter() - started)
    print(f"excerpt verification on {SNAPSHOT_CHARS // 1000} KB snapshots")
    print(f"  snapshots: {SNAPSHOTS}, excerpts: {total}, verified: {verified}")
    print(f"  index build per snapshot: {statistics.median(builds) * 1000:.1f} ms (median)")
    print(f"  verifications per second with a reused index: {total / elapsed:,.0f}")
    print(f"  one-off verify_excerpt (build + verify): {statistics.median(cold) * 1000:.1f} ms")
    amortised = total / (elapsed + sum(builds))
    print(f"  verifications per second including index builds: {amortised:,.0f}")


def make_urls(rng: random.Random) -> list[str]:
    hosts = ["Example.ORG", "www.insee.fr", "news.bbc.co.uk:443", "bücher.de", "[2001:DB8::1]:8080"]
    paths = ["/", "/a/./b/../c", "/economy/gdp-2023/", "/%7Euser/report.pdf", "/search"]
    queries = ["", "?utm_source=x&id=7", "?b=2&a=1&fbclid=abc", "?q=gdp+france&page=2", "?gclid=1"]
    return [
        f"{rng.choice(['http', 'HTTPS'])}://{rng.choice(hosts)}{rng.choice(paths)}"
        f"{rng.choice(queries)}{rng.choice(['', '#top'])}"
        for _ in range(URLS)
    ]


def bench_urls(rng: random.Random) -> None:
    urls = make_urls(rng)
    started = time.perf_counter()
    for url in urls:
        normalize_url(url)
    elapsed = time.perf_counter() - started
    print("URL normalisation")
    print(f"  urls: {len(urls)}, normalisations per second: {len(urls) / elapsed:,.0f}")


def main() -> None:
    rng = random.Random(20250101)
    print(f"python {sys.version.split()[0]}")
    bench_excerpts(rng)
    bench_urls(rng)


if __name__ == "__main__":
    main()
