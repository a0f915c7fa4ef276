"""The Questions tab in a real browser: two people watch one topic, one asks, and the
extractive answer appears live on both pages without a reload (Daphne with its embedded
worker; headless Chromium driven by Playwright). Skipped when Playwright or Chromium is
missing, like tests/web/test_browser.py."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.web.test_browser import (  # noqa: F401 (fixtures)
    CHROMIUM_ARGS,
    PASSWORD,
    ROOT,
    browser_executable,
    served_app,
    shot,
    watched_page,
)

pytestmark = pytest.mark.browser

FARES = "The adult single fare rises from 2.80 to 3.10 euros on 5 January 2025."
QUESTION = "How much does the adult single fare rise to?"
# In the served app's database: a team of the demo user with a second member (a viewer), a
# completed run shared with it whose one excerpt is FARES, and a topic on its report.
SEED = """
import hashlib
from django.utils import timezone
from accounts.models import Membership, User
from accounts.services import team_create
from research.models import ResearchEvidence, ResearchRun, ResearchSource
from research.questions import topic_create
owner = User.objects.get(username="demo")
viewer, _ = User.objects.get_or_create(username="viewer-two")
viewer.set_password({password!r}); viewer.save()
team = team_create(name="Transit desk", owner=owner)
Membership.objects.create(team=team, user=viewer, role=Membership.Role.VIEWER)
plan = {{"objective": "Fares", "questions": [{{"id": "q1", "text": "What do fares cost?"}}],
        "completion_criteria": {{"required_question_ids": ["q1"]}}}}
run = ResearchRun.objects.create(owner=owner, team=team, visibility="team", question="Fares",
                                 status="completed", plan=plan, plan_version=1,
                                 completed_at=timezone.now())
source = ResearchSource.objects.create(run=run, status="fetched", url="https://transit.example.org/fares",
                                       canonical_url="https://transit.example.org/fares",
                                       domain="transit.example.org", title="Fares 2025",
                                       snapshot_text={fares!r})
digest = hashlib.sha256({fares!r}.encode()).hexdigest()
ResearchEvidence.objects.create(
    id="ev-" + digest[:20], run=run, source=source, excerpt={fares!r}, question_ids=["q1"],
    locator={{"kind": "html", "start": 0, "end": {length}, "snapshot_hash": "a" * 64}},
    evidence_hash=digest, relevance_bp=9000, confidence_bp=8000)
run.report = {{"title": "Fares in 2025", "mode": "extractive",
              "executive_summary": [{{"claim_id": "c1", "kind": "finding", "text": {fares!r},
                                     "evidence_ids": ["ev-" + digest[:20]]}}]}}
run.save()
topic = topic_create(run=run, title="Fare changes", user=owner)
print(run.pk, topic.pk)
"""


def _seed(data_dir) -> tuple[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["DATA_DIR"] = str(data_dir)
    script = SEED.format(password=PASSWORD, fares=FARES, length=len(FARES))
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", script],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    run_id, topic_id = done.stdout.strip().splitlines()[-1].split()
    return run_id, topic_id


def _signed_in(browser, base_url: str, username: str):
    context = browser.new_context(base_url=base_url, viewport={"width": 1280, "height": 900})
    page = watched_page(context)
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    return page


def test_two_viewers_see_an_answer_appear_live(browser_executable, served_app):  # noqa: F811
    from playwright.sync_api import sync_playwright

    run_id, topic_id = _seed(served_app.data_dir)
    topic_path = f"/runs/{run_id}/questions/{topic_id}/"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_executable, headless=True, args=CHROMIUM_ARGS
        )
        asker = _signed_in(browser, served_app, "demo")
        watcher = _signed_in(browser, served_app, "viewer-two")
        for page in (asker, watcher):
            page.goto(f"/runs/{run_id}/report/")
            page.click("nav.tabs a:has-text('Questions')")
            page.click("a:has-text('Fare changes')")
            page.wait_for_url(f"**{topic_path}")
            page.wait_for_selector("#live-status[data-state=open]")
            page.evaluate("window.stillTheSamePage = true")

        asker.fill("#id_question", QUESTION)
        asker.click("form.ask button[type=submit]")
        for page in (asker, watcher):
            page.locator("#topic-thread .turn-answered").wait_for(timeout=60_000)
            answer = page.locator("#topic-thread .turn-answered .statement-finding").first
            assert "3.10 euros" in answer.inner_text()
            assert (
                page.locator("#topic-thread blockquote.excerpt")
                .first.inner_text()
                .startswith(FARES)
            )
            assert page.evaluate("window.stillTheSamePage === true")  # no reload
        shot(watcher, "questions-live")
        for page in (asker, watcher):
            assert not [e for e in page.console_errors if "CSP violation" in e], page.console_errors
        browser.close()
