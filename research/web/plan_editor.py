"""The plan editor: the plan form plus one form per sub-question, and what its buttons do.

It turns a stored plan into the editor's initial values, applies the editor's operations
(add, remove, move a sub-question) to what the person submitted, and builds the plan that
is saved from a valid editor.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from research.engine.contracts import ResearchPlan, SourcePolicy
from research.web.forms import MAX_PLAN_QUESTIONS, PlanForm, QuestionForm, QuestionFormSet
from research.web.plan_merge import (
    FIELDS,
    QUESTIONS,
    Merge,
    base_values_json,
    editor_data,
    editor_values,
    parse_base_values,
    submitted_values,
    three_way,
)

QUESTION_PREFIX = "q"
_QUESTION_FIELDS = tuple(QuestionForm.base_fields)
_PLAN_FIELDS = tuple(PlanForm.base_fields)


@dataclass
class PlanEditor:
    """The plan form and its question formset, rendered and validated together."""

    form: PlanForm
    questions: Any  # a QuestionFormSet

    def is_valid(self) -> bool:
        form_ok = self.form.is_valid()
        return self.questions.is_valid() and form_ok

    def errors(self) -> list[str]:
        """Every problem as a sentence, for the summary above the form."""
        found = [str(e) for e in self.form.non_field_errors()]
        for name, errors in self.form.errors.items():
            if name != "__all__":
                label = self.form.fields[name].label or name.replace("_", " ").capitalize()
                found += [f"{label}: {error}" for error in errors]
        found += [str(e) for e in self.questions.non_form_errors()]
        for number, form in enumerate(self.questions.forms, start=1):
            for errors in form.errors.values():
                found += [f"Sub-question {number}: {error}" for error in errors]
        return found


def _lines_text(values: list[str] | None) -> str:
    return "\n".join(values or [])


def base_plan_value(plan: ResearchPlan | None) -> str:
    """The plan an editor starts from, as its hidden ``base_plan`` field carries it."""
    return json.dumps(plan.model_dump(mode="json") if plan else {}, sort_keys=True)


def plan_initial(
    plan: ResearchPlan,
    version: int,
    *,
    extra_sections: tuple[str, ...] = (),
    policy: SourcePolicy | None = None,
) -> dict[str, Any]:
    """The editor's initial values for a stored plan; ``extra_sections`` (a report template's)
    are added to the deliverable when the plan lacks them."""
    scope = plan.scope
    timeframe = scope.timeframe
    sections = list(plan.deliverable.requested_sections)
    present = {section.casefold() for section in sections}
    sections += [s for s in extra_sections if s.casefold() not in present]
    policy = policy or SourcePolicy()
    return {
        "plan_version": version,
        "base_plan": base_plan_value(plan),
        "objective": plan.objective,
        "audience": plan.audience or "",
        "assumptions": _lines_text(plan.assumptions),
        "included_topics": _lines_text(scope.included_topics),
        "excluded_topics": _lines_text(scope.excluded_topics),
        "geographies": _lines_text(scope.geographies),
        "timeframe_start": (timeframe.start if timeframe else None) or "",
        "timeframe_end": (timeframe.end if timeframe else None) or "",
        "sections": _lines_text(sections),
        "decision_or_outcome": plan.deliverable.decision_or_outcome or "",
        "contradictions_allowed": plan.completion_criteria.unresolved_contradictions_allowed,
        "source_mode": policy.mode,
        "domains": _lines_text(policy.domains),
        "excluded_domains": _lines_text(policy.excluded_domains),
    }


def questions_initial(plan: ResearchPlan) -> list[dict[str, Any]]:
    required = set(plan.completion_criteria.required_question_ids)
    return [
        {
            "id": question.id,
            "text": question.text,
            "priority": "required" if question.id in required else question.priority,
            "requires_primary": question.requires_primary,
            "rationale": question.rationale,
            "preferred_source_classes": ",".join(question.preferred_source_classes),
        }
        for question in plan.questions
    ]


def plan_editor_for(
    plan: ResearchPlan,
    version: int,
    *,
    extra_sections: tuple[str, ...] = (),
    policy: SourcePolicy | None = None,
) -> PlanEditor:
    """An unbound editor showing a stored plan and the run's source policy."""
    initial = stored_initial(plan, version, extra_sections=extra_sections, policy=policy)
    questions = questions_initial(plan)
    return PlanEditor(
        form=PlanForm(initial=initial),
        questions=QuestionFormSet(prefix=QUESTION_PREFIX, initial=questions),
    )


def stored_initial(
    plan: ResearchPlan,
    version: int,
    *,
    extra_sections: tuple[str, ...] = (),
    policy: SourcePolicy | None = None,
) -> dict[str, Any]:
    """``plan_initial`` plus ``base_values``: what the form shows, for a later merge."""
    initial = plan_initial(plan, version, extra_sections=extra_sections, policy=policy)
    initial["base_values"] = base_values_json(editor_values(initial, questions_initial(plan)))
    return initial


def stored_values(
    plan: ResearchPlan, *, extra_sections: tuple[str, ...] = (), policy: SourcePolicy | None
) -> dict[str, Any]:
    """The comparable editor values of a stored plan and source policy."""
    initial = plan_initial(plan, 0, extra_sections=extra_sections, policy=policy)
    return editor_values(initial, questions_initial(plan))


def plan_editor_bound(data: Any) -> PlanEditor:
    """An editor bound to submitted data, ready to validate."""
    return PlanEditor(form=PlanForm(data), questions=QuestionFormSet(data, prefix=QUESTION_PREFIX))


