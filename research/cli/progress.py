"""Progress of a run on a terminal: a redrawn bar on a TTY, plain lines when piped.

It reads the durable record (the run row and its steps) rather than the live event stream:
the database is what a person could check afterwards, and polling it needs no channel layer
in the command-line process.
"""

from __future__ import annotations

import shutil
from datetime import datetime
from typing import TextIO

from research.engine.steps import StepInput
from research.models import ResearchEvidence, ResearchRun, ResearchStep

BAR_WIDTH = 24
_FINISHED = frozenset({"succeeded", "failed", "skipped", "cancelled"})
# Where each phase starts on the bar; research fills the span up to synthesis by the share
# of its budget used, because how far research will go is not known in advance.
_PHASE_START = {
    "created": 0.0,
    "planning": 0.02,
    "awaiting_approval": 0.05,
    "queued": 0.05,
    "researching": 0.08,
    "synthesizing": 0.92,
}
_RESEARCH_SPAN = 0.84


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def describe_step(step: ResearchStep) -> str:
    """One line for a finished step: what it did and how it ended."""
    payload = StepInput.read(step.input).payload
    target = payload.target_query or payload.url
    parts = [f"{step.kind:<10}", f"{step.status:<9}"]
    if target:
        parts.append(f"“{_clip(str(target), 80)}”" if step.kind == "search" else _clip(target, 80))
    if step.summary:
        parts.append(f"— {_clip(step.summary, 100)}")
    if step.error and step.error != step.summary:
        parts.append(f"({_clip(step.error, 100)})")
    return " ".join(parts)


def fraction_done(run: ResearchRun) -> float:
    """How far along the run is, 0 to 1, for the bar."""
    if run.status in ("completed", "budget_exhausted", "failed", "cancelled"):
        return 1.0
    start = _PHASE_START.get(run.status)
    if start is None:
        return 0.0
    if run.status != "researching":
        return start
    usage, budget = run.usage or {}, run.budget or {}
    shares = [
        (usage.get(name, 0) or 0) / budget[name]
        for name in ("iterations", "searches", "fetched_sources")
        if budget.get(name)
    ]
    return start + _RESEARCH_SPAN * min(1.0, max(shares, default=0.0))


class ProgressDisplay:
    """Prints what changed since the last :meth:`update`. On a TTY the last line is a bar
    that is redrawn in place; otherwise every change is a plain, timestamped line."""

    def __init__(self, run_id: str, stream: TextIO, *, tty: bool | None = None) -> None:
        self.run_id = run_id
        self.stream = stream
        self.tty = stream.isatty() if tty is None else tty
        self._reported: set[str] = set()
        self._status = ""
        self._bar_shown = False

    def update(self) -> None:
        """Report new finished steps and status changes, then redraw the bar."""
        run = ResearchRun.objects.get(pk=self.run_id)
        steps = ResearchStep.objects.filter(run_id=self.run_id, status__in=_FINISHED).exclude(
            pk__in=self._reported
        )
        for step in steps.order_by("completed_at", "created_at"):
            self._reported.add(str(step.pk))
            self._line(describe_step(step))
        if run.status != self._status:
            self._status = run.status
            self._line(f"status    {run.outcome.label.lower()}")
        if self.tty:
            self._draw_bar(run)

    def finish(self) -> None:
        """Take the bar off the screen so what follows starts on a clean line."""
        if self.tty and self._bar_shown:
            self.stream.write("\r\x1b[2K")
            self.stream.flush()
            self._bar_shown = False

    def _line(self, text: str) -> None:
        if self.tty:
            self.finish()
            self.stream.write(f"  {text}\n")
        else:
            self.stream.write(f"[{datetime.now():%H:%M:%S}] {text}\n")
        self.stream.flush()

    def _draw_bar(self, run: ResearchRun) -> None:
        done = fraction_done(run)
        filled = round(done * BAR_WIDTH)
        usage = run.usage or {}
        evidence = ResearchEvidence.objects.filter(run_id=self.run_id, out_of_scope=False).count()
        text = (
            f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {done:4.0%} "
            f"{run.outcome.label.lower()} · {usage.get('searches', 0)} searches · "
            f"{usage.get('fetched_sources', 0)} sources read · {evidence} excerpts"
        )
        width = shutil.get_terminal_size((100, 20)).columns - 1
        self.stream.write("\r\x1b[2K" + _clip(text, width))
        self.stream.flush()
        self._bar_shown = True
