"""The whole product in a real browser: Debian's Chromium driven by Playwright against the
app served by Daphne (embedded worker, extractive backend) searching the frozen local web.

Skipped, with the reason, when Playwright or Chromium is not installed. Screenshots of the
plan, the live timeline and the report are written to tests/web/artifacts/.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fixtures.frozen_web.server import FrozenWeb, serve_frozen_web

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"
PASSWORD = "browser-test-password-123"
# Headless Chromium with everything that would phone home switched off.
CHROMIUM_ARGS = [
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-sync",
    "--disable-client-side-phishing-detection",
    "--disable-features=Translate,OptimizationHints,MediaRouter,AutofillServerCommunication",
    "--metrics-recording-only",
    "--no-first-run",
    "--no-default-browser-check",
]
QUESTION = "How did ridership on the Harwick Metro Line 3 extension compare with forecasts?"
NEW_QUESTION = "What did the transit authority say about how the forecast was made?"


def chromium_path() -> str | None:
    for candidate in (
        os.environ.get("CHROMIUM_PATH"),
        "/usr/bin/chromium",
        shutil.which("chromium"),
        shutil.which("chromium-browser"),
    ):
        if candidate and Path(candidate).exists():
            return candidate
    return None


@pytest.fixture(scope="module")
def browser_executable() -> str:
    pytest.importorskip("playwright.sync_api", reason="Playwright is not installed")
    path = chromium_path()
    if path is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def server_env(web: FrozenWeb, data_dir: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
        and not k.startswith("LLM_")  # the extractive backend: no model
    }
    settings = web.django_settings()
    env.update(
        DATA_DIR=str(data_dir),
        DEMO_PASSWORD=PASSWORD,
        RESEARCH_FETCH_ALLOWED_HOSTS=",".join(settings["RESEARCH_FETCH_ALLOWED_HOSTS"]),
        RESEARCH_FETCH_STATIC_HOSTS=",".join(settings["RESEARCH_FETCH_STATIC_HOSTS"]),
        RESEARCH_SEARCH_PROVIDERS="searxng",
        SEARXNG_URL=settings["SEARXNG_URL"],
        RESEARCH_FETCH_DOMAIN_INTERVAL="0",
        RESEARCH_SEARCH_PROVIDER_INTERVAL="0",
    )
    return env


class ServedApp(str):
    """The served app's base URL, knowing the data directory of its database."""

    data_dir: Path


@pytest.fixture(scope="module")
def served_app(browser_executable, tmp_path_factory) -> Iterator[ServedApp]:
    """Daphne on a free port with its embedded worker, pointed at the frozen web."""
    data_dir = tmp_path_factory.mktemp("browser-app")
    with serve_frozen_web() as web:
        env = server_env(web, data_dir)
        for command in (["migrate", "--noinput", "-v0"], ["ensure_demo_account"]):
            subprocess.run(
                [sys.executable, "manage.py", *command],
                cwd=ROOT,
                env=env,
                check=True,
                capture_output=True,
            )
        port = free_port()
        log_path = data_dir / "server.log"
        with log_path.open("w") as log:
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "daphne",
                    "-b",
                    "127.0.0.1",
                    "-p",
                    str(port),
                    "config.asgi:application",
                ],
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            base = ServedApp(f"http://127.0.0.1:{port}")
            base.data_dir = data_dir
            try:
                _wait_until_serving(base, process, log_path)
                yield base
            finally:
                process.terminate()
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()


def _wait_until_serving(base: str, process: subprocess.Popen, log_path: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail("Daphne exited early:\n" + log_path.read_text())
        try:
            if httpx.get(base + "/accounts/login/", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.3)
    pytest.fail("The app did not answer within 60 s:\n" + log_path.read_text())


def watched_page(context):
    """A new page of ``context`` that records console errors in ``page.console_errors``; any
    Content-Security-Policy violation (an inline script or style) is reported there too, so a
    test that asserts the list is empty fails on it."""
    context.add_init_script(
        "document.addEventListener('securitypolicyviolation', e => "
        "console.error('CSP violation: ' + e.violatedDirective + ' ' + e.sourceFile));"
    )
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.console_errors = []
    page.on("console", lambda m: m.type == "error" and page.console_errors.append(m.text))
    return page


@pytest.fixture
def page(browser_executable, served_app):
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_executable, headless=True, args=CHROMIUM_ARGS
        )
        context = browser.new_context(
            base_url=served_app, viewport={"width": 1360, "height": 900}, accept_downloads=True
        )
        yield watched_page(context)
        browser.close()


def shot(page, name: str) -> None:
    # caret="initial": Playwright's caret hiding would write style attributes into the page.
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True, caret="initial")


