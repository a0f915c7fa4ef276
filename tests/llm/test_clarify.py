"""Gaps a question leaves open, recognised by their form (research/llm/clarify.py)."""

from __future__ import annotations

import pytest

from research.engine.contracts import ResearchPlan
from research.engine.run.planning import clarification_line, with_clarifications
from research.llm.clarify import question_gaps


def kinds(question: str) -> list[str]:
    return [gap.kind for gap in question_gaps(question)]


@pytest.mark.parametrize(
    "question",
    [
        "What is the latest guidance on school meal standards?",
        "Which rules currently apply to short-term rentals?",
        "How many people use the service today?",
    ],
)
def test_a_recency_question_without_a_period_needs_a_time_frame(question):
    assert "time_frame" in kinds(question)


@pytest.mark.parametrize(
    "question",
    [
        "What is the latest guidance on school meal standards as of 2025?",
        "Which rules applied to short-term rentals between 2019 and 2022?",
        "What were the most recent figures in the last 3 years?",
    ],
)
def test_a_named_period_answers_the_time_frame(question):
    assert "time_frame" not in kinds(question)


def test_an_acronym_never_spelled_out_is_flagged_once():
    gaps = question_gaps("How did the QRT budget change, and why did QRT staff leave?")
    assert [g.kind for g in gaps] == ["acronym"] and "QRT" in gaps[0].hint


@pytest.mark.parametrize(
    "question",
    [
        "How did the Quality Review Team (QRT) budget change?",
        "How did the QRT (quality review team) budget change?",
        "How did the Quality Review Team budget change?",
    ],
)
def test_a_spelled_out_acronym_is_not_flagged(question):
    assert "acronym" not in kinds(question)


@pytest.mark.parametrize(
    "question",
    ["How does the new cycle lane compare?", "Which option is better for a small office?"],
)
def test_a_comparison_with_one_side_is_flagged(question):
    assert "comparison" in kinds(question)


@pytest.mark.parametrize(
    "question",
    [
        "Compare heat pumps with gas boilers on running cost",
        "Are heat pumps better than gas boilers for terraced houses?",
        "How did ridership on the new line compare with forecasts?",
        "What are the differences between the two tax regimes and the old one?",
    ],
)
def test_a_comparison_with_both_sides_is_not_flagged(question):
    assert "comparison" not in kinds(question)


def test_a_clear_question_has_no_gaps():
    assert question_gaps("How many trams did the city buy in 2021?") == []


def test_answers_before_planning_become_the_plans_first_assumptions():
    plan = ResearchPlan.model_validate(
        {
            "objective": "Rental rules",
            "assumptions": ["Figures are in euros."],
            "questions": [{"id": "q1", "text": "Which rules apply?", "priority": "required"}],
        }
    )
    line = clarification_line("Which city?", "Lisbon only")
    revised = with_clarifications(plan, [line])
    assert revised.assumptions == [line, "Figures are in euros."]
    assert with_clarifications(revised, [line]).assumptions == revised.assumptions
