"""Dashboard search over a run's question and title, its report's text and its evidence.

On PostgreSQL the match is full-text search (``websearch_to_tsquery`` in the English
configuration, so "heat pumps" finds "heat pump"); on SQLite, which has no such search in
Django, every word of the query must occur in one of those texts (case-insensitive). Either
way each result shows the passage that matched: one query for the page's reports and one for
its evidence, however many evidence rows the runs have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import Exists, OuterRef, Q, QuerySet, TextField
from django.db.models.functions import Cast

from research.models import ResearchEvidence, ResearchRun

# Characters of context shown on each side of the first matching word.
PASSAGE_CONTEXT = 90
# Words shorter than this are not looked for in the passage (stemming changes their ends).
_STEM_CHARS = 4


def _words(query: str) -> list[str]:
    return [word for word in re.split(r"\W+", query.casefold()) if word]


def _postgres() -> bool:
    return connection.vendor == "postgresql"


def search_runs(runs: QuerySet[ResearchRun], query: str) -> QuerySet[ResearchRun]:
    """``runs`` whose question, title, report or evidence match ``query``."""
    if _postgres():
        from django.contrib.postgres.search import SearchQuery, SearchVector

        terms = SearchQuery(query, config="english", search_type="websearch")
        run_text = SearchVector("question", "title", Cast("report", TextField()), config="english")
        evidence = ResearchEvidence.objects.annotate(
            found=SearchVector("excerpt", config="english")
        ).filter(run=OuterRef("pk"), found=terms)
        return runs.annotate(found=run_text).filter(Q(found=terms) | Q(Exists(evidence)))
    words = _words(query)
    if not words:
        return runs
    runs = runs.annotate(report_text=Cast("report", TextField()))
    for word in words:
        evidence = ResearchEvidence.objects.filter(run=OuterRef("pk"), excerpt__icontains=word)
        runs = runs.filter(
            Q(question__icontains=word)
            | Q(title__icontains=word)
            | Q(report_text__icontains=word)
            | Q(Exists(evidence))
        )
    return runs


@dataclass(frozen=True)
class Passage:
    where: str  # "question", "report" or "evidence"
    text: str


def _snippet(text: str, words: list[str]) -> str | None:
    folded = text.casefold()
    for word in words:
        at = folded.find(
            word if len(word) < _STEM_CHARS else word[: max(_STEM_CHARS, len(word) - 2)]
        )
        if at >= 0:
            start, end = max(0, at - PASSAGE_CONTEXT), min(len(text), at + PASSAGE_CONTEXT)
            return (
                ("…" if start else "") + text[start:end].strip() + ("…" if end < len(text) else "")
            )
    return None


def _report_texts(report: Any) -> list[str]:
    if not isinstance(report, dict):
        return []
    texts = [str(report.get("title") or "")]
    statements = list(report.get("executive_summary") or [])
    for section in report.get("sections") or []:
        texts.append(str(section.get("title") or ""))
        statements += section.get("statements") or []
    texts += [str(statement.get("text") or "") for statement in statements]
    texts += [str(item.get("summary") or "") for item in report.get("contradictions") or []]
    return texts


def matching_passages(runs: list[ResearchRun], query: str) -> dict[Any, Passage]:
    """For each run on a page of results, the passage where ``query`` matched: its question,
    a report statement or an evidence excerpt. Two queries, whatever the runs hold."""
    words = _words(query)
    found: dict[Any, Passage] = {}
    if not words or not runs:
        return found
    ids = [run.pk for run in runs]
    for run in runs:
        snippet = _snippet(run.question, words)
        if snippet:
            found[run.pk] = Passage("question", snippet)
    missing = [pk for pk in ids if pk not in found]
    for pk, report in ResearchRun.objects.filter(pk__in=missing).values_list("pk", "report"):
        for text in _report_texts(report):
            snippet = _snippet(text, words)
            if snippet:
                found[pk] = Passage("report", snippet)
                break
    missing = [pk for pk in ids if pk not in found]
    if missing:
        condition = Q()
        for word in words:
            condition |= Q(excerpt__icontains=word[: max(_STEM_CHARS, len(word) - 2)])
        rows = (
            ResearchEvidence.objects.filter(Q(run_id__in=missing) & condition)
            .order_by("run_id", "-relevance_bp", "id")
            .values_list("run_id", "excerpt")
        )
        for run_id, excerpt in rows.iterator():
            if run_id not in found:
                snippet = _snippet(excerpt, words)
                if snippet:
                    found[run_id] = Passage("evidence", snippet)
    return found