def test_research_from_question_to_exported_report(page, tmp_path):
    # Log in.
    page.goto("/accounts/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")

    # Ask a question on the frozen local web.
    page.click("text=New research")
    page.fill("#id_question", QUESTION)
    page.check("input[name=depth][value=quick]")
    page.click("button:has-text('Draft the research plan')")
    page.wait_for_url("**/runs/**")

    # The plan arrives over the WebSocket; add a sub-question and approve it.
    page.wait_for_selector("form.plan-form")
    shot(page, "plan")
    questions = page.locator(".question-row textarea")
    before = questions.count()
    page.click("button:has-text('Add a sub-question')")
    questions.nth(before).wait_for()  # (locators, not wait_for_function: the CSP forbids eval)
    questions.nth(before).fill(NEW_QUESTION)
    page.evaluate("window.stillTheSamePage = true")
    rows_before = page.locator("#run-timeline li.step").count()
    # The approval's own answer carries the notice (asserted on the response: a quick run's
    # live update may already have re-rendered the plan section by the time it is looked for).
    with page.expect_response(lambda r: r.request.method == "POST" and "/plan" in r.url) as answer:
        page.click("button:has-text('Approve and start research')")
    assert answer.value.status == 200
    assert "Plan approved" in answer.value.text()

    # At least three new timeline rows appear live, without a reload.
    page.locator("#run-timeline li.step").nth(rows_before + 2).wait_for()
    assert page.evaluate("window.stillTheSamePage === true")
    assert page.locator("#run-timeline").get_by_text("Searching").count() >= 1
    shot(page, "timeline")

    # The report link appears when the run completes, still without a reload.
    page.wait_for_selector("a:has-text('Open the report')", timeout=120_000)
    assert page.evaluate("window.stillTheSamePage === true")
    assert page.locator("#run-plan").get_by_text(NEW_QUESTION).count() == 1  # the approved plan
    page.click("a:has-text('Open the report')")

    # Clicking a citation shows its exact excerpt and where it comes from.
    citation = page.locator("article a.citation").first
    citation.click()
    panel = page.locator("#citation-panel")
    panel.locator("blockquote.excerpt").wait_for()
    excerpt = panel.locator("blockquote.excerpt").inner_text()
    assert len(excerpt) > 20
    assert panel.get_by_text("Open the original").count() == 1
    assert panel.locator("a.source-link").get_attribute("rel") == "noopener noreferrer nofollow"
    assert page.locator("text=Extractive report.").count() >= 1
    shot(page, "report")

    # Export Markdown.
    with page.expect_download() as download:
        page.click("a:has-text('Export Markdown')")
    target = tmp_path / "report.md"
    download.value.save_as(target)
    markdown = target.read_text()
    assert markdown.startswith("# ")
    assert "*Question:* How did ridership" in markdown
    assert "## Sources" in markdown and "[\\[1\\]]" in markdown
    shutil.copy(target, ARTIFACTS / "report.md")

    assert not [e for e in page.console_errors if "CSP violation" in e], page.console_errors


# --------------------------------------------------------------------------------------------
# Source text read back from the rendered page
# --------------------------------------------------------------------------------------------

TAG_LIKE = "if a<b and c>d"
TASK = "<Task finished coro=<bug() done, defined at t.py:3> result=None>"
SCRIPT = "<script>document.title='pwned'</script>"
PROSE = f"{TAG_LIKE} is true.\n{TASK}\nTom &amp; Jerry\t{SCRIPT}"
CODE = f'>>> task\n{TASK}\n  File "t.py", line 1, in <module>'
TITLE = f"Coroutines: <module> & {SCRIPT}"
# Creates, in the served app's database, a completed run of the demo user whose source and
# evidence hold the strings above; prints the run id.
SEED = """
import hashlib
from django.utils import timezone
from accounts.models import User
from research.models import ResearchEvidence, ResearchRun, ResearchSource
texts = {texts!r}
owner = User.objects.get(username="demo")
plan = {{"objective": "Exact text", "questions": [{{"id": "q1", "text": "What is shown?"}}],
        "completion_criteria": {{"required_question_ids": ["q1"]}}}}
run = ResearchRun.objects.create(owner=owner, question="Exact text", status="completed",
                                 plan=plan, plan_version=1, completed_at=timezone.now())
source = ResearchSource.objects.create(run=run, status="fetched", url="https://docs.example.org/t",
                                       canonical_url="https://docs.example.org/t", domain="docs.example.org",
                                       title=texts["title"], snapshot_text="x")
ids = []
for start, name, code in ((0, "prose", False), (2, "code", True)):
    digest = hashlib.sha256(texts[name].encode()).hexdigest()
    ResearchEvidence.objects.create(
        id="ev-" + digest[:20], run=run, source=source, excerpt=texts[name], question_ids=["q1"],
        locator={{"kind": "html", "start": start, "end": start + 1, "snapshot_hash": "a" * 64,
                 "code": code}},
        evidence_hash=digest, relevance_bp=9000, confidence_bp=8000)
    ids.append("ev-" + digest[:20])
run.report = {{"title": "Report on " + texts["prose"].splitlines()[0], "mode": "model",
              "executive_summary": [{{"claim_id": "c1", "kind": "finding", "text": texts["prose"],
                                     "evidence_ids": ids}}]}}
run.save()
print(run.pk)
"""


