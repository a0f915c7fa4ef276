"""Every page on a phone (headless Chromium at 390 and 360 px): nothing is wider than the
viewport, and tapping a citation in a report shows its excerpt in view."""

from __future__ import annotations

import json

import pytest

from tests.web.test_browser import (  # noqa: F401  (pytest fixtures)
    ARTIFACTS,
    CHROMIUM_ARGS,
    PASSWORD,
    browser_executable,
    served_app,
)
from tests.web.test_browser_together import shell

pytestmark = pytest.mark.browser

# A completed run with long titles and addresses, a contradiction and code; a plan awaiting
# approval; a staff account for the audit admin. Prints the ids as JSON.
SEED = """
import json
from accounts.models import User
from research.models import ResearchEvidence
from tests.web.factories import (awaiting_run, completed_run, make_evidence, make_source,
                                 make_step, report_data)
demo = User.objects.get(username="demo")
if not User.objects.filter(username="auditor").exists():
    User.objects.create_superuser("auditor", password=PASSWORD)
long = "statistics-and-market-intelligence.energy-transition-observatory.example.org"
done = completed_run(demo, sources=3, question="How large was the European heat-pump market "
                     "in 2023, and which member states grew fastest?")
source = make_source(done, domain=long, url="https://" + long + "/reports/2023/annual/"
                     "heat-pumps/residential/market-size-by-member-state-and-quarter.html",
                     title="Annual market report: residential heat pumps by member state, "
                     "quarter and technology (air-to-water, ground-source, hybrid)")
code = make_evidence(done, source, excerpt="curl -s https://" + long + "/api/v2/"
                     "sales?country=DE&year=2023&series=residential_air_to_water | jq .total")
other = make_evidence(done, source, excerpt="Sales fell to 120 thousand units.",
                      normalized_value="120000")
evidence = list(ResearchEvidence.objects.filter(run=done))
done.report = report_data(evidence, contradictions=[{
    "summary": "Sources disagree on 2023 sales.", "evidence_ids": [evidence[0].pk, other.pk]}])
done.save()
make_step(done, "read", payload={"source_id": str(source.pk), "url": source.url},
          summary="2 verified excerpts")
from django.utils import timezone
from tests.web.factories import make_run, plan_data
live = make_run(demo, status="researching", plan=plan_data(), plan_version=1,
                question="Which member states subsidise residential heat pumps, and by how much?",
                approved_at=timezone.now(), lease_owner="screenshot-only",
                lease_expires_at=timezone.now() + timezone.timedelta(days=1),
                usage={"searches": 3, "fetched_sources": 2, "model_calls": 4,
                       "elapsed_seconds": 42.0, "iterations": 1})
make_step(live, "plan", payload={})
make_step(live, "search", payload={"query": "heat pump subsidy by member state"},
          summary="9 results")
first = make_source(live, title="Heat pump subsidies in the member states")
make_evidence(live, first, excerpt="The grant covers up to 40 per cent of the installed cost.")
make_step(live, "read", payload={"source_id": str(first.pk), "url": first.url},
          summary="1 verified excerpt")
make_step(live, "search", status="running", payload={"query": "heat pump grant amounts 2024"})
plan = awaiting_run(demo, question="What does a long question look like when it wraps "
                    "across several lines on a narrow phone screen in portrait mode?")
print(json.dumps({"done": str(done.pk), "plan": str(plan.pk), "live": str(live.pk), "source": str(source.pk),
                  "evidence": other.pk}))
"""


def pages_of(ids: dict[str, str]) -> dict[str, str]:
    return {
        "dashboard": "/",
        "composer": "/new/",
        "plan": f"/runs/{ids['plan']}/",
        "workspace": f"/runs/{ids['done']}/",
        "report": f"/runs/{ids['done']}/report/",
        "evidence": f"/runs/{ids['done']}/evidence/{ids['evidence']}/",
        "teams": "/accounts/teams/",
        "admin runs": "/admin/research/researchrun/",
        "admin run": f"/admin/research/researchrun/{ids['done']}/change/",
        "admin source": f"/admin/research/researchsource/{ids['source']}/change/",
        "admin evidence": "/admin/research/researchevidence/",
    }


@pytest.fixture(scope="module")
def seeded(served_app):  # noqa: F811
    return json.loads(shell(served_app.data_dir, f"PASSWORD = {PASSWORD!r}\n" + SEED))


def log_in(page, username: str) -> None:
    page.goto("/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")


@pytest.fixture
def phone(browser_executable, served_app):  # noqa: F811
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_executable, headless=True, args=CHROMIUM_ARGS
        )

        def open_as(username: str, width: int = 390, scheme: str = "light"):
            context = browser.new_context(
                base_url=served_app,
                viewport={"width": width, "height": 844},
                color_scheme=scheme,
                has_touch=True,
                is_mobile=True,
            )
            page = context.new_page()
            page.set_default_timeout(30_000)
            log_in(page, username)
            return page

        yield open_as
        browser.close()


