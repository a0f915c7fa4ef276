"""What the support checks cost: time per finding and per report, as a share of synthesis.

``python -m evals.bench.support_checks DIR`` reads the run documents an evaluation wrote
(``python -m evals run --documents DIR``). For each report it times the deterministic checks
of ``research/engine/support.py`` on every finding against its cited excerpts (each with its
heading, as ``finalize_report`` reads them), repeated to get a stable figure, and compares
that with the wall time of the run's synthesize step, which already includes the checks
(so the share is an upper bound of what they add).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from research.engine.support import check_support

REPEATS = 20


def _seconds(step: dict[str, Any]) -> float | None:
    if not step.get("started_at") or not step.get("completed_at"):
        return None
    started = datetime.fromisoformat(step["started_at"])
    completed = datetime.fromisoformat(step["completed_at"])
    return (completed - started).total_seconds()


def _findings(document: dict[str, Any]) -> list[tuple[str, list[str]]]:
    evidence = {item["id"]: item for item in document.get("evidence", [])}
    report = document.get("report") or {}
    statements = list(report.get("executive_summary") or [])
    for section in report.get("sections") or []:
        statements.extend(section.get("statements") or [])
    found = []
    for statement in statements:
        if statement.get("kind") != "finding":
            continue
        cited = [evidence[eid] for eid in statement.get("evidence_ids", []) if eid in evidence]
        excerpts = [
            "\n".join(filter(None, ((e.get("locator") or {}).get("heading"), e["excerpt"])))
            for e in cited
        ]
        found.append((statement.get("text", ""), excerpts))
    return found


def measure(directory: Path, *, repeats: int = REPEATS) -> dict[str, Any]:
    per_finding: list[float] = []
    shares: list[float] = []
    reports = 0
    for path in sorted(directory.glob("*.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        findings = _findings(document)
        synthesis = [
            s for s in document.get("steps", []) if s.get("kind") == "synthesize" and _seconds(s)
        ]
        if not findings or not synthesis:
            continue
        plan = document.get("plan") or {}
        known = [
            plan.get("objective") or "",
            *(q.get("text", "") for q in plan.get("questions", [])),
        ]
        started = time.perf_counter()
        for _ in range(repeats):
            for text, excerpts in findings:
                check_support(text, excerpts, known_text=known)
        per_report = (time.perf_counter() - started) / repeats
        reports += 1
        per_finding.append(per_report / len(findings))
        shares.append(per_report / sum(_seconds(s) or 0 for s in synthesis))
    return {
        "reports": reports,
        "per_finding_ms_median": round(statistics.median(per_finding) * 1000, 3),
        "per_finding_ms_max": round(max(per_finding) * 1000, 3),
        "share_of_synthesis_median": round(statistics.median(shares), 4),
        "share_of_synthesis_max": round(max(shares), 4),
    }


if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("Give the folder of run documents: python -m evals.bench.support_checks DIR")
    print(json.dumps(measure(Path(sys.argv[1])), indent=2))
