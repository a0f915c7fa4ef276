"""Two people on one plan in two browser contexts (headless Chromium): a live update never
replaces a form someone has changed, a newer version is announced with a field-by-field
comparison and merged on request, and a refused save keeps its message and the person's edits
when the live update for the other person's version arrives."""

from __future__ import annotations

import os
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.web.test_browser import (  # noqa: F401  (pytest fixtures)
    ARTIFACTS,
    CHROMIUM_ARGS,
    PASSWORD,
    ROOT,
    browser_executable,
    served_app,
)

pytestmark = pytest.mark.browser

# Two team editors and a run of theirs awaiting approval; prints the run id.
SEED = """
from accounts.models import Membership, User
from accounts.services import team_create
from research.models import ResearchRun
from tests.web.factories import awaiting_run
users = {}
for name in ("alice", "bob"):
    users[name] = User.objects.filter(username=name).first() or User.objects.create_user(
        name, password=PASSWORD)
team = team_create(name="Plan team " + str(User.objects.count()), owner=users["alice"])
Membership.objects.create(team=team, user=users["bob"], role=Membership.Role.EDITOR)
run = awaiting_run(users["alice"], team=team, visibility=ResearchRun.Visibility.TEAM)
print(run.pk)
"""


def shell(data_dir: Path, code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


@contextmanager
def two_people(browser_executable, served_app):  # noqa: F811
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_executable, headless=True, args=CHROMIUM_ARGS
        )
        pages = []
        for name in ("alice", "bob"):
            context = browser.new_context(
                base_url=served_app, viewport={"width": 1280, "height": 900}
            )
            page = context.new_page()
            page.set_default_timeout(30_000)
            page.console_errors = []
            page.on(
                "console", lambda m, p=page: m.type == "error" and p.console_errors.append(m.text)
            )
            page.goto("/accounts/login/")
            page.fill("#id_username", name)
            page.fill("#id_password", PASSWORD)
            page.click("button[type=submit]")
            page.wait_for_url("**/")
            pages.append(page)
        try:
            yield pages
        finally:
            browser.close()


def open_plan(page, run_id: str) -> None:
    page.goto(f"/runs/{run_id}/")
    page.wait_for_selector("#live-status[data-state=open]")
    page.wait_for_selector("form.plan-form")


def test_a_live_update_never_replaces_an_edited_plan_form(browser_executable, served_app):  # noqa: F811
    run_id = shell(served_app.data_dir, f"PASSWORD = {PASSWORD!r}\n" + SEED)
    with two_people(browser_executable, served_app) as (alice, bob):
        open_plan(alice, run_id)
        open_plan(bob, run_id)
        # Bob is typing; Alice saves a change to another field.
        bob.fill("input[name=audience]", "Bob's readers")
        alice.fill("input[name=decision_or_outcome]", "Whether to fund a pilot")
        alice.click(".actions button:has-text('Save as new version')")
        alice.wait_for_selector("text=Plan saved as version 2")

        # Bob's form is kept; he is told about version 2 and sees what changed in it.
        review = bob.locator("#plan-review")
        review.get_by_text("A newer version (v2 by alice) exists — review changes.").wait_for(
            timeout=20_000
        )
        assert bob.input_value("input[name=audience]") == "Bob's readers"
        row = review.locator("tr[data-field=decision_or_outcome]")
        assert "Whether to fund a pilot" in row.inner_text()
        bob.screenshot(path=str(ARTIFACTS / "plan-review.png"), full_page=True, caret="initial")

        # Merging keeps Bob's edit and takes Alice's; saving then loses neither.
        review.get_by_role("button", name="Merge version 2 into my form").click()
        bob.wait_for_selector("text=Version 2 merged into your form")
        assert bob.input_value("input[name=audience]") == "Bob's readers"
        assert bob.input_value("input[name=decision_or_outcome]") == "Whether to fund a pilot"
        bob.click(".actions button:has-text('Save as new version')")
        bob.wait_for_selector("text=Plan saved as version 3")
        # Alice had not changed her form since saving: the live update shows version 3.
        alice.locator("#run-plan h2").get_by_text("version 3").wait_for(timeout=20_000)
        assert alice.input_value("input[name=audience]") == "Bob's readers"
        assert alice.input_value("input[name=decision_or_outcome]") == "Whether to fund a pilot"
        for page in (alice, bob):
            assert not [e for e in page.console_errors if "CSP" in e], page.console_errors


def test_a_refused_save_survives_the_live_update(browser_executable, served_app):  # noqa: F811
    run_id = shell(served_app.data_dir, f"PASSWORD = {PASSWORD!r}\n" + SEED)
    with two_people(browser_executable, served_app) as (alice, bob):
        open_plan(alice, run_id)
        open_plan(bob, run_id)
        bob.fill("textarea[name=objective]", "Bob's sharper objective.")
        alice.fill("input[name=decision_or_outcome]", "Whether to fund a pilot")
        alice.fill("textarea[name=geographies]", "Poland")
        alice.click(".actions button:has-text('Save as new version')")
        alice.wait_for_selector("text=Plan saved as version 2")
        bob.click(".actions button:has-text('Save as new version')")
        conflict = bob.locator("#plan-conflict")
        conflict.get_by_text("Not saved: version 2 by alice").wait_for()
        assert conflict.locator("tr[data-field=decision_or_outcome]").count() == 1
        assert conflict.locator("tr[data-field=geographies]").count() == 1
        # The message is next to the Save button, on screen with it.
        box = conflict.bounding_box()
        save = bob.locator(".actions button:has-text('Save as new version')").bounding_box()
        assert 0 <= save["y"] - (box["y"] + box["height"]) < 120
        # The live update for version 2 arrives within seconds; it must not wipe anything.
        bob.wait_for_timeout(8_000)
        assert conflict.is_visible()
        assert bob.input_value("textarea[name=objective]") == "Bob's sharper objective."
        # Saving again keeps Alice's fields: nothing she changed is reverted.
        assert bob.input_value("input[name=decision_or_outcome]") == "Whether to fund a pilot"
        bob.click(".actions button:has-text('Save as new version')")
        bob.wait_for_selector("text=Plan saved as version 3")
        assert bob.input_value("textarea[name=geographies]") == "Poland"
        assert bob.input_value("textarea[name=objective]") == "Bob's sharper objective."
