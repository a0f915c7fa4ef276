"""On a terminal the command asks before research starts and draws a progress bar."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.test import override_settings

from research.cli.progress import ProgressDisplay, fraction_done
from research.models import ResearchRun, ResearchStep
from tests.conftest import make_run

QUESTION = "How many weekday boardings did the Harwick Metro Line 3 extension record?"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def frozen(web):
    with override_settings(**web.django_settings()):
        yield web


def run_command(monkeypatch, answer: str, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr("sys.stdin", Terminal())
    monkeypatch.setattr("builtins.input", lambda prompt: answer)
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    try:
        call_command("research", QUESTION, "--depth", "quick", "--user", "alice", *args)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.django_db(transaction=True)
def test_answering_yes_starts_the_research(owner, frozen, monkeypatch):
    code, out, _ = run_command(monkeypatch, "y")

    assert code == 0
    assert "48,200" in out
    assert ResearchRun.objects.get().status == "completed"


@pytest.mark.django_db(transaction=True)
def test_any_other_answer_leaves_the_plan_waiting(owner, frozen, monkeypatch):
    code, out, err = run_command(monkeypatch, "")

    assert code == 130
    assert out == ""
    assert "Not approved; the run waits for approval" in err
    assert ResearchRun.objects.get().status == "awaiting_approval"


def test_the_bar_is_redrawn_in_place_on_a_terminal(owner):
    run = make_run(owner, status="researching", usage={"iterations": 3, "searches": 4})
    ResearchStep.objects.create(
        run=run,
        kind="search",
        status="succeeded",
        dedupe_key="s1",
        input={"payload": {"query": "line 3 boardings"}},
        summary="7 results",
    )
    screen = Terminal()

    ProgressDisplay(str(run.pk), screen).update()

    text = screen.getvalue()
    assert "search     succeeded “line 3 boardings” — 7 results" in text
    assert "\r\x1b[2K[" in text and "researching · 4 searches" in text


def test_piped_progress_is_one_plain_line_per_change(owner):
    run = make_run(owner, status="planning")
    pipe = io.StringIO()
    display = ProgressDisplay(str(run.pk), pipe)

    display.update()
    display.update()  # nothing changed: nothing printed

    assert pipe.getvalue().count("\n") == 1
    assert "status    planning" in pipe.getvalue() and "\r" not in pipe.getvalue()


def test_the_bar_fills_with_the_research_budget_used(owner):
    run = make_run(owner, status="researching")
    run.usage = {"iterations": run.budget["iterations"] // 2, "searches": 1}
    assert fraction_done(run) == pytest.approx(0.08 + 0.84 / 2)
    run.usage = {"iterations": run.budget["iterations"]}
    assert fraction_done(run) == pytest.approx(0.92)
    run.status = "completed"
    assert fraction_done(run) == 1.0
