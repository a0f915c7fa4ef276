"""Timeline rows in words: sources by title and domain, the sub-questions each read serves,
the plan version each plan step produced."""

from __future__ import annotations

from django.urls import reverse

from tests.web.factories import make_evidence, make_run, make_source, make_step, plan_data


def timeline(client, run) -> str:
    page = client.get(reverse("research:run_detail", args=[run.pk])).content.decode()
    return page[page.index('id="run-timeline"') :]


def test_reads_name_the_source_and_the_questions_they_serve(owner, client_for):
    run = make_run(owner, status="researching", plan=plan_data(questions=3), plan_version=8)
    make_step(run, "plan", dedupe_key="plan:v1", summary="Plan version 1 with 3 questions")
    source = make_source(run, title="Heat pump statistics 2023", domain="stats.example.org")
    make_evidence(run, source, question_ids=["q1"])
    make_evidence(run, source, question_ids=["q3"])
    make_step(
        run,
        "read",
        payload={"source_id": str(source.pk), "url": source.url, "question_ids": ["q1"]},
        summary="2 verified excerpts",
    )
    waiting = make_source(run, title="", domain="other.example.org")
    make_step(
        run,
        "read",
        status="running",
        payload={"source_id": str(waiting.pk), "url": waiting.url, "question_ids": ["q2"]},
    )
    html = timeline(client_for(owner), run)
    assert "Reading “Heat pump statistics 2023” (stats.example.org)" in html
    assert str(source.pk) not in html.split("step-label")[1]  # no raw ids in the words
    assert (
        "For sub-questions 1. Sub-question number 1 about heat pumps?; "
        "3. Sub-question number 3 about heat pumps?" in html
    )
    # A read still running names the question it was chosen for.
    assert "Reading other.example.org" in html
    assert "For sub-question 2. Sub-question number 2 about heat pumps?" in html
    # The plan step says which version it produced and that the plan moved on since.
    assert "Produced plan version 1; the plan is now version 8." in html
    assert "Plan version 1 with 3 questions" not in html


def test_progress_shows_elapsed_time_and_the_limit_met_first(owner, client_for):
    run = make_run(
        owner,
        status="researching",
        plan=plan_data(),
        plan_version=1,
        usage={"searches": 2, "fetched_sources": 3, "elapsed_seconds": 30.0, "iterations": 1},
    )
    run.budget = {**run.budget, "fetched_sources": 4}
    run.save()
    page = client_for(owner).get(reverse("research:run_detail", args=[run.pk])).content.decode()
    assert "Running for 30 s." in page
    # 3 of 4 sources read in 30 s: the last one at that pace in about 10 s.
    assert "The limit it will meet first is sources read (75% used)" in page
    assert "in about 10 s, unless the research finishes sooner." in page
