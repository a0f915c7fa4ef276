"""Typed step payloads: what the orchestrator stores with each durable step and what the
timeline, the command line and the run document read back.

A step's ``input`` column holds ``{"rationale": …, "payload": …}`` (:class:`StepInput`); the
payload is one :class:`StepPayload`. Which fields a step sets depends on what it does:

* a ``plan`` step: ``refinement`` (the instruction a revision was given, or ``None``);
* a ``decide`` step: ``finish`` (the finish gate passed) and ``steps`` (the accepted actions,
  as :class:`StepSpec`, so an interrupted decision recreates them), or ``failed``;
* a ``search`` step: ``query``, ``question_ids``, ``fingerprint``, ``follow_up`` (the central
  contradiction it follows up, or ``None``) and, when the program proposed it, ``program``;
* a ``read`` step: ``source_id``, ``question_ids``, ``url``, ``max_bytes`` and, when the
  program proposed it, ``program`` with ``follow_up`` or ``substitute_for`` (the source whose
  failed read it replaces);
* a refused action of any kind: ``action`` (the proposal as the model made it) and
  ``refused``.

Only the fields a writer sets are stored (:meth:`StepPayload.stored`), so the stored JSON is
exactly what the writer named; readers get every field with its default.
"""

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from research.engine.contracts import ResearchAction, StepKind, StepRecord


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StepPayload(_Frozen):
    """What one step was asked to do (see the module docstring for which kind sets what)."""

    # plan
    refinement: str | None = None
    # decide
    finish: bool = False
    steps: list["StepSpec"] = Field(default_factory=list)
    failed: bool = False
    # search
    query: str = ""
    fingerprint: str = ""
    # read
    source_id: str = ""
    url: str = ""
    max_bytes: int | None = None
    substitute_for: str | None = None
    # search and read
    question_ids: list[str] = Field(default_factory=list)
    follow_up: str | None = None
    program: bool = False
    # a refused action
    action: ResearchAction | None = None
    refused: bool = False

    @classmethod
    def read(cls, stored: Mapping[str, Any] | None) -> "StepPayload":
        """The payload as stored (a missing one reads as empty)."""
        return cls.model_validate(stored or {})

    @classmethod
    def of(cls, step: StepRecord) -> "StepPayload":
        return cls.read(step.payload)

    def stored(self) -> dict[str, Any]:
        """The JSON a store keeps: the fields the writer set, nothing else (a refused
        action is kept whole, defaults included)."""
        data = self.model_dump(mode="json", include=self.model_fields_set)
        if "steps" in data:
            data["steps"] = [spec.stored() for spec in self.steps]
        return data

    @property
    def target_query(self) -> str:
        """The search this step ran or was refused."""
        return self.query or str(getattr(self.action, "query", "") or "")

    @property
    def target_source_id(self) -> str:
        """The source this step read or was refused."""
        return self.source_id or str(getattr(self.action, "source_id", "") or "")


class StepSpec(_Frozen):
    """An accepted action as its decide step keeps it, until it is written as its own step."""

    kind: StepKind
    dedupe_key: str
    rationale: str
    payload: StepPayload

    def stored(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "dedupe_key": self.dedupe_key,
            "rationale": self.rationale,
            "payload": self.payload.stored(),
        }


class StepInput(_Frozen):
    """A stored step's ``input`` column: why the step was taken and its payload."""

    rationale: str = ""
    payload: StepPayload = Field(default_factory=StepPayload)

    @classmethod
    def read(cls, stored: Mapping[str, Any] | None) -> "StepInput":
        return cls.model_validate(stored or {})

    def stored(self) -> dict[str, Any]:
        """The JSON a store keeps for a new step."""
        return {"rationale": self.rationale, "payload": self.payload.stored()}


StepPayload.model_rebuild()
