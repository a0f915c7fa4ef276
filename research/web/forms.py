"""Forms of the research pages: the composer, the plan editor, controls, sharing, filters.

Forms parse and check what a person typed and say what is wrong in a sentence; the
services in ``research.services`` decide whether the run may change.
"""

from __future__ import annotations

import json
import re
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
    normalize_domain,
    partial_date_bounds,
)
from research.engine.guards import budget_for
from research.engine.outcomes import OUTCOME_FILTERS, OutcomeFilter
from research.engine.urls import InvalidPolicyEntry
from research.libraries import visible_libraries
from research.models import LibraryDocument, ResearchRun
from research.report_templates import REPORT_TEMPLATES
from research.services import (
    CLIENT_REQUEST_ID_MAX_CHARS,
    INSTRUCTION_MAX_CHARS,
    QUESTION_MAX_CHARS,
    depth_allowed,
)
from research.web.search import search_runs

MAX_DOMAINS = 50
# The parts of a source policy that choose uploaded documents (made in the composer).
DOCUMENT_FIELDS = ("documents", "library_id", "document_ids", "web")
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


def domain_list_field(what: str) -> forms.CharField:
    """An optional list of domains (parsed by the source policy), of bounded length."""
    return forms.CharField(
        required=False,
        max_length=DOMAINS_MAX_CHARS,
        error_messages={"max_length": too_long(what, DOMAINS_MAX_CHARS)},
    )


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
    domains = domain_list_field("The list of domains")
    excluded_domains = domain_list_field("The list of excluded domains")
    library = forms.ChoiceField(
        required=False,
        error_messages={"invalid_choice": "Choose one of your libraries, or no library."},
    )
    document_ids = forms.MultipleChoiceField(
        required=False,
        error_messages={"invalid_choice": "Choose documents from your libraries."},
    )
    documents_only = forms.BooleanField(required=False)
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
        libraries, documents = library_choices(user)
        self.fields["library"].choices = [("", "No documents"), *libraries]
        self.fields["document_ids"].choices = documents
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
        # Link sharing needs no team; a team adds its members to those who may see the run.
        shared = data.get("visibility") == ResearchRun.Visibility.TEAM
        if shared and not data.get("team") and "team" not in self.errors:
            self.add_error("team", "Choose the team to share this research with.")
        if data.get("documents_only") and not (data.get("library") or data.get("document_ids")):
            self.add_error(None, "Choose a library or documents to research without the web.")
        return data

    def source_policy(self) -> dict[str, Any]:
        """The run's source policy (``SourcePolicy`` contract) from the cleaned form."""
        mode = self.cleaned_data["source_mode"]
        policy: dict[str, Any] = {
            "mode": mode,
            "domains": self.cleaned_data["domains"] if mode != "full_web" else [],
            "excluded_domains": self.cleaned_data["excluded_domains"],
            "web": not self.cleaned_data.get("documents_only"),
        }
        if self.cleaned_data.get("document_ids"):
            policy.update(documents="selected", document_ids=self.cleaned_data["document_ids"])
        elif self.cleaned_data.get("library"):
            policy.update(documents="library", library_id=self.cleaned_data["library"])
        return policy


def library_choices(user: User) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The libraries and the documents ``user`` may research with, as form choices."""
    libraries = visible_libraries(user)
    documents = LibraryDocument.objects.filter(library__in=libraries).select_related("library")
    return (
        [
            (str(lib.pk), lib.name if lib.team_id is None else f"{lib.name} ({lib.team})")
            for lib in libraries
        ],
        [(str(doc.pk), f"{doc} — {doc.library}") for doc in documents],
    )


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
    # The editor's values as the form was loaded (research.web.plan_merge), so a live update
    # or a refused save is merged field by field and never reverts what the person left alone.
    base_values = forms.CharField(widget=forms.HiddenInput, required=False)
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
    domains = domain_list_field("The list of domains")
    excluded_domains = domain_list_field("The list of excluded domains")

    def clean_domains(self) -> list[str]:
        return parse_domains(self.cleaned_data["domains"])

    def clean_excluded_domains(self) -> list[str]:
        return parse_domains(self.cleaned_data["excluded_domains"])

    def source_policy(self, current: dict[str, Any] | None = None) -> dict[str, Any] | None:
        """The edited source policy, or None when the form did not include the controls.

        The plan review edits the web controls; the run's choice of documents (``current``,
        its stored policy) is kept as it was."""
        mode = self.cleaned_data.get("source_mode")
        if not mode:
            return None
        if mode != "full_web" and not self.cleaned_data.get("domains"):
            raise forms.ValidationError("List at least one domain for this source setting.")
        kept = {key: value for key, value in (current or {}).items() if key in DOCUMENT_FIELDS}
        return {
            "mode": mode,
            "domains": self.cleaned_data["domains"] if mode != "full_web" else [],
            "excluded_domains": self.cleaned_data["excluded_domains"],
            **kept,
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
        elif (
            data.get("visibility") == ResearchRun.Visibility.TEAM
            and not data.get("team")
            and "team" not in self.errors
        ):
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
    """The dashboard's filters; the search covers questions, reports and evidence
    (``research.web.search``)."""

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
            runs = search_runs(runs, data["q"].strip())
        if data.get("status"):
            runs = runs.filter(outcome_query(OUTCOME_CHOICES[data["status"]]))
        if data.get("team"):
            runs = runs.filter(team_id=int(data["team"]))
        if data.get("mine"):
            runs = runs.filter(owner_id=self._user_id)
        return runs