def _submitted_questions(data: Any) -> list[dict[str, Any]]:
    try:
        count = int(data.get(f"{QUESTION_PREFIX}-TOTAL_FORMS", 0))
    except (TypeError, ValueError):
        count = 0
    rows = []
    for index in range(min(max(count, 0), MAX_PLAN_QUESTIONS + 1)):
        row = {name: data.get(f"{QUESTION_PREFIX}-{index}-{name}", "") for name in _QUESTION_FIELDS}
        row["requires_primary"] = bool(row["requires_primary"])
        rows.append(row)
    return rows


class EditorOperation:
    """Add, remove and move sub-questions without saving (a round trip, no JavaScript)."""

    ADD = "add"
    REMOVE = "remove"
    UP = "up"
    DOWN = "down"

    @staticmethod
    def parse(op: str) -> tuple[str, int] | None:
        name, _, index = op.partition(":")
        if name == EditorOperation.ADD:
            return name, -1
        if name in (EditorOperation.REMOVE, EditorOperation.UP, EditorOperation.DOWN):
            try:
                return name, int(index)
            except ValueError:
                return None
        return None


def plan_editor_apply(data: Any, op: tuple[str, int]) -> tuple[PlanEditor, str]:
    """The editor with an operation applied to the submitted (unsaved) values, and a sentence
    saying what happened."""
    name, index = op
    rows = _submitted_questions(data)
    note = ""
    if name == EditorOperation.ADD:
        if len(rows) >= MAX_PLAN_QUESTIONS:
            note = f"A plan has at most {MAX_PLAN_QUESTIONS} sub-questions."
        else:
            rows.append(
                {
                    "id": "",
                    "text": "",
                    "priority": "supporting",
                    "requires_primary": False,
                    "rationale": "",
                    "preferred_source_classes": "",
                }
            )
            note = "Sub-question added; write it and save the plan."
    elif 0 <= index < len(rows):
        if name == EditorOperation.REMOVE:
            if len(rows) == 1:
                note = "A plan needs at least one sub-question."
            else:
                rows.pop(index)
                note = "Sub-question removed; save the plan to keep the change."
        elif name == EditorOperation.UP and index > 0:
            rows[index - 1], rows[index] = rows[index], rows[index - 1]
        elif name == EditorOperation.DOWN and index < len(rows) - 1:
            rows[index + 1], rows[index] = rows[index], rows[index + 1]
    initial = {field: data.get(field, "") for field in _PLAN_FIELDS}
    initial["contradictions_allowed"] = bool(data.get("contradictions_allowed"))
    editor = PlanEditor(
        form=PlanForm(initial=initial),
        questions=QuestionFormSet(prefix=QUESTION_PREFIX, initial=rows),
    )
    return editor, note


def _next_question_id(used: set[str]) -> str:
    number = 1
    while f"q{number}" in used:
        number += 1
    return f"q{number}"


def plan_from_editor(editor: PlanEditor, *, current: ResearchPlan | None) -> dict[str, Any]:
    """The plan (``ResearchPlan`` JSON) a valid editor describes. Fields the editor does not
    show are kept from ``current``."""
    data = editor.form.cleaned_data
    questions = []
    used = {(form.cleaned_data.get("id") or "").strip() for form in editor.questions.forms} - {""}
    seen: set[str] = set()
    for form in editor.questions.forms:
        row = form.cleaned_data
        qid = (row.get("id") or "").strip()
        if not qid or qid in seen or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$", qid):
            qid = _next_question_id(used | seen)
        seen.add(qid)
        questions.append(
            {
                "id": qid,
                "text": row["text"].strip(),
                "priority": row["priority"],
                "rationale": row.get("rationale") or "",
                "preferred_source_classes": row.get("preferred_source_classes") or [],
                "requires_primary": bool(row.get("requires_primary")),
            }
        )
    timeframe = None
    if data["timeframe_start"] or data["timeframe_end"]:
        timeframe = {"start": data["timeframe_start"] or None, "end": data["timeframe_end"] or None}
    deliverable = current.deliverable.model_dump(mode="json") if current else {}
    deliverable.update(
        requested_sections=data["sections"],
        decision_or_outcome=data["decision_or_outcome"].strip() or None,
    )
    return {
        "schema_version": current.schema_version if current else 1,
        "objective": data["objective"].strip(),
        "audience": data["audience"].strip() or None,
        "assumptions": data["assumptions"],
        "scope": {
            "included_topics": data["included_topics"],
            "excluded_topics": data["excluded_topics"],
            "timeframe": timeframe,
            "geographies": data["geographies"],
        },
        "questions": questions,
        "deliverable": deliverable,
        "completion_criteria": {
            "required_question_ids": [q["id"] for q in questions if q["priority"] == "required"],
            "unresolved_contradictions_allowed": data["contradictions_allowed"],
        },
    }


def plan_merged_editor(
    data: Any,
    plan: ResearchPlan,
    version: int,
    *,
    extra_sections: tuple[str, ...] = (),
    policy: SourcePolicy | None = None,
) -> tuple[Merge, PlanEditor]:
    """A submitted editor merged field by field into the stored ``version`` (``plan`` and
    ``policy``), and the editor bound to the merged values, now based on that version."""
    theirs = stored_values(plan, extra_sections=extra_sections, policy=policy)
    # Without the starting point every difference counts as the person's own edit.
    base = parse_base_values(data.get("base_values")) or theirs
    mine = submitted_values(data)
    for name, _label in FIELDS:  # a field the submission lacks was not edited
        if name not in (QUESTIONS, "contradictions_allowed") and name not in data:
            mine[name] = base[name]
    merge = three_way(base, theirs, mine)
    bound = editor_data(merge.values, version=version, base=theirs)
    bound["base_plan"] = base_plan_value(plan)
    return merge, plan_editor_bound(bound)
