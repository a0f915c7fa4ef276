"""The report's two small charts, drawn on the server as inline SVG (no script; the page's
CSP stays strict): the classes of the sources read, and the verified evidence per planned
sub-question with the ones that have none marked uncovered. Each chart carries its numbers
as text too (an SVG title and description, and a table), so it reads without sight.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Count

from research.models import ResearchEvidence, ResearchRun, ResearchSource, SourceClass

# Geometry of a horizontal bar chart, in SVG user units (the SVG scales to its container).
WIDTH = 480
LABEL_WIDTH = 190
BAR_HEIGHT = 18
ROW_GAP = 8
VALUE_GAP = 6
# Room kept right of the longest bar for its number.
VALUE_ROOM = 40
# Characters of a bar's label that fit left of the bars at the chart's font size.
LABEL_CHARS = 26


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    y: int
    width: int
    covered: bool = True

    @property
    def text_y(self) -> int:
        return self.y + BAR_HEIGHT - 4

    @property
    def value_x(self) -> int:
        return LABEL_WIDTH + self.width + VALUE_GAP


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    description: str
    bars: list[Bar]
    height: int
    width: int = WIDTH
    label_width: int = LABEL_WIDTH
    bar_height: int = BAR_HEIGHT


def _bars(rows: list[tuple[str, int, bool]]) -> tuple[list[Bar], int]:
    top = max((value for _, value, _ in rows), default=0) or 1
    span = WIDTH - LABEL_WIDTH - VALUE_ROOM
    bars = [
        Bar(
            label=label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…",
            value=value,
            y=index * (BAR_HEIGHT + ROW_GAP),
            width=round(span * value / top),
            covered=covered,
        )
        for index, (label, value, covered) in enumerate(rows)
    ]
    return bars, max(len(rows), 1) * (BAR_HEIGHT + ROW_GAP)


def source_class_chart(run: ResearchRun) -> Chart | None:
    """Sources read, by class (official, academic, …); None when nothing was read."""
    counts = (
        ResearchSource.objects.filter(run=run, status=ResearchSource.Status.FETCHED)
        .values_list("source_class")
        .annotate(n=Count("id"))
        .order_by("-n", "source_class")
    )
    labels = dict(SourceClass.choices)
    rows = [(str(labels.get(key, key)), n, True) for key, n in counts]
    if not rows:
        return None
    bars, height = _bars(rows)
    parts = ", ".join(f"{bar.label}: {bar.value}" for bar in bars)
    return Chart(
        key="source-classes",
        title="Sources read, by class",
        description=f"{sum(n for _, n, _ in rows)} sources read. {parts}.",
        bars=bars,
        height=height,
    )


def question_chart(run: ResearchRun) -> Chart | None:
    """Verified evidence per planned sub-question; a question with none is uncovered."""
    plan = run.plan_contract
    if not plan or not plan.questions:
        return None
    per_question: Counter[str] = Counter()
    for ids in ResearchEvidence.objects.filter(run=run, out_of_scope=False).values_list(
        "question_ids", flat=True
    ):
        per_question.update(set(ids or []))
    rows = [
        (f"{n}. {question.text}", per_question[question.id], per_question[question.id] > 0)
        for n, question in enumerate(plan.questions, start=1)
    ]
    bars, height = _bars(rows)
    uncovered = [bar for bar in bars if not bar.covered]
    parts = "; ".join(
        f"sub-question {n}: {bar.value}" + ("" if bar.covered else " (uncovered)")
        for n, bar in enumerate(bars, start=1)
    )
    return Chart(
        key="evidence-per-question",
        title="Verified excerpts per sub-question",
        description=(
            f"{len(bars) - len(uncovered)} of {len(bars)} sub-questions covered by evidence. "
            f"{parts}."
        ),
        bars=bars,
        height=height,
    )


def report_charts(run: ResearchRun) -> list[Chart]:
    """The report's charts (two queries, whatever the run holds)."""
    return [chart for chart in (source_class_chart(run), question_chart(run)) if chart]
