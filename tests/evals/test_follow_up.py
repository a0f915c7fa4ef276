"""The follow-up question of the benchmark: derived from a gold fact with its answer masked,
answered from the frozen evidence without a model, counted when the gold fact is quoted."""

from __future__ import annotations

import hashlib

import pytest

from evals.follow_up import ask_follow_up, follow_up_question, follow_up_totals
from evals.taskset import GoldFact, load_tasks
from research.engine.answers import FrozenEvidence
from research.engine.contracts import Evidence, Report

pytestmark = pytest.mark.service_neutral


def frozen_with(*excerpts: str) -> FrozenEvidence:
    evidence = []
    for number, excerpt in enumerate(excerpts, start=1):
        digest = hashlib.sha256(excerpt.encode()).hexdigest()
        evidence.append(
            Evidence(
                id=f"ev-{number}",
                run_id="run-1",
                source_id="src-1",
                excerpt=excerpt,
                locator={"kind": "html", "start": 0, "end": len(excerpt), "snapshot_hash": digest},
                relevance_bp=8000,
                confidence_bp=7000,
                evidence_hash=digest,
            )
        )
    return FrozenEvidence(run_id="run-1", report=Report(title="Line 3"), evidence=evidence)


def test_the_question_masks_the_answer():
    fact = GoldFact(
        id="f", description="outturn capital cost of $1.82 billion", any_of=["1.82 billion"]
    )
    question = follow_up_question(fact)
    assert "1.82" not in question and question.startswith("Which passage of the evidence says")
    numbers = GoldFact(id="g", description="SQLITE_MAX_ATTACHED is 10 by default", patterns=["x"])
    assert "10" not in follow_up_question(numbers)


def test_a_fact_in_the_evidence_is_asked_and_quoted():
    (task,) = load_tasks(["harwick-line3-official"])
    frozen = frozen_with(
        "The outturn capital cost of the extension was $1.82 billion.",
        "Tram depots are cleaned every night.",
    )
    result = ask_follow_up(task, frozen)
    assert result is not None and result.fact_id == "cost"
    assert result.answered and result.quoted


def test_no_follow_up_when_the_evidence_lacks_every_gold_fact():
    (task,) = load_tasks(["harwick-line3-official"])
    assert ask_follow_up(task, frozen_with("Tram depots are cleaned every night.")) is None
    assert ask_follow_up(task, None) is None


@pytest.mark.parametrize(("quoted", "rate"), [(0, 0.0), (1, 0.5)])
def test_totals_report_the_share_quoted(quoted, rate):
    from evals.follow_up import FollowUp

    items = [
        FollowUp("a", "q", "f", True, quoted == 1),
        FollowUp("b", "q", "f", False, False),
        None,
    ]
    totals = follow_up_totals(3, items)
    assert totals["asked"] == 2 and totals["quoted_rate"] == rate
