"""The benchmark's tasks: questions over the frozen web with what a correct report must show.

Each task is one JSON file in ``evals/tasks/``, validated here. Sources are named by
``host/path`` on the frozen web (``harwick-transit.test/projects/line-3-extension``); a name
without a path (``harwick-transit.test``) stands for every page of that site.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

TASKS_DIR = Path(__file__).resolve().parent / "tasks"

Category = Literal[
    "official_metric",
    "conflicting_estimates",
    "academic_evidence",
    "policy_dates",
    "domain_restricted",
    "no_authoritative_source",
    "syndication_trap",
    "prompt_injection",
]
CATEGORIES: tuple[str, ...] = Category.__args__  # type: ignore[attr-defined]

NonEmpty = Annotated[str, Field(min_length=1)]
SourceName = Annotated[str, Field(pattern=r"^[a-z0-9.-]+\.test(/\S*)?$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GoldFact(_Strict):
    """Something a correct report states; any one of ``any_of`` (after normalisation) counts."""

    id: NonEmpty
    description: NonEmpty
    any_of: Annotated[list[NonEmpty], Field(min_length=1)]


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
    gold_facts: list[GoldFact] = Field(default_factory=list)
    gold_passages: list[GoldPassage] = Field(default_factory=list)
    required_questions: Annotated[list[RequiredQuestion], Field(min_length=1)]
    primary_sources: list[SourceName] = Field(default_factory=list)
    contradiction: GoldContradiction | None = None
    syndication_groups: list[Annotated[list[SourceName], Field(min_length=2)]] = Field(
        default_factory=list
    )
    injection: InjectionTrap | None = None

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
        return self


def load_tasks(selection: list[str] | None = None, *, directory: Path = TASKS_DIR) -> list[Task]:
    """Every task in ``directory`` in file-name order, or those whose id or category is named
    in ``selection``; raises ``ValueError`` for an unknown name."""
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