def _seed_run(data_dir: Path) -> str:
    texts = {"prose": PROSE, "code": CODE, "title": TITLE}
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env["DATA_DIR"] = str(data_dir)
    done = subprocess.run(
        [sys.executable, "manage.py", "shell", "-c", SEED.format(texts=texts)],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout.strip().splitlines()[-1]


def test_source_text_reads_back_exactly_from_the_rendered_page(page, served_app):
    run_id = _seed_run(served_app.data_dir)
    page.goto("/accounts/login/")
    page.fill("#id_username", "demo")
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url("**/")
    page.goto(f"/runs/{run_id}/report/")
    excerpts = page.locator("#sources blockquote.excerpt")
    assert sorted(excerpts.all_inner_texts()) == sorted([PROSE, CODE])
    assert page.locator("#sources pre.code").inner_text() == CODE
    assert page.locator(".statement-text").first.inner_text() == PROSE
    assert TITLE in page.locator("#sources .source-link").first.inner_text()
    # The citation panel shows the same excerpt.
    page.locator("article a.citation").first.click()
    panel = page.locator("#citation-panel blockquote.excerpt")
    panel.wait_for()
    assert panel.inner_text() in (PROSE, CODE)
    # Nothing in the text ran.
    assert page.title() != "pwned"
    assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
    shot(page, "exact-text")
    assert not [e for e in page.console_errors if "CSP violation" in e], page.console_errors


# --------------------------------------------------------------------------------------------
# Chromium's innerText: a second independent rendering of real documentation pages
# --------------------------------------------------------------------------------------------

# Pages per documentation set read in Chromium (with their own style sheets): a browser page
# load costs far more than the lxml rendering, which checks 330 pages in the sources tests.
CHROMIUM_PAGES_PER_SET = 2


def test_cited_excerpts_occur_in_chromium_inner_text_of_real_pages(
    browser_executable, real_docs_web
):
    from urllib.parse import urlsplit

    from playwright.sync_api import sync_playwright

    from research.sources.safe_fetch import SafeFetcher
    from tests.fixtures.real_docs.catalogue import DOC_SETS
    from tests.fixtures.real_docs.measure import measure_page, sample_pages
    from tests.fixtures.real_docs.rendering import occurs_in_rendering

    by_host = {docset.host: docset for docset in DOC_SETS.values()}

    def serve(route) -> None:
        # Pages, style sheets and images come from where Debian installed them; nothing else.
        url = urlsplit(route.request.url)
        docset = by_host.get(url.hostname or "")
        if docset is None or not url.path.startswith(docset.prefix):
            route.abort()
            return
        file = docset.root / url.path[len(docset.prefix) :]
        # The pages' own script files stay out: the text is what the HTML and CSS show.
        if file.is_file() and file.suffix != ".js":
            route.fulfill(path=str(file))
        else:
            route.abort()

    fetcher = SafeFetcher(real_docs_web.sources_config())
    checked = 0
    missing = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=browser_executable, headless=True, args=CHROMIUM_ARGS
        )
        # JavaScript stays on for Playwright's own calls (add_style_tag needs it).
        context = browser.new_context()
        context.route("**/*", serve)
        tab = context.new_page()
        for docpage in sample_pages(CHROMIUM_PAGES_PER_SET):
            result = measure_page(docpage, fetcher, real_docs_web.port)
            tab.goto(f"http://{docpage.host}{docpage.path}")
            # Node.js's style sheet defers painting sections off screen (content-visibility:
            # auto), which keeps them out of innerText until a reader scrolls to them.
            tab.add_style_tag(content="* { content-visibility: visible !important; }")
            # A reader opens a <details> element with one click; its text counts as shown, in
            # the snapshot and in the lxml rendering alike (docs/evaluation.md).
            tab.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true; })")
            inner_text = tab.locator("body").inner_text()
            checked += len(result.excerpts)
            missing += [
                (docpage.path, excerpt)
                for excerpt in result.excerpts
                if not occurs_in_rendering(excerpt, inner_text)
            ]
        browser.close()
    assert checked >= 5 * CHROMIUM_PAGES_PER_SET * len(DOC_SETS)
    assert missing == [], "\n".join(f"{path}: {excerpt!r}" for path, excerpt in missing)


def test_the_api_docs_page_works_under_the_strict_csp(page):
    """Swagger UI comes from django-ninja's bundled static files: no CDN, no inline script,
    and it renders every operation of the schema without a CSP violation."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    page.goto("/api/v1/docs")
    page.wait_for_selector(".opblock-summary-path")
    paths = page.locator(".opblock-summary-path").all_inner_texts()
    assert "/api/v1/runs/{run_id}/report" in [p.replace("\u200b", "") for p in paths]
    page.locator(".opblock-summary").first.click()  # expand one operation
    page.wait_for_selector(".opblock-body")
    assert not page.console_errors, page.console_errors
    base = page.url.split("/api/")[0]
    assert all(url.startswith(base) or url.startswith("data:") for url in requested), requested
