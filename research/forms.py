"""Forms of the research pages: the composer, the plan editor, controls, sharing, filters.

Forms parse and check what a person typed and say what is wrong in a sentence; the
services in ``research.services`` decide whether the run may change.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from django import forms
from django.conf import settings
from django.db.models import Q, QuerySet
from django.forms import formset_factory

from accounts.models import Team, User
from research.access import teams_for_new_runs
from research.engine.contracts import (
    PLAN_ITEM_MAX_CHARS,
    PLAN_LIST_MAX_ITEMS,
    PLAN_NOTE_MAX_CHARS,
    PLAN_OBJECTIVE_MAX_CHARS,
    PLAN_QUESTION_MAX_CHARS,
    PLAN_QUESTIONS_MAX,
    SOURCE_CLASSES,
    ResearchPlan,
    normalize_domain,
    partial_date_bounds,
)
from research.engine.guards import budget_for
from research.engine.outcomes import OUTCOME_FILTERS, OutcomeFilter
from research.engine.urls import InvalidPolicyEntry
from research.models import ResearchRun
from research.report_templates import REPORT_TEMPLATES
from research.services import CLIENT_REQUEST_ID_MAX_CHARS, INSTRUCTION_MAX_CHARS, QUESTION_MAX_CHARS

DEPTH_ORDER = list(ResearchRun.Depth.values)
MAX_DOMAINS = 50
MAX_PLAN_QUESTIONS = PLAN_QUESTIONS_MAX
# A domain name has at most 253 characters; one separator follows each.
DOMAINS_MAX_CHARS = MAX_DOMAINS * 254
# A list field of the plan is a textarea with one entry a line (each line ends in a break).
PLAN_LIST_MAX_CHARS = PLAN_LIST_MAX_ITEMS * (PLAN_ITEM_MAX_CHARS + 1)
# "2024-03-15", the longest form of a date the timeframe accepts.
DATE_MAX_CHARS = 10


def too_long(what: str, limit: int) -> str:
    """The message for text over its limit (Django's default does not say which field)."""
    return f"{what} is too long; keep it under {limit:,} characters."


def depth_allowed(depth: str) -> bool:
    """Whether this deployment's budget cap (``RESEARCH_MAX_DEPTH``) allows ``depth``."""
    return DEPTH_ORDER.index(depth) <= DEPTH_ORDER.index(settings.RESEARCH_MAX_DEPTH)


def depth_options() -> list[dict[str, Any]]:
    """Each depth with the budget it implies, for the composer's choice."""
    options = []
    for depth, label in ResearchRun.Depth.choices:
        budget = budget_for(depth)
        options.append(
            {
                "value": depth,
                "label": label,
                "budget": budget,
                "minutes": budget.elapsed_seconds // 60,
                "allowed": depth_allowed(depth),
            }
        )
    return options


def editable_teams(user: User) -> QuerySet[Team]:
    """Teams the user may start research for (the rule is ``access.teams_for_new_runs``)."""
    return teams_for_new_runs(user).order_by("name")


def split_lines(text: str) -> list[str]:
    """Non-empty, stripped lines of a textarea."""
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def parse_domains(text: str) -> list[str]:
    """Domains or addresses (``10.0.0.5``, ``[fd00::1]:8443``) separated by commas, spaces or
    lines, normalised; raises ValidationError naming every entry that is wrong and why."""
    raw = [item for item in re.split(r"[\s,;]+", text or "") if item]
    if len(raw) > MAX_DOMAINS:
        raise forms.ValidationError(f"List at most {MAX_DOMAINS} domains.")
    domains: dict[str, None] = {}
    problems: list[str] = []
    sentences: list[str] = []
    for item in raw:
        try:
            domains[normalize_domain(item)] = None
        except InvalidPolicyEntry as error:
            if error.general:
                problems.append(item)
            else:
                sentences.append(str(error))
    if problems:
        listed = ", ".join(f"“{item}”" for item in problems[:5])
        sentences.insert(
            0,
            f"{listed} {'is not a domain name' if len(problems) == 1 else 'are not domain names'}"
            "; write bare names like example.org or data.example.org, without http:// or a path"
            " (addresses are written like 10.0.0.5 or [fd00::1]:8443).",
        )
    if sentences:
        raise forms.ValidationError(" ".join(sentences[:5]))
    return list(domains)


# --------------------------------------------------------------------------------------------
# Composer
# --------------------------------------------------------------------------------------------


class TeamChoiceField(forms.ModelChoiceField):
    def label_from_instance(self, obj: Team) -> str:
        return obj.name


class ComposerForm(forms.Form):
    """“New research”: the question, how deep to go, the deliverable and the sources."""

    SOURCE_MODES = [
        ("full_web", "The whole web"),
        ("only_domains", "Only these domains"),
        ("prefer_domains", "Prefer these domains, but allow the web"),
    ]

    question = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4}),
        max_length=QUESTION_MAX_CHARS,
        error_messages={
            "required": "Write the question you want researched.",
            "max_length": f"The question is too long; keep it under {QUESTION_MAX_CHARS} "
            "characters.",
        },
    )
    depth = forms.ChoiceField(
        choices=ResearchRun.Depth.choices,
        initial=ResearchRun.Depth.STANDARD,
        widget=forms.RadioSelect,
        error_messages={"invalid_choice": "Choose quick, standard or thorough."},
    )
    report_template = forms.ChoiceField(
        choices=[("", "No template")] + [(t.key, t.label) for t in REPORT_TEMPLATES.values()],
        required=False,
        error_messages={"invalid_choice": "Choose one of the listed report templates."},
    )
    source_mode = forms.ChoiceField(
        choices=SOURCE_MODES,
        initial="full_web",
        widget=forms.RadioSelect,
        error_messages={"invalid_choice": "Choose which sources the research may use."},
    )
    domains = forms.CharField(
        required=False,
        max_length=DOMAINS_MAX_CHARS,
        error_messages={"max_length": too_long("The list of domains", DOMAINS_MAX_CHARS)},
    )
    excluded_domains = forms.CharField(
        required=False,
        max_length=DOMAINS_MAX_CHARS,
        error_messages={"max_length": too_long("The list of excluded domains", DOMAINS_MAX_CHARS)},
    )
    team = TeamChoiceField(
        queryset=Team.objects.none(),
        required=False,
        empty_label="Nobody — keep it private",
        error_messages={
            "invalid_choice": "That team does not exist or you cannot start research for it; "
            "choose one of your teams where you are an editor or owner."
        },
    )
    visibility = forms.ChoiceField(
        choices=ResearchRun.Visibility.choices,
        initial=ResearchRun.Visibility.PRIVATE,
        error_messages={"invalid_choice": "Choose who may see this research."},
    )
    # Hidden: the page makes it. Too long means a tampered or broken page, so the message
    # says what to do rather than naming a field the person never saw.
    client_request_id = forms.CharField(
        required=False,
        max_length=CLIENT_REQUEST_ID_MAX_CHARS,
        widget=forms.HiddenInput,
        error_messages={
            "max_length": "This form's request id is not one this page made; reload the page "
            "and submit your question again."
        },
    )

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["team"].queryset = editable_teams(user)
        if not depth_allowed(self.fields["depth"].initial):
            self.fields["depth"].initial = settings.RESEARCH_MAX_DEPTH

    def clean_question(self) -> str:
        question = self.cleaned_data["question"].strip()
        if not question:
            raise forms.ValidationError("Write the question you want researched.")
        return question

    def clean_depth(self) -> str:
        depth = self.cleaned_data["depth"]
        if not depth_allowed(depth):
            cap = ResearchRun.Depth(settings.RESEARCH_MAX_DEPTH).label.lower()
            raise forms.ValidationError(
                f"This server caps research at the {cap} budget; choose a smaller depth."
            )
        return depth

    def clean_domains(self) -> list[str]:
        return parse_domains(self.cleaned_data["domains"])

    def clean_excluded_domains(self) -> list[str]:
        return parse_domains(self.cleaned_data["excluded_domains"])

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        mode = data.get("source_mode")
        if mode in ("only_domains", "prefer_domains") and data.get("domains") == []:
            self.add_error("domains", "List at least one domain for this source setting.")
        visibility = data.get("visibility")
        shared = visibility and visibility != ResearchRun.Visibility.PRIVATE
        if shared and not data.get("team") and "team" not in self.errors:
            self.add_error("team", "Choose the team to share this research with.")
        return data

    def source_policy(self) -> dict[str, Any]:
        """The run's source policy (``SourcePolicy`` contract) from the cleaned form."""
        mode = self.cleaned_data["source_mode"]
        return {
            "mode": mode,
            "domains": self.cleaned_data["domains"] if mode != "full_web" else [],
            "excluded_domains": self.cleaned_data["excluded_domains"],
        }


