"""The benchmark's tasks: questions over a frozen web with what a correct report must show.

Three task sets, one folder each under ``evals/tasks/``:

* ``fictional`` — the fictional corpus of ``tests/fixtures/frozen_web`` (safety and provenance
  traps: conflicting figures, syndicated copies, injected instructions);
* ``tune`` — questions about real documentation that Debian packages ship
  (``tests/fixtures/real_docs``), free to read while changing the method;
* ``heldout`` — more such questions, written before the method was changed and never read while
  changing it (``evals/tasks/heldout/README.md``); only their aggregates are shown by default.

Each task is one JSON file, validated here. Sources are named by ``host/path`` on the frozen web
(``harwick-transit.test/projects/line-3-extension``, ``sqlite.org/limits.html``); a name without
a path stands for every page of that site.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

TASKS_DIR = Path(__file__).resolve().parent / "tasks"
TASK_SETS: tuple[str, ...] = ("fictional", "tune", "heldout")
# The sets whose questions are about the real documentation of tests/fixtures/real_docs.
REAL_DOCS_SETS = frozenset({"tune", "heldout"})
HELDOUT_SET = "heldout"

Category = Literal[
    "official_metric",
    "conflicting_estimates",
    "academic_evidence",
    "policy_dates",
    "domain_restricted",
    "no_authoritative_source",
    "syndication_trap",
    "prompt_injection",
    "documentation",
]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]

# What kind of answer a real-documents question wants; the sets are spread over all of them.
QuestionType = Literal[
    "definition", "comparison", "quantity", "date_version", "cause", "procedure", "yes_no"
]
QUESTION_TYPES: tuple[str, ...] = QuestionType.__args__  # type: ignore[attr-defined]

NonEmpty = Annotated[str, Field(min_length=1)]
# A host (fictional ``*.test`` or a real documentation site's own name) and an optional path.
SourceName = Annotated[str, Field(pattern=r"^[a-z0-9-]+(\.[a-z0-9-]+)*\.[a-z]{2,}(/\S*)?$")]
# The id a real-documents task's own question gets when it is not written out.
ANSWER_QUESTION_ID = "answer"


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoldFact(_Strict):
    """Something a correct report states. Either ``any_of`` (literal variants, matched as whole
    words after normalisation) or ``patterns`` (regular expressions searched in the normalised,
    case-folded text, so that a fact can be recognised in the documentation's own wording)."""

    id: NonEmpty
    description: NonEmpty
    any_of: list[NonEmpty] = Field(default_factory=list)
    patterns: list[NonEmpty] = Field(default_factory=list)

    @field_validator("patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as exc:
                raise ValueError(
                    f"pattern {pattern!r} is not a regular expression: {exc}"
                ) from None
        return patterns

    @model_validator(mode="after")
    def _one_kind(self) -> GoldFact:
        if bool(self.any_of) == bool(self.patterns):
            raise ValueError(f"gold fact {self.id} needs either any_of or patterns (not both)")
        return self


class GoldPassage(_Strict):
    """A passage of one source that supports the answer (``text`` is a span of that page)."""

    id: NonEmpty
    source: SourceName
    text: Annotated[str, Field(min_length=20)]


class RequiredQuestion(_Strict):
    """A question the report must answer: covered when it states one of ``answered_by``
    (gold fact ids), or, for ``expect_gap``, when it says that the answer was not found."""

    id: NonEmpty
    text: NonEmpty
    answered_by: list[NonEmpty] = Field(default_factory=list)
    expect_gap: bool = False

    @model_validator(mode="after")
    def _one_way_to_cover(self) -> RequiredQuestion:
        if bool(self.answered_by) == self.expect_gap:
            raise ValueError("a required question needs either answered_by facts or expect_gap")
        return self


class ContradictionSide(_Strict):
    """One side of a known disagreement: its value, and which sources state it."""

    label: NonEmpty
    any_of: Annotated[list[NonEmpty], Field(min_length=1)]
    sources: Annotated[list[SourceName], Field(min_length=1)]


class GoldContradiction(_Strict):
    description: NonEmpty
    sides: Annotated[list[ContradictionSide], Field(min_length=2)]


class InjectionTrap(_Strict):
    """What a page tries to make the researcher do; none of it may happen."""

    pages: Annotated[list[SourceName], Field(min_length=1)]
    # Substrings of URLs that must never be requested, fetched or stored as sources.
    forbidden_urls: Annotated[list[NonEmpty], Field(min_length=1)]
    # Claims the page asks the report to make; no finding may state them.
    forbidden_claims: list[NonEmpty] = Field(default_factory=list)


class Task(_Strict):
    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]{2,63}$")]
    category: Category
    question: NonEmpty
    depth: Literal["quick", "standard", "thorough"] = "quick"
    source_policy: dict[str, object] = Field(default_factory=dict)
    notes: str = ""
    # False when nothing in the corpus answers the question: the right report states a gap.
    answerable: bool = True
    # Real-documents tasks: the documentation set (tests/fixtures/real_docs/catalogue.py), the
    # kind of answer, and the pages that hold it (citing one of them is the gold-page metric).
    docset: str | None = None
    question_type: QuestionType | None = None
    gold_pages: list[SourceName] = Field(default_factory=list)
    gold_facts: list[GoldFact] = Field(default_factory=list)
    gold_passages: list[GoldPassage] = Field(default_factory=list)
    required_questions: Annotated[list[RequiredQuestion], Field(min_length=1)]
    primary_sources: list[SourceName] = Field(default_factory=list)
    contradiction: GoldContradiction | None = None
    syndication_groups: list[Annotated[list[SourceName], Field(min_length=2)]] = Field(
        default_factory=list
    )
    injection: InjectionTrap | None = None

    @model_validator(mode="before")
    @classmethod
    def _defaults(cls, data: Any) -> Any:
        """A real-documents task asks one question: unless it lists required questions, the
        question itself is required, answered by any of its gold facts (or by a stated gap).
        Unless stated, a task is answerable when some required question wants an answer."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        if not data.get("required_questions") and data.get("docset"):
            question: dict[str, Any] = {"id": ANSWER_QUESTION_ID, "text": data.get("question", "")}
            if data.get("answerable", True):
                question["answered_by"] = [fact.get("id") for fact in data.get("gold_facts", [])]
            else:
                question["expect_gap"] = True
            data["required_questions"] = [question]
        if "answerable" not in data:
            questions = [q for q in data.get("required_questions") or [] if isinstance(q, dict)]
            data["answerable"] = not questions or not all(q.get("expect_gap") for q in questions)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Task:
        facts = {fact.id for fact in self.gold_facts}
        for question in self.required_questions:
            unknown = [fid for fid in question.answered_by if fid not in facts]
            if unknown:
                raise ValueError(f"{question.id} names unknown gold facts: {', '.join(unknown)}")
        if self.category == "prompt_injection" and self.injection is None:
            raise ValueError("a prompt_injection task needs an injection trap")
        if self.category == "conflicting_estimates" and self.contradiction is None:
            raise ValueError("a conflicting_estimates task needs a gold contradiction")
        if self.category == "syndication_trap" and not self.syndication_groups:
            raise ValueError("a syndication_trap task needs syndication_groups")
        if self.category == "domain_restricted" and not self.source_policy:
            raise ValueError("a domain_restricted task needs a source_policy")
        expects_gap = all(question.expect_gap for question in self.required_questions)
        if self.answerable == expects_gap:
            raise ValueError(
                "an answerable task needs a question answered by gold facts; an unanswerable "
                "one (answerable: false) only questions that expect a stated gap"
            )
        if not self.answerable and (self.gold_facts or self.gold_pages):
            raise ValueError("an unanswerable task has no gold facts or gold pages")
        if self.docset is not None:
            if self.question_type is None:
                raise ValueError("a real-documents task needs a question_type")
            if self.answerable and not (self.gold_facts and self.gold_pages):
                raise ValueError("an answerable real-documents task needs gold facts and pages")
            if any(fact.any_of for fact in self.gold_facts):
                raise ValueError("real-documents gold facts are patterns, not literal any_of")
        return self


def load_tasks(
    selection: list[str] | None = None,
    *,
    task_set: str = "fictional",
    directory: Path | None = None,
) -> list[Task]:
    """Every task of ``task_set`` (or of ``directory``) in file-name order, or those whose id or
    category is named in ``selection``; raises ``ValueError`` for an unknown set or name."""
    if directory is None:
        if task_set not in TASK_SETS:
            raise ValueError(f"No task set named {task_set}; sets are {', '.join(TASK_SETS)}.")
        directory = TASKS_DIR / task_set
    tasks = [
        Task.model_validate(json.loads(path.read_text(encoding="utf-8")))
        for path in sorted(directory.glob("*.json"))
    ]
    ids = [task.id for task in tasks]
    duplicates = sorted({tid for tid in ids if ids.count(tid) > 1})
    if duplicates:
        raise ValueError(f"Task ids must be unique; repeated: {', '.join(duplicates)}.")
    if not selection:
        return tasks
    wanted = set(selection)
    known = set(ids) | set(CATEGORIES)
    unknown = sorted(wanted - known)
    if unknown:
        raise ValueError(
            f"No task or category named {', '.join(unknown)}; tasks are {', '.join(ids)}."
        )
    return [task for task in tasks if task.id in wanted or task.category in wanted]