# The elements reaching furthest right, to say what makes a page too wide.
WIDEST = """(() => { const w = document.documentElement.clientWidth; return Array.from(
  document.querySelectorAll('body *')).map(e => [e.getBoundingClientRect().right, e.tagName +
  '.' + e.className + '#' + e.id]).filter(x => x[0] > w).sort((a, b) => b[0] - a[0])
  .slice(0, 6); })()"""


def widths(page, pages: dict[str, str]) -> dict[str, tuple[int, int]]:
    found = {}
    for name, url in pages.items():
        page.goto(url)
        page.wait_for_load_state("networkidle")
        found[name] = tuple(
            page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        )
        if found[name][0] > found[name][1] or found[name][1] != page.viewport_size["width"]:
            print(name, page.evaluate(WIDEST))
    return found


@pytest.mark.parametrize("width", [390, 360])
def test_no_page_is_wider_than_a_phone(phone, seeded, width):
    pages = pages_of(seeded)
    found = widths(phone("auditor", width), pages)
    print(f"\nscrollWidth at {width} px:", found)
    # The layout viewport is the phone's width (a page without a viewport meta tag would be
    # laid out at 980 px and zoomed out), and nothing is wider than it.
    too_wide = {name: w for name, w in found.items() if w[0] > w[1] or w[1] != width}
    assert too_wide == {}, too_wide


def test_tapping_a_citation_shows_its_excerpt_in_view(phone, seeded):
    page = phone("demo")
    page.goto(f"/runs/{seeded['done']}/report/")
    citation = page.locator("article a.citation").first
    citation.scroll_into_view_if_needed()
    citation.tap()
    excerpt = page.locator("#citation-panel blockquote.excerpt")
    excerpt.wait_for()
    box = excerpt.bounding_box()
    viewport = page.viewport_size
    assert box is not None
    assert box["y"] >= 0 and box["y"] + min(box["height"], 200) <= viewport["height"], box
    assert excerpt.is_visible()
    page.screenshot(path=str(ARTIFACTS / "citation-phone.png"), caret="initial")


# --------------------------------------------------------------------------------------------
# Accessibility: axe-core on every page, light and dark
# --------------------------------------------------------------------------------------------


def axe_source() -> str:
    """axe-core's script, as shipped in the locked axe-playwright-python wheel
    (docs/dependencies.md); only the script is used."""
    from importlib import resources

    try:
        return (resources.files("axe_playwright_python") / "axe.min.js").read_text()
    except ModuleNotFoundError:
        pytest.skip("axe-playwright-python is not installed (make install installs it)")


AXE_RUN = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, impact: v.impact, nodes: v.nodes.length,
    targets: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
}"""


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_no_serious_or_critical_accessibility_violations(phone, seeded, scheme):
    source = axe_source()
    pages = pages_of(seeded)
    counts: dict[str, dict[str, int]] = {}
    serious: dict[str, list] = {}
    for width in (1280, 390):
        page = phone("auditor", width, scheme)
        for name, url in pages.items():
            page.goto(url)
            page.wait_for_load_state("networkidle")
            # Evaluated over the DevTools protocol, so the page's CSP stays as it is.
            page.evaluate(source)
            found = page.evaluate(AXE_RUN)
            key = f"{name} @{width}"
            counts[key] = {
                impact: sum(1 for v in found if v["impact"] == impact)
                for impact in ("critical", "serious", "moderate", "minor")
            }
            bad = [v for v in found if v["impact"] in ("serious", "critical")]
            if bad:
                serious[key] = bad
        page.context.close()
    print(f"\naxe-core violations ({scheme}):")
    for key, count in counts.items():
        print(f"  {key}: {count}")
    assert serious == {}, json.dumps(serious, indent=1)


# --------------------------------------------------------------------------------------------
# Screenshots for docs/ui.md
# --------------------------------------------------------------------------------------------

SCREENSHOT_PAGES = ("dashboard", "plan", "workspace", "report")


def test_screenshots_of_the_main_pages(phone, seeded):
    """Desktop and 390 px, light and dark, of the dashboard, plan, live workspace and report.
    Written to tests/web/artifacts/screenshots/, or to ``$SCREENSHOTS_DIR`` (docs/screenshots
    when refreshing the committed ones)."""
    import os
    from pathlib import Path

    target = Path(os.environ.get("SCREENSHOTS_DIR") or ARTIFACTS / "screenshots")
    target.mkdir(parents=True, exist_ok=True)
    urls = {**pages_of(seeded), "workspace": f"/runs/{seeded['live']}/"}
    written = []
    for scheme in ("light", "dark"):
        for label, width in (("desktop", 1280), ("phone", 390)):
            page = phone("demo", width, scheme)
            for name in SCREENSHOT_PAGES:
                page.goto(urls[name])
                page.wait_for_load_state("networkidle")
                if name == "report":
                    page.locator("article a.citation").first.click()
                    page.locator("#citation-panel blockquote.excerpt").wait_for()
                path = target / f"{name}-{label}-{scheme}.png"
                page.screenshot(path=str(path), full_page=label == "desktop", caret="initial")
                written.append(path)
            page.context.close()
    assert len(written) == 16 and all(path.stat().st_size > 5_000 for path in written)