# --------------------------------------------------------------------------------------------
# Plan editor
# --------------------------------------------------------------------------------------------


class PlanListField(forms.CharField):
    """A textarea holding one entry of a plan list a line: at most ``PLAN_LIST_MAX_ITEMS``
    entries of at most ``PLAN_ITEM_MAX_CHARS`` characters; cleans to the list of lines."""

    def __init__(self, what: str, **kwargs: Any) -> None:
        self.what = what
        kwargs.setdefault("required", False)
        kwargs.setdefault("max_length", PLAN_LIST_MAX_CHARS)
        kwargs.setdefault(
            "error_messages", {"max_length": too_long(f"The list of {what}", PLAN_LIST_MAX_CHARS)}
        )
        super().__init__(**kwargs)

    def clean(self, value: Any) -> list[str]:
        lines = split_lines(super().clean(value))
        if len(lines) > PLAN_LIST_MAX_ITEMS:
            raise forms.ValidationError(
                f"List at most {PLAN_LIST_MAX_ITEMS} {self.what}, one a line "
                f"(there are {len(lines):,})."
            )
        if any(len(line) > PLAN_ITEM_MAX_CHARS for line in lines):
            raise forms.ValidationError(
                f"Keep each line of the {self.what} under {PLAN_ITEM_MAX_CHARS} characters."
            )
        return lines


