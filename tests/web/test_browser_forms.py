"""Forms in headless Chromium: a 20,000-character paste into the question is kept whole and
announced before anything is cut; the flash about drafting the plan disappears once the plan
is there; a run is shared by link without a team, with one sentence saying who can see it."""

from __future__ import annotations

import pytest

from tests.web.test_browser import (  # noqa: F401  (pytest fixtures)
    ARTIFACTS,
    CHROMIUM_ARGS,
    PASSWORD,
    QUESTION,
    browser_executable,
    served_app,
)

pytestmark = pytest.mark.browser

LONG = ("How did ridership compare with the forecast on each line of the network? " * 300)[:20_000]


@pytest.fixture
def page(browser_executable, served_app):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_executable, headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(base_url=served_app, viewport={"width": 1280, "height": 900})
        context.grant_permissions(["clipboard-read", "clipboard-write"], origin=served_app)
        page = context.new_page()
        page.set_default_timeout(30_000)
        page.goto("/accounts/login/")
        page.fill("#id_username", "demo")
        page.fill("#id_password", PASSWORD)
        page.click("button[type=submit]")
        page.wait_for_url("**/")
        yield page
        browser.close()


def test_a_long_paste_is_announced_and_kept_then_a_run_is_shared_by_link(page):
    page.goto("/new/")
    question = page.locator("#id_question")
    page.evaluate("text => navigator.clipboard.writeText(text)", LONG)
    question.focus()
    page.keyboard.press("Control+V")
    # Nothing was cut, and the person is told how much is over the limit before submitting.
    assert len(question.input_value()) == 20_000
    alert = page.locator("#id_question ~ .counter-alert[role=alert]")
    assert alert.inner_text() == (
        "This text has 20,000 characters; at most 4,000 are accepted. Remove 16,000 before "
        "submitting — nothing has been cut."
    )
    assert page.locator("#id_question-counter").inner_text() == "20,000 of 4,000 characters"
    page.check("input[name=depth][value=quick]")
    page.click("button:has-text('Draft the research plan')")
    page.get_by_text("The question is too long").first.wait_for()
    assert len(page.locator("#id_question").input_value()) == 20_000

    page.fill("#id_question", QUESTION)
    assert alert.inner_text() == ""
    page.click("button:has-text('Draft the research plan')")
    page.wait_for_url("**/runs/**")
    flash = page.get_by_text("Research created. The plan is being drafted.")
    page.wait_for_selector("form.plan-form", timeout=60_000)
    flash.wait_for(state="detached", timeout=10_000)

    # Share by link without choosing a team.
    sharing = page.locator("#run-sharing")
    sharing.locator("select[name=visibility]").select_option("link")
    sharing.locator("select[name=team]").select_option("")
    sharing.get_by_role("button", name="Update sharing").click()
    page.locator("#share-url").wait_for()
    assert page.locator("#share-url").input_value().startswith(page.url.split("/runs/")[0])
    assert sharing.locator("#who-can-see").inner_text() == (
        "Anyone with the link below can read the report; only demo can see the whole run."
    )
    assert sharing.locator(".errors").count() == 0
