"""The report: statements, sections, gaps."""

from typing import Annotated, Literal

from pydantic import Field, model_validator

from research.engine.contracts.base import Confidence, Contract, Identifier, NonEmptyStr, _Part

# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


# A sub-heading, not a sentence: a side of a comparison as the question names it fits.
STATEMENT_LABEL_MAX_CHARS = 120

SupportCheckName = Literal["numbers", "negation", "comparison", "names", "overlap"]


class SupportCheck(_Part):
    """One deterministic check of a finding against its cited excerpts (engine/support.py)."""

    name: SupportCheckName
    passed: bool
    detail: Annotated[str, Field(max_length=500)] = ""


VerdictName = Literal["supported", "partially_supported", "unsupported"]
VERDICTS: tuple[str, ...] = ("supported", "partially_supported", "unsupported")


class StatementVerdict(_Part):
    """The verifier model's judgement of a finding against its cited excerpts; for a finding
    not fully supported, ``unsupported_part`` names what its excerpts do not say."""

    verdict: VerdictName
    unsupported_part: Annotated[str, Field(max_length=500)] = ""


class Statement(_Part):
    """One statement of the report; findings must cite verified evidence of the same run.

    ``checks`` and ``verdict`` are written by the program when the report is validated, never
    by the model that wrote the report: what was checked of a finding against its excerpts and
    with what result, and what the verifier model judged (``None``: no verifier ran).

    ``label`` is the sub-heading a section shows the statement under ("Answer", "Supporting",
    a side of a comparison); consecutive statements with the same label are one block, and
    an empty label shows none. Reports stored before labels existed load with none."""

    claim_id: Identifier
    kind: Literal["finding", "analysis", "caveat"]
    text: Annotated[str, Field(min_length=1, max_length=4000)]
    evidence_ids: list[NonEmptyStr] = Field(default_factory=list)
    confidence: Confidence = "medium"
    checks: list[SupportCheck] = Field(default_factory=list)
    verdict: StatementVerdict | None = None
    label: Annotated[str, Field(max_length=STATEMENT_LABEL_MAX_CHARS)] = ""


class ReportSection(_Part):
    id: Identifier
    title: Annotated[str, Field(min_length=1, max_length=300)]
    statements: list[Statement] = Field(default_factory=list)


class ReportContradictionSide(_Part):
    """One side of a reported contradiction: the value (or stance) and the evidence stating it."""

    value: Annotated[str, Field(min_length=1, max_length=300)]
    evidence_ids: list[NonEmptyStr] = Field(default_factory=list)


class ReportContradiction(_Part):
    summary: Annotated[str, Field(min_length=1, max_length=2000)]
    evidence_ids: list[NonEmptyStr] = Field(default_factory=list)
    resolution: str | None = None
    # Filled by the quoted (no-model) writer from the conflict it found, whose values the
    # stored evidence rows do not carry; a page groups the evidence by these when present.
    sides: list[ReportContradictionSide] = Field(default_factory=list)


class ReportGap(_Part):
    question_id: Identifier | None = None
    description: Annotated[str, Field(min_length=1, max_length=2000)]


class Report(Contract):
    """The synthesized report. It never contains a URL: citations are evidence ids."""

    title: Annotated[str, Field(min_length=1, max_length=300)]
    executive_summary: list[Statement] = Field(default_factory=list)
    sections: list[ReportSection] = Field(default_factory=list)
    contradictions: list[ReportContradiction] = Field(default_factory=list)
    gaps: list[ReportGap] = Field(default_factory=list)
    methodology: list[Annotated[str, Field(max_length=2000)]] = Field(default_factory=list)
    partial: bool = False
    mode: Literal["extractive", "model"] = "model"

    @model_validator(mode="after")
    def _unique_claim_ids(self) -> "Report":
        ids = [statement.claim_id for statement in self.statements()]
        duplicates = sorted({cid for cid in ids if ids.count(cid) > 1})
        if duplicates:
            raise ValueError(f"claim_id values must be unique; repeated: {', '.join(duplicates)}")
        return self

    def statements(self) -> list[Statement]:
        """Every statement in reading order: the executive summary, then each section."""
        found = list(self.executive_summary)
        for section in self.sections:
            found.extend(section.statements)
        return found