class PlanForm(forms.Form):
    """The plan's own fields; its questions are a formset of :class:`QuestionForm`."""

    plan_version = forms.IntegerField(widget=forms.HiddenInput, min_value=0)
    # The plan the editor started from, so a refused stale edit can say what changed since.
    base_plan = forms.CharField(widget=forms.HiddenInput, required=False)
    objective = forms.CharField(
        max_length=PLAN_OBJECTIVE_MAX_CHARS,
        error_messages={
            "required": "The plan needs an objective.",
            "max_length": too_long("The objective", PLAN_OBJECTIVE_MAX_CHARS),
        },
    )
    audience = forms.CharField(
        required=False,
        max_length=PLAN_ITEM_MAX_CHARS,
        error_messages={"max_length": too_long("The audience", PLAN_ITEM_MAX_CHARS)},
    )
    assumptions = PlanListField("assumptions")
    included_topics = PlanListField("topics in scope")
    excluded_topics = PlanListField("exclusions")
    geographies = PlanListField("geographies")
    timeframe_start = forms.CharField(
        required=False,
        max_length=DATE_MAX_CHARS,
        error_messages={"max_length": "Write a year (2024), a month (2024-03) or a date."},
    )
    timeframe_end = forms.CharField(
        required=False,
        max_length=DATE_MAX_CHARS,
        error_messages={"max_length": "Write a year (2024), a month (2024-03) or a date."},
    )
    sections = PlanListField("report sections")
    decision_or_outcome = forms.CharField(
        required=False,
        max_length=PLAN_NOTE_MAX_CHARS,
        error_messages={"max_length": too_long("The decision or outcome", PLAN_NOTE_MAX_CHARS)},
    )
    contradictions_allowed = forms.BooleanField(required=False)
    # The run's source controls, editable until the plan is approved.
    source_mode = forms.ChoiceField(
        choices=ComposerForm.SOURCE_MODES,
        required=False,
        error_messages={"invalid_choice": "Choose which sources the research may use."},
    )
    domains = forms.CharField(
        required=False,
        max_length=DOMAINS_MAX_CHARS,
        error_messages={"max_length": too_long("The list of domains", DOMAINS_MAX_CHARS)},
    )
    excluded_domains = forms.CharField(
        required=False,
        max_length=DOMAINS_MAX_CHARS,
        error_messages={"max_length": too_long("The list of excluded domains", DOMAINS_MAX_CHARS)},
    )

    def clean_domains(self) -> list[str]:
        return parse_domains(self.cleaned_data["domains"])

    def clean_excluded_domains(self) -> list[str]:
        return parse_domains(self.cleaned_data["excluded_domains"])

    def source_policy(self) -> dict[str, Any] | None:
        """The edited source policy, or None when the form did not include the controls."""
        mode = self.cleaned_data.get("source_mode")
        if not mode:
            return None
        if mode != "full_web" and not self.cleaned_data.get("domains"):
            raise forms.ValidationError("List at least one domain for this source setting.")
        return {
            "mode": mode,
            "domains": self.cleaned_data["domains"] if mode != "full_web" else [],
            "excluded_domains": self.cleaned_data["excluded_domains"],
        }

    def _date(self, name: str) -> str:
        value = self.cleaned_data.get(name, "").strip()
        if value:
            try:
                partial_date_bounds(value)
            except ValueError as exc:
                raise forms.ValidationError(f"{exc}.") from None
        return value

    def clean_timeframe_start(self) -> str:
        return self._date("timeframe_start")

    def clean_timeframe_end(self) -> str:
        return self._date("timeframe_end")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        start, end = data.get("timeframe_start"), data.get("timeframe_end")
        if start and end and partial_date_bounds(start)[0] > partial_date_bounds(end)[1]:
            self.add_error(
                "timeframe_end", f"The timeframe ends ({end}) before it starts ({start})."
            )
        return data

    def clean_base_plan(self) -> dict[str, Any] | None:
        """The plan the editor started from, or None when what came back is not a JSON
        object (the conflict view then compares with the edited plan instead)."""
        raw = self.cleaned_data.get("base_plan") or ""
        try:
            value = json.loads(raw) if raw else None
        except (ValueError, RecursionError):
            return None
        return value if isinstance(value, dict) else None


