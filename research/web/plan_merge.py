"""Three-way comparison of the plan editor's fields, for people editing one plan together.

Three sets of values meet when a plan changed while someone was editing it: the version the
person's form was loaded from (*base*, carried in the form as ``base_values``), the version
saved since (*theirs*) and what the form holds now (*mine*). Field by field:

* only they changed it — the merge takes their value (saving never reverts their change);
* only the person changed it — the merge keeps the person's value;
* both changed it to different values — the merge keeps the person's value and both are shown.

Every field of the editor takes part, the source policy included; the sub-questions are one
field (their order, wording, priority and flags together), because the person edits them as a
list.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from research.web.forms import ComposerForm

QUESTIONS = "questions"
QUESTION_PREFIX = "q"
# The editor's fields in the order the form shows them, with the label a person sees.
FIELDS: tuple[tuple[str, str], ...] = (
    ("objective", "Objective"),
    ("audience", "Audience"),
    ("timeframe_start", "Timeframe from"),
    ("timeframe_end", "Timeframe to"),
    ("included_topics", "In scope"),
    ("excluded_topics", "Exclusions"),
    ("geographies", "Geographies"),
    ("assumptions", "Assumptions"),
    (QUESTIONS, "Sub-questions"),
    ("sections", "Report sections"),
    ("decision_or_outcome", "Decision or outcome"),
    ("contradictions_allowed", "Contradictions may stay unresolved"),
    ("source_mode", "Sources the research may use"),
    ("domains", "Domains"),
    ("excluded_domains", "Never use these domains"),
)
_LIST_FIELDS = frozenset(
    {"included_topics", "excluded_topics", "geographies", "assumptions", "sections", "domains"}
    | {"excluded_domains"}
)
_QUESTION_KEYS = (
    "id",
    "text",
    "priority",
    "requires_primary",
    "rationale",
    "preferred_source_classes",
)
_SOURCE_MODES = dict(ComposerForm.SOURCE_MODES)


def editor_values(initial: dict[str, Any], questions: list[dict[str, Any]]) -> dict[str, Any]:
    """The comparable values of an editor's fields (from its initial values or a submission)."""
    values: dict[str, Any] = {}
    for name, _label in FIELDS:
        if name == QUESTIONS:
            values[name] = [_question(row) for row in questions]
        elif name == "contradictions_allowed":
            values[name] = _truthy(initial.get(name))
        else:
            values[name] = _text(name, initial.get(name))
    return values


def submitted_values(data: Any) -> dict[str, Any]:
    """The comparable values of a submitted editor."""
    try:
        count = min(max(int(data.get(f"{QUESTION_PREFIX}-TOTAL_FORMS", 0)), 0), 100)
    except (TypeError, ValueError):
        count = 0
    rows = [
        {key: data.get(f"{QUESTION_PREFIX}-{index}-{key}", "") for key in _QUESTION_KEYS}
        for index in range(count)
    ]
    return editor_values({name: data.get(name) for name, _ in FIELDS}, rows)


def base_values_json(values: dict[str, Any]) -> str:
    return json.dumps(values, sort_keys=True)


def parse_base_values(raw: str | None) -> dict[str, Any] | None:
    """The ``base_values`` a form carried, or None when what came back is not that shape."""
    try:
        value = json.loads(raw or "")
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get(QUESTIONS), list):
        return None
    rows = [row for row in value[QUESTIONS] if isinstance(row, dict)]
    initial = {name: value.get(name) for name, _ in FIELDS}
    return editor_values(initial, rows)


def _truthy(value: Any) -> bool:
    return value not in (None, "", False, "false", "off", "0")


def _text(name: str, value: Any) -> str:
    text = "" if value is None else str(value)
    lines = [line.strip() for line in text.replace("\r\n", "\n").split("\n")]
    if name in _LIST_FIELDS:
        return "\n".join(line for line in lines if line)
    return "\n".join(lines).strip()


def _question(row: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": str(row.get("id") or "").strip(),
        "text": " ".join(str(row.get("text") or "").split()),
        "priority": str(row.get("priority") or "required"),
        "requires_primary": _truthy(row.get("requires_primary")),
        "rationale": str(row.get("rationale") or ""),
        "preferred_source_classes": str(row.get("preferred_source_classes") or ""),
    }


def _same(name: str, first: Any, second: Any) -> bool:
    if name == QUESTIONS:  # what the person sees and edits; hidden notes travel with a row
        keys = ("id", "text", "priority", "requires_primary")
        return [[q[k] for k in keys] for q in first] == [[q[k] for k in keys] for q in second]
    return first == second


def shown(name: str, value: Any) -> str:
    """A field's value as a person reads it in the comparison."""
    if name == QUESTIONS:
        return (
            "\n".join(
                f"{number}. {q['text'] or '(empty)'} — {q['priority']}"
                + (", needs a primary source" if q["requires_primary"] else "")
                for number, q in enumerate(value, start=1)
            )
            or "(none)"
        )
    if name == "contradictions_allowed":
        return "yes" if value else "no"
    if name == "source_mode":
        return _SOURCE_MODES.get(value, value or "the whole web")
    return value or "(empty)"


@dataclass(frozen=True)
class FieldChange:
    """One field that differs between the person's starting point and the newer version."""

    name: str
    label: str
    theirs: str
    mine: str
    # "taken": only they changed it, the merge holds their value; "same": both made the same
    # change; "both": both changed it differently, the merge keeps the person's value.
    outcome: str


@dataclass(frozen=True)
class Merge:
    changes: list[FieldChange]
    values: dict[str, Any]  # the merged editor values

    @property
    def conflicts(self) -> list[FieldChange]:
        return [change for change in self.changes if change.outcome == "both"]


def three_way(base: dict[str, Any], theirs: dict[str, Any], mine: dict[str, Any]) -> Merge:
    changes: list[FieldChange] = []
    merged: dict[str, Any] = {}
    for name, label in FIELDS:
        old, new, own = base[name], theirs[name], mine[name]
        if _same(name, own, old):
            merged[name] = new
        else:
            merged[name] = own
        if _same(name, new, old):
            continue
        if _same(name, own, old):
            outcome = "taken"
        elif _same(name, own, new):
            outcome = "same"
        else:
            outcome = "both"
        changes.append(FieldChange(name, label, shown(name, new), shown(name, own), outcome))
    return Merge(changes=changes, values=merged)


def editor_data(values: dict[str, Any], *, version: int, base: dict[str, Any]) -> dict[str, Any]:
    """Submitted-form data holding ``values``, based on ``version`` (whose values are
    ``base``), for binding the editor again."""
    data: dict[str, Any] = {
        "plan_version": str(version),
        "base_values": base_values_json(base),
    }
    for name, _label in FIELDS:
        if name == QUESTIONS:
            continue
        if name == "contradictions_allowed":
            if values[name]:
                data[name] = "on"
        else:
            data[name] = values[name]
    rows = values[QUESTIONS]
    data.update(
        {
            f"{QUESTION_PREFIX}-TOTAL_FORMS": str(len(rows)),
            f"{QUESTION_PREFIX}-INITIAL_FORMS": "0",
            f"{QUESTION_PREFIX}-MIN_NUM_FORMS": "0",
            f"{QUESTION_PREFIX}-MAX_NUM_FORMS": "1000",
        }
    )
    for index, row in enumerate(rows):
        for key in _QUESTION_KEYS:
            if key == "requires_primary":
                if row[key]:
                    data[f"{QUESTION_PREFIX}-{index}-{key}"] = "on"
            else:
                data[f"{QUESTION_PREFIX}-{index}-{key}"] = row[key]
    return data
