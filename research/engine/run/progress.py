"""Progress: the events a run publishes while it works, emitted through one object.

Progress is best effort — the database is the record — so a failing event sink is logged and
the run goes on; only :class:`LeaseLost` (the worker lost the run) propagates.
"""

import logging
import unicodedata
from typing import Literal

from research.engine import observe
from research.engine.contracts import (
    PhaseChanged,
    PlanReady,
    ProgressEvent,
    ProgressPhase,
    ReportReady,
    SourceRecord,
    SourceUpdated,
    StepFinished,
    StepKind,
    StepStarted,
)
from research.engine.ports import EventSink, LeaseLost
from research.engine.states import RunStatus

logger = logging.getLogger(__name__)


def display_text(text: str, limit: int = 160) -> str:
    """Text fit for a progress line: control and invisible characters removed, whitespace
    collapsed, cut at a word boundary with an ellipsis when longer than ``limit``."""
    kept = "".join(
        " " if unicodedata.category(char) in ("Cc", "Zl", "Zp") else char
        for char in text
        if unicodedata.category(char) != "Cf"
    )
    line = " ".join(kept.split())
    if len(line) <= limit:
        return line
    cut = line[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut.rsplit(" ", 1)[0]
    return cut + "…"


class Progress:
    """Publishes a run's progress events to an :class:`EventSink`; messages are cut to
    what a progress line shows (:func:`display_text`)."""

    def __init__(self, events: EventSink) -> None:
        self._events = events

    def phase(self, run_id: str, phase: ProgressPhase, status: RunStatus, message: str) -> None:
        self.emit(
            PhaseChanged(
                run_id=run_id, phase=phase, status=status, message=display_text(message, 300)
            )
        )

    def step_started(self, run_id: str, step_id: str, kind: StepKind, message: str) -> None:
        # Log lines from here on (and work handed to a pool now) name this step.
        observe.current_step_id.set(step_id)
        self.emit(
            StepStarted(
                run_id=run_id, step_id=step_id, kind=kind, message=display_text(message, 200)
            )
        )

    def step_finished(
        self,
        run_id: str,
        step_id: str,
        kind: StepKind,
        outcome: Literal["succeeded", "rejected", "failed", "skipped", "cancelled"],
        message: str,
    ) -> None:
        if observe.current_step_id.get() == step_id:
            observe.current_step_id.set("")
        self.emit(
            StepFinished(
                run_id=run_id,
                step_id=step_id,
                kind=kind,
                outcome=outcome,
                message=display_text(message, 200),
            )
        )

    def source_updated(self, run_id: str, record: SourceRecord, message: str) -> None:
        self.emit(
            SourceUpdated(
                run_id=run_id,
                source_id=record.id,
                status=record.status,
                title=display_text(record.title, 200),
                domain=record.domain,
                message=display_text(message, 200),
            )
        )

    def plan_ready(self, run_id: str, version: int) -> None:
        self.emit(
            PlanReady(run_id=run_id, plan_version=version, message="The plan is ready for review")
        )
        self.phase(
            run_id, "plan_ready", RunStatus.AWAITING_APPROVAL, "The plan is ready for review"
        )

    def report_ready(self, run_id: str, terminal: RunStatus, reason: str) -> None:
        self.emit(
            ReportReady(
                run_id=run_id,
                terminal_status=terminal.value,  # type: ignore[arg-type]
                message="The report is ready"
                if terminal == RunStatus.COMPLETED
                else "A partial report is ready",
            )
        )
        phase: ProgressPhase = (
            "completed" if terminal == RunStatus.COMPLETED else "budget_exhausted"
        )
        self.phase(run_id, phase, terminal, reason)

    def emit(self, event: ProgressEvent) -> None:
        try:
            self._events.emit(event)
        except LeaseLost:
            raise
        except Exception:
            logger.warning("Could not publish a progress event.", exc_info=True)
