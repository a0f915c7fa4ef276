"""The dashboard: my runs and my teams' runs, filters, search and pages."""

from __future__ import annotations

from django.urls import reverse

from accounts.services import team_create
from research.models import ResearchRun
from tests.web.factories import make_run

URL = reverse("research:dashboard")


def test_lists_my_runs_and_runs_my_teams_share(owner, team, editor, outsider, client_for):
    mine = make_run(editor, question="Editor's own private question")
    shared = make_run(owner, question="Shared with the lab", team=team, visibility="team")
    private = make_run(owner, question="Alice keeps this private", team=team)
    foreign = make_run(outsider, question="Mallory's question")
    page = client_for(editor).get(URL).content.decode()
    assert mine.question.replace("'", "&#x27;") in page
    assert shared.question in page
    assert private.question not in page and foreign.question not in page
    assert "Lab" in page and "alice" in page  # team and owner columns


def test_filters_by_status_team_owner_and_question(owner, team, editor, client_for):
    other_team = team_create(name="Other", owner=editor)
    make_run(owner, question="Alpha heat pumps", status="completed", team=team, visibility="team")
    make_run(editor, question="Beta rail ridership", status="researching")
    make_run(
        editor,
        question="Gamma heat pumps",
        status="awaiting_approval",
        team=other_team,
        visibility="team",
    )
    client = client_for(editor)

    def listed(**query) -> set[str]:
        page = client.get(URL, query).content.decode()
        return {name for name in ("Alpha", "Beta", "Gamma") if f"{name} " in page}

    assert listed() == {"Alpha", "Beta", "Gamma"}
    assert listed(q="heat") == {"Alpha", "Gamma"}
    assert listed(status="completed") == {"Alpha"}
    assert listed(status="active") == {"Beta"}
    assert listed(status="awaiting_approval") == {"Gamma"}
    assert listed(team=str(other_team.pk)) == {"Gamma"}
    assert listed(mine="on") == {"Beta", "Gamma"}
    assert listed(mine="on", q="rail") == {"Beta"}
    assert listed(team="not-a-team") == {"Alpha", "Beta", "Gamma"}  # a bad filter is ignored


def test_paginates(owner, client_for):
    for n in range(30):
        make_run(owner, question=f"Question number {n:02d}")
    client = client_for(owner)
    first = client.get(URL).content.decode()
    assert "Page 1 of 2" in first and "Question number 29" in first
    assert "Question number 04" not in first
    second = client.get(URL, {"page": 2, "q": "Question"}).content.decode()
    assert "Question number 04" in second and "Page 2 of 2" in second
    assert "q=Question&amp;page=1" in second  # page links keep the filters


def test_htmx_filtering_returns_only_the_list(owner, client_for, htmx_headers):
    make_run(owner, question="Solar panels")
    response = client_for(owner).get(URL, {"q": "solar"}, **htmx_headers)
    page = response.content.decode()
    assert page.lstrip().startswith('<section id="run-list"')
    assert "Solar panels" in page and "<html" not in page


def test_progress_and_status_are_shown(owner, client_for):
    make_run(owner, status="researching", usage={"searches": 9}, question="Halfway there")
    page = client_for(owner).get(URL).content.decode()
    assert 'value="50"' in page and "Researching" in page


def test_empty_dashboard_invites_a_first_run(owner, client_for):
    page = client_for(owner).get(URL).content.decode()
    assert "Start your first research" in page
    assert ResearchRun.objects.count() == 0


def test_back_button_restores_the_whole_page(owner, client_for, htmx_headers):
    response = client_for(owner).get(
        URL, {"q": "x"}, HTTP_HX_HISTORY_RESTORE_REQUEST="true", **htmx_headers
    )
    assert "<html" in response.content.decode()
    assert "HX-Request" in response["Vary"]  # browsers must not cache a partial as the page
