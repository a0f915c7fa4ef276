"""Options of `manage.py research` that are refused before any run exists: one sentence each."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from research.models import ResearchRun

UNKNOWN_RUN = "3f2b6c1e-8d4a-4f57-9a0e-2c1d5b7e9f10"


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        ((), "Give the question to research in quotes, or --resume RUN_ID to continue a run."),
        (
            ("q", "--only-domains", "a.test", "--prefer-domains", "b.test"),
            "Choose either --only-domains or --prefer-domains, not both.",
        ),
        (("q", "--user", "nobody"), "There is no account named 'nobody'."),
        (("--resume", "not-a-run"), "'not-a-run' is not a run id"),
        (("--resume", UNKNOWN_RUN), f"There is no run with id {UNKNOWN_RUN}."),
        (("q", "--resume", UNKNOWN_RUN), "Give either a question or --resume RUN_ID, not both."),
        (
            ("--resume", UNKNOWN_RUN, "--depth", "quick", "--exclude-domains", "a.test"),
            "--depth, --exclude-domains only applies to a new run",
        ),
        (
            ("q", "--output", "/no/such/folder/report.md"),
            "the folder /no/such/folder does not exist",
        ),
    ],
)
@pytest.mark.django_db
def test_bad_options_are_refused_with_one_sentence(args, sentence):
    with pytest.raises(CommandError) as refused:
        call_command("research", *args)

    assert sentence in str(refused.value)
    assert refused.value.returncode == 2
    assert not ResearchRun.objects.exists()


def test_an_invalid_domain_is_refused_without_creating_a_run(owner):
    with pytest.raises(CommandError, match="is not a bare domain name") as refused:
        call_command("research", "q", "--user", owner.username, "--only-domains", "http://a.test/")

    assert refused.value.returncode == 2
    assert not ResearchRun.objects.exists()


@pytest.mark.django_db
def test_without_a_demo_account_the_owner_must_be_named():
    with pytest.raises(CommandError, match="pass --user NAME, or create the “demo” account"):
        call_command("research", "q")


def test_resume_refuses_another_users_run(owner, outsider):
    run = ResearchRun.objects.create(owner=owner, question="q", status="paused")

    with pytest.raises(CommandError, match=f"belongs to {owner.username}, not {outsider.username}"):
        call_command("research", "--resume", str(run.pk), "--user", outsider.username)
