"""Comparing research plans and source policies, and describing what changed between plans.

Pure functions over stored (JSON) plans; the plan editor and the plan page use them to
decide whether an edit changed anything and to tell a person what someone else changed.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError as PydanticValidationError

from research.engine.contracts import ResearchPlan, SourcePolicy


def plans_equal(first: dict[str, Any] | None, second: dict[str, Any] | None) -> bool:
    """Whether two stored plans say the same thing (defaults filled in)."""
    if first is None or second is None:
        return first is second
    try:
        return ResearchPlan.model_validate(first).model_dump(
            mode="json"
        ) == ResearchPlan.model_validate(second).model_dump(mode="json")
    except ValueError:
        return False


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _texts(value: Any) -> list[str]:
    """The entries of a plan list as text; anything that is not a list has none."""
    if not isinstance(value, list):
        return []
    return [str(item) for item in value if isinstance(item, str | int | float)]


def _questions_by_id(value: Any) -> dict[str, dict[str, Any]]:
    """Sub-questions keyed by id, skipping entries that are not questions with an id."""
    if not isinstance(value, list):
        return {}
    found = {}
    for question in value:
        if isinstance(question, dict) and isinstance(question.get("id"), str):
            found[question["id"]] = {
                "text": str(question.get("text") or ""),
                "priority": str(question.get("priority") or ""),
            }
    return found


def _listed_changes(label: str, before: list[str], after: list[str]) -> list[str]:
    changes = [f"{label} added: “{item}”" for item in after if item not in before]
    changes += [f"{label} removed: “{item}”" for item in before if item not in after]
    return changes


def describe_plan_changes(before: Any, after: Any) -> list[str]:
    """What differs between two plans, as sentences for a person (newest is ``after``).

    ``before`` comes back from the browser (the plan the editor started from), so any part
    of it may have any shape; a part that is not what a plan holds counts as empty."""
    before, after = _mapping(before), _mapping(after)
    changes: list[str] = []
    if before.get("objective") != after.get("objective"):
        changes.append(f"Objective changed to “{after.get('objective', '')}”")
    if (before.get("audience") or "") != (after.get("audience") or ""):
        changes.append(f"Audience changed to “{after.get('audience') or 'not set'}”")
    changes += _listed_changes(
        "Assumption", _texts(before.get("assumptions")), _texts(after.get("assumptions"))
    )
    old_scope, new_scope = _mapping(before.get("scope")), _mapping(after.get("scope"))
    for key, label in (
        ("included_topics", "Topic in scope"),
        ("excluded_topics", "Exclusion"),
        ("geographies", "Geography"),
    ):
        changes += _listed_changes(label, _texts(old_scope.get(key)), _texts(new_scope.get(key)))
    old_frame, new_frame = (
        _mapping(old_scope.get("timeframe")),
        _mapping(new_scope.get("timeframe")),
    )
    if old_frame != new_frame:
        changes.append(
            f"Timeframe changed to {new_frame.get('start') or 'open'} – "
            f"{new_frame.get('end') or 'open'}"
        )
    old_questions = _questions_by_id(before.get("questions"))
    new_questions = _questions_by_id(after.get("questions"))
    for qid, question in new_questions.items():
        previous = old_questions.get(qid)
        if previous is None:
            changes.append(f"Sub-question added: “{question['text']}”")
        elif previous["text"] != question["text"]:
            changes.append(f"Sub-question reworded: “{question['text']}”")
        elif previous["priority"] != question["priority"]:
            changes.append(f"Sub-question now {question['priority']}: “{question['text']}”")
    for qid, question in old_questions.items():
        if qid not in new_questions:
            changes.append(f"Sub-question removed: “{question['text']}”")
    common = [qid for qid in new_questions if qid in old_questions]
    if common != [qid for qid in old_questions if qid in new_questions]:
        changes.append("Sub-questions were reordered")
    changes += _listed_changes(
        "Report section",
        _texts(_mapping(before.get("deliverable")).get("requested_sections")),
        _texts(_mapping(after.get("deliverable")).get("requested_sections")),
    )
    return changes


def policies_equal(first: dict[str, Any], second: dict[str, Any] | None) -> bool:
    """Whether two source policies say the same thing (domains normalised, defaults filled)."""
    try:
        return (
            SourcePolicy.model_validate(first).model_dump()
            == SourcePolicy.model_validate(second or {}).model_dump()
        )
    except PydanticValidationError:
        return False
