"""Speed of the extractive backend on the frozen corpus.

Run: ``.venv/bin/python evals/bench_llm.py [--repeat N]``. Prints one JSON object: per-phase
timings (milliseconds) of planning, extraction over every corpus document and synthesis, so a
change that makes the no-model path slow shows up before it reaches a run.
"""

import argparse
import json
import re
import statistics
import time
from pathlib import Path

import trafilatura

from research.engine.contracts import PlanRequest, SourceSummary, SynthesisRequest
from research.engine.guards import budget_for
from research.llm.extractive import ExtractiveModelClient
from research.llm.selection import QuestionText, select_passages

CORPUS = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "frozen_web" / "corpus"
OBJECTIVES = (
    "How many weekday boardings does the Harwick Metro Line 3 extension have, and how does "
    "that compare with the forecast?",
    "What caused the 2023 algal bloom in Lake Tessaly, and is phosphorus the main driver?",
    "How many heat pump grants has Solvik paid since 2019, and how well do heat pumps perform "
    "in cold climates?",
)


def _documents() -> list[tuple[str, str]]:
    documents = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix not in (".html", ".txt"):
            continue
        raw = path.read_text()
        if path.suffix == ".html":
            title = re.search(r"<title>(.*?)</title>", raw, re.S)
            text = trafilatura.extract(raw, include_tables=True, favor_precision=True) or ""
            documents.append((title.group(1).strip() if title else "", text))
        else:
            documents.append((raw.splitlines()[0] if raw else "", raw))
    return documents


def _ms(samples: list[float]) -> dict[str, float]:
    return {
        "mean_ms": round(statistics.fmean(samples) * 1000, 2),
        "max_ms": round(max(samples) * 1000, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    client = ExtractiveModelClient()
    documents = _documents()
    plan_times, extract_times, synth_times, passages = [], [], [], 0
    for _ in range(repeat):
        for objective in OBJECTIVES:
            started = time.perf_counter()
            plan = client.plan(
                PlanRequest(objective=objective, budget=budget_for("standard"))
            ).value
            plan_times.append(time.perf_counter() - started)
            questions = [QuestionText(q.id, q.text) for q in plan.questions]
            for title, text in documents:
                started = time.perf_counter()
                passages += len(select_passages(text, questions, title=title))
                extract_times.append(time.perf_counter() - started)
            started = time.perf_counter()
            client.synthesize(
                SynthesisRequest(plan=plan, evidence=[], sources=[SourceSummary(id="s1")])
            )
            synth_times.append(time.perf_counter() - started)
    print(
        json.dumps(
            {
                "documents": len(documents),
                "characters": sum(len(text) for _, text in documents),
                "plan": _ms(plan_times),
                "extract_per_document": _ms(extract_times),
                "synthesize_empty": _ms(synth_times),
                "passages_selected": passages // repeat,
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
