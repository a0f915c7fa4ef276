"""Dashboard search: questions, report text and evidence, with the matching passage shown;
only runs the person may see."""

from __future__ import annotations

from django.urls import reverse

from tests.web.factories import completed_run, make_evidence, make_run, make_source


def search(client, q: str) -> str:
    return client.get(reverse("research:dashboard"), {"q": q}).content.decode()


def test_a_word_in_the_report_finds_the_run_and_shows_the_passage(owner, client_for):
    run = completed_run(owner, question="How large is the market?")
    run.report["sections"][0]["statements"][0]["text"] = "Installers reported a shortage."
    run.save()
    make_run(owner, question="Something else entirely")
    page = search(client_for(owner), "installers")
    assert "How large is the market?" in page and "Something else entirely" not in page
    assert "Found in the report:" in page and "Installers reported a shortage." in page


def test_a_word_only_in_the_evidence_finds_the_run(owner, client_for):
    run = make_run(owner, question="Which subsidies exist?", status="completed")
    make_evidence(run, make_source(run), excerpt="The bonus is paid to the homeowner directly.")
    page = search(client_for(owner), "homeowner")
    assert "Which subsidies exist?" in page
    assert "Found in the evidence:" in page and "paid to the homeowner directly" in page


def test_the_question_still_matches_and_others_runs_stay_hidden(owner, outsider, client_for):
    make_run(owner, question="Heat pumps in cold climates")
    theirs = make_run(outsider, question="Heat pumps elsewhere")
    make_evidence(theirs, make_source(theirs), excerpt="Heat pumps everywhere.")
    page = search(client_for(owner), "heat pumps")
    assert "Heat pumps in cold climates" in page and "Heat pumps elsewhere" not in page
    assert "Found in the question:" in page
