"""`manage.py research` end to end in a child process: report, JSON document, exit status,
waiting for approval, and Ctrl-C leaving the run paused and resumable."""

from __future__ import annotations

import json
import re
import signal
import time

import pytest

from research.engine.ledger import normalize_for_matching
from tests.cli.conftest import CommandLine
from tests.fixtures.frozen_web.server import FrozenWeb

pytestmark = pytest.mark.service_neutral

QUESTION = "How many weekday boardings did the Harwick Metro Line 3 extension record?"
RUN_ID = re.compile(r"Run ([0-9a-f-]{36})")


def test_json_document_resolves_every_citation_to_a_verified_excerpt(cli: CommandLine, tmp_path):
    output = tmp_path / "run.json"

    done = cli.run(
        "research",
        QUESTION,
        "--depth",
        "quick",
        "--auto-approve",
        "--format",
        "json",
        "--output",
        str(output),
    )

    assert done.returncode == 0, done.stderr
    assert done.stdout == ""  # the document went to --output, progress to stderr
    document = json.loads(output.read_text())
    assert document["status"] == "completed"
    assert document["plan"]["questions"] and document["owner"] == "demo"
    assert document["citations"]
    for citation in document["citations"]:
        assert citation["resolved"]
        evidence, source = citation["evidence"], citation["source"]
        assert evidence["run_id"] == source["run_id"] == document["run_id"]
        assert normalize_for_matching(evidence["locator_text"]) == normalize_for_matching(
            evidence["excerpt"]
        )
        assert source["url"].startswith("http://") and source["title"] and source["class"]
    kinds = {step["kind"] for step in document["steps"]}
    assert {"plan", "search", "read", "synthesize"} <= kinds
    assert all(step["query"] for step in document["steps"] if step["kind"] == "search")
    assert document["usage"]["searches"] >= 1
    assert "48,200" in document["report_markdown"]


def test_markdown_report_goes_to_stdout_and_progress_to_stderr(cli: CommandLine):
    done = cli.run("research", QUESTION, "--depth", "quick", "--auto-approve")

    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("# ") and "## Sources" in done.stdout
    assert "Plan (version 1)" in done.stderr
    # Piped: plain timestamped lines, no carriage-return progress bar.
    assert re.search(r"^\[\d\d:\d\d:\d\d\] search ", done.stderr, re.MULTILINE)
    assert "\r" not in done.stderr


def test_without_approval_the_run_waits_and_resume_approves_it(cli: CommandLine):
    waiting = cli.run("research", QUESTION, "--depth", "quick")

    assert waiting.returncode == 130
    run_id = RUN_ID.search(waiting.stderr).group(1)
    assert "waits for approval" in waiting.stderr
    assert cli.run_status(run_id) == "awaiting_approval"

    resumed = cli.run("research", "--resume", run_id, "--auto-approve")

    assert resumed.returncode == 0, resumed.stderr
    assert cli.run_status(run_id) == "completed"


def test_ctrl_c_pauses_the_run_and_resume_finishes_it(cli: CommandLine, web: FrozenWeb):
    # Searches are held until the interrupt has been taken, so research is certainly under
    # way when it arrives, however slowly this test reads the output.
    release = web.hold("/search")
    process = cli.start("research", QUESTION, "--depth", "quick", "--auto-approve")
    run_id = ""
    seen: list[str] = []
    deadline = time.monotonic() + 60
    for line in process.stderr:
        seen.append(line)
        run_id = run_id or (RUN_ID.search(line).group(1) if RUN_ID.search(line) else "")
        if "status    researching" in line:
            process.send_signal(signal.SIGINT)
        if "Pausing at the next safe point" in line:
            break
        assert time.monotonic() < deadline, "".join(seen)
    release.set()
    rest = process.communicate(timeout=60)[1]

    assert process.returncode == 130, "".join(seen) + rest
    assert cli.run_status(run_id) == "paused"

    resumed = cli.run("research", "--resume", run_id, "--format", "json")

    assert resumed.returncode == 0, resumed.stderr
    document = json.loads(resumed.stdout)
    assert document["status"] == "completed" and document["report"]
    # The search interrupted mid-flight was finished once, not repeated.
    queries = [step["query"] for step in document["steps"] if step["kind"] == "search"]
    assert len(queries) == len(set(queries))