class QuestionForm(forms.Form):
    PRIORITIES = [("required", "Required"), ("supporting", "Supporting")]

    id = forms.CharField(widget=forms.HiddenInput, required=False, max_length=64)
    text = forms.CharField(
        max_length=PLAN_QUESTION_MAX_CHARS,
        error_messages={
            "required": "Write the sub-question, or remove it.",
            "max_length": too_long("The sub-question", PLAN_QUESTION_MAX_CHARS),
        },
    )
    priority = forms.ChoiceField(choices=PRIORITIES, initial="required")
    requires_primary = forms.BooleanField(required=False)
    rationale = forms.CharField(
        widget=forms.HiddenInput,
        required=False,
        max_length=PLAN_NOTE_MAX_CHARS,
        error_messages={
            "max_length": too_long("The sub-question's rationale", PLAN_NOTE_MAX_CHARS)
        },
    )
    preferred_source_classes = forms.CharField(widget=forms.HiddenInput, required=False)

    def clean_preferred_source_classes(self) -> list[str]:
        raw = self.cleaned_data.get("preferred_source_classes", "")
        return [item for item in raw.split(",") if item in SOURCE_CLASSES]


QuestionFormSet = formset_factory(
    QuestionForm,
    extra=0,
    min_num=1,
    validate_min=True,
    max_num=MAX_PLAN_QUESTIONS,
    validate_max=True,
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


def plan_initial(
    plan: dict[str, Any],
    version: int,
    *,
    extra_sections: tuple[str, ...] = (),
    policy: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The editor's initial values for a stored plan; ``extra_sections`` (a report template's)
    are added to the deliverable when the plan lacks them."""
    scope = plan.get("scope") or {}
    timeframe = scope.get("timeframe") or {}
    deliverable = plan.get("deliverable") or {}
    sections = list(deliverable.get("requested_sections") or [])
    present = {section.casefold() for section in sections}
    sections += [s for s in extra_sections if s.casefold() not in present]
    return {
        "plan_version": version,
        "base_plan": json.dumps(plan, sort_keys=True),
        "objective": plan.get("objective", ""),
        "audience": plan.get("audience") or "",
        "assumptions": _lines_text(plan.get("assumptions")),
        "included_topics": _lines_text(scope.get("included_topics")),
        "excluded_topics": _lines_text(scope.get("excluded_topics")),
        "geographies": _lines_text(scope.get("geographies")),
        "timeframe_start": timeframe.get("start") or "",
        "timeframe_end": timeframe.get("end") or "",
        "sections": _lines_text(sections),
        "decision_or_outcome": deliverable.get("decision_or_outcome") or "",
        "contradictions_allowed": (plan.get("completion_criteria") or {}).get(
            "unresolved_contradictions_allowed", True
        ),
        "source_mode": (policy or {}).get("mode", "full_web"),
        "domains": _lines_text((policy or {}).get("domains")),
        "excluded_domains": _lines_text((policy or {}).get("excluded_domains")),
    }


def questions_initial(plan: dict[str, Any]) -> list[dict[str, Any]]:
    required = set((plan.get("completion_criteria") or {}).get("required_question_ids") or [])
    rows = []
    for question in plan.get("questions") or []:
        priority = question.get("priority", "required")
        if question.get("id") in required:
            priority = "required"
        rows.append(
            {
                "id": question.get("id", ""),
                "text": question.get("text", ""),
                "priority": priority,
                "requires_primary": bool(question.get("requires_primary")),
                "rationale": question.get("rationale", ""),
                "preferred_source_classes": ",".join(
                    question.get("preferred_source_classes") or []
                ),
            }
        )
    return rows


def plan_editor_for(
    plan: dict[str, Any],
    version: int,
    *,
    extra_sections: tuple[str, ...] = (),
    policy: dict[str, Any] | None = None,
) -> PlanEditor:
    """An unbound editor showing a stored plan and the run's source policy."""
    return PlanEditor(
        form=PlanForm(
            initial=plan_initial(plan, version, extra_sections=extra_sections, policy=policy)
        ),
        questions=QuestionFormSet(prefix=QUESTION_PREFIX, initial=questions_initial(plan)),
    )


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


def plan_from_editor(editor: PlanEditor, *, current: dict[str, Any]) -> dict[str, Any]:
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
    deliverable = dict(current.get("deliverable") or {})
    deliverable.update(
        requested_sections=data["sections"],
        decision_or_outcome=data["decision_or_outcome"].strip() or None,
    )
    return {
        "schema_version": current.get("schema_version", 1),
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


# --------------------------------------------------------------------------------------------
# Controls, sharing and the dashboard filters
# --------------------------------------------------------------------------------------------


class RefineForm(forms.Form):
    instruction = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        max_length=INSTRUCTION_MAX_CHARS,
        error_messages={
            "required": "Say how the research should change.",
            "max_length": f"The instruction is too long; keep it under {INSTRUCTION_MAX_CHARS} "
            "characters.",
        },
    )


class SharingForm(forms.Form):
    visibility = forms.ChoiceField(
        choices=ResearchRun.Visibility.choices,
        error_messages={"invalid_choice": "Choose who may see this research."},
    )
    team = TeamChoiceField(
        queryset=Team.objects.none(),
        required=False,
        empty_label="No team",
        error_messages={
            "invalid_choice": "Choose a team the run's owner is an owner or editor of."
        },
    )

    def __init__(self, *args: Any, run: ResearchRun, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The same rule as for new runs: the owner must be an owner or editor of the team.
        self.fields["team"].queryset = teams_for_new_runs(run.owner).order_by("name")

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        if data.get("visibility") == ResearchRun.Visibility.PRIVATE:
            data["team"] = None
        elif data.get("visibility") and not data.get("team") and "team" not in self.errors:
            self.add_error("team", "Choose the team to share this research with.")
        return data


# The dashboard filters by outcome: status and, for runs that ended, why they stopped.
OUTCOME_CHOICES: dict[str, OutcomeFilter] = {choice.key: choice for choice in OUTCOME_FILTERS}


def outcome_query(choice: OutcomeFilter) -> Q:
    """The runs an outcome filter choice selects, from the stored status and stop reason."""
    query = Q(status__in=[status.value for status in choice.statuses])
    if choice.stop_reasons is not None:
        query &= Q(stop_reason__in=[reason.value for reason in choice.stop_reasons])
    return query


class DashboardFilterForm(forms.Form):
    q = forms.CharField(
        required=False,
        max_length=200,
        error_messages={
            "max_length": "Search with at most 200 characters; this search was not applied."
        },
    )
    status = forms.ChoiceField(
        required=False,
        choices=[("", "Any status")] + [(k, c.label) for k, c in OUTCOME_CHOICES.items()],
    )
    team = forms.ChoiceField(required=False)
    mine = forms.BooleanField(required=False)

    def __init__(self, *args: Any, user: User, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._user_id = user.pk
        teams = Team.objects.filter(memberships__user=user).order_by("name")
        self.fields["team"].choices = [("", "Any team")] + [
            (str(team.pk), team.name) for team in teams
        ]

    def filter(self, runs: QuerySet[ResearchRun]) -> QuerySet[ResearchRun]:
        """``runs`` narrowed by the valid filters (invalid ones are ignored)."""
        self.is_valid()  # cleaned_data then holds only the fields that are valid
        data = self.cleaned_data
        if data.get("q", "").strip():
            runs = runs.filter(question__icontains=data["q"].strip())
        if data.get("status"):
            runs = runs.filter(outcome_query(OUTCOME_CHOICES[data["status"]]))
        if data.get("team"):
            runs = runs.filter(team_id=int(data["team"]))
        if data.get("mine"):
            runs = runs.filter(owner_id=self._user_id)
        return runs
