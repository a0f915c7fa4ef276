"""“New research”: what the composer offers, what it creates and how it refuses bad input."""

from __future__ import annotations

import pytest
from django.urls import reverse

from accounts.models import Membership
from accounts.services import team_create
from research.models import ResearchRun

URL = reverse("research:run_new")


def _post(client, **fields):
    data = {
        "question": "How large is the European heat-pump market?",
        "depth": "standard",
        "report_template": "",
        "source_mode": "full_web",
        "domains": "",
        "excluded_domains": "",
        "team": "",
        "visibility": "private",
    }
    data.update(fields)
    return client.post(URL, data)


def test_composer_shows_the_budget_each_depth_implies(owner, client_for):
    page = client_for(owner).get(URL).content.decode()
    assert "up to 8 searches" in page and "10 sources" in page  # quick
    assert "up to 18 searches" in page and "20 min" in page  # standard
    assert "up to 32 searches" in page and "45 min" in page  # thorough
    assert "Due diligence" in page and "Items to verify" in page


def test_creating_research_stores_policy_template_and_sharing(owner, team, client_for):
    response = _post(
        client_for(owner),
        report_template="literature_review",
        source_mode="prefer_domains",
        domains="Stats.Example.org, energy.example.gov",
        excluded_domains="content-farm.example",
        team=str(team.pk),
        visibility="link",
        depth="quick",
    )
    run = ResearchRun.objects.get()
    assert response.status_code == 302
    assert response["Location"] == reverse("research:run_detail", args=[run.pk])
    assert run.owner == owner and run.depth == "quick"
    assert run.report_template == "literature_review"
    assert run.source_policy["mode"] == "prefer_domains"
    assert run.source_policy["domains"] == ["stats.example.org", "energy.example.gov"]
    assert run.source_policy["excluded_domains"] == ["content-farm.example"]
    assert run.team == team and run.visibility == "link" and run.share_token


def test_domain_controls_accept_ip_addresses_and_bracketed_ipv6(owner, client_for):
    response = _post(
        client_for(owner),
        source_mode="only_domains",
        domains="10.0.0.5, [fd00::1]\n[fd00::1]:8443",
        excluded_domains="[FD00::9]:8080",
    )
    assert response.status_code == 302
    run = ResearchRun.objects.get()
    assert run.source_policy["domains"] == ["10.0.0.5", "[fd00::1]", "[fd00::1]:8443"]
    assert run.source_policy["excluded_domains"] == ["[fd00::9]:8080"]


def test_the_same_submission_twice_makes_one_run(owner, client_for):
    client = client_for(owner)
    _post(client, client_request_id="abc123")
    _post(client, client_request_id="abc123")
    assert ResearchRun.objects.count() == 1


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"question": "   "}, "Write the question you want researched."),
        (
            {"domains": "example.org, not-a-domain!", "source_mode": "prefer_domains"},
            "“not-a-domain!” is not a domain name",
        ),
        (
            {"domains": "example.org localhost 999", "source_mode": "prefer_domains"},
            "“localhost”, “999” are not domain names",
        ),
        (
            {"domains": "https://example.org/page", "source_mode": "only_domains"},
            "is not a domain name; write bare names like example.org",
        ),
        ({"source_mode": "only_domains"}, "List at least one domain for this source setting."),
        (
            {"excluded_domains": "10.0.0.256"},
            "“10.0.0.256” is not a valid IPv4 address: write four numbers from 0 to 255",
        ),
        (
            {"domains": "[fd00::1]:99999", "source_mode": "only_domains"},
            "“[fd00::1]:99999” has a port outside 1–65535.",
        ),
        (
            {"domains": "[fd00::1", "source_mode": "only_domains"},
            "“[fd00::1” has an opening bracket but no closing one; write an IPv6 address like [fd00::1]",
        ),
        ({"visibility": "team"}, "Choose the team to share this research with."),
        ({"team": "999999"}, "That team does not exist or you cannot start research for it"),
        ({"depth": "bottomless"}, "Choose quick, standard or thorough."),
    ],
)
def test_bad_input_is_refused_with_a_clear_message(owner, client_for, fields, message):
    response = _post(client_for(owner), **fields)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not ResearchRun.objects.exists()


def test_a_team_the_user_only_views_cannot_receive_new_research(owner, outsider, client_for):
    team = team_create(name="Other lab", owner=owner)
    Membership.objects.create(team=team, user=outsider, role=Membership.Role.VIEWER)
    client = client_for(outsider)
    assert "Other lab" not in client.get(URL).content.decode()
    response = _post(client, team=str(team.pk), visibility="team")
    assert response.status_code == 422
    assert "cannot start research for it" in response.content.decode()


def test_depth_above_the_deployment_cap_is_refused(owner, client_for, settings):
    settings.RESEARCH_MAX_DEPTH = "quick"
    client = client_for(owner)
    page = client.get(URL).content.decode()
    assert "Above this server" in page
    assert 'value="quick"\n                 checked' in page  # the largest allowed is preselected
    response = _post(client, depth="thorough")
    assert response.status_code == 422
    assert "This server caps research at the quick budget" in response.content.decode()
    assert not ResearchRun.objects.exists()


def test_typed_input_is_kept_when_refused(owner, client_for):
    response = _post(
        client_for(owner), question="Keep me", domains="bad domain.org", source_mode="only_domains"
    )
    page = response.content.decode()
    assert "Keep me" in page and "bad domain.org" in page


def test_anonymous_visitors_are_sent_to_log_in(client_for):
    response = client_for(None).get(URL)
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("accounts:login"))
