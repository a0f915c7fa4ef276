"""``python manage.py research "question"``: one research run from the command line.

The command creates a run, prints the plan, waits for approval (or takes ``--auto-approve``),
runs the research in this process under a lease, shows progress on standard error and writes
the validated report (Markdown, or one JSON document) to standard output or ``--output``.
Exit status: 0 completed, 3 partial report (whatever stopped it: a budget limit, nothing new
found, no readable source, unusable decisions), 1 failed (a provider outage, an internal error,
a model failure) or cancelled, 130 interrupted — the run is paused (or still waits for approval)
and ``--resume RUN_ID`` continues it. The last line on standard error says why the run ended;
the JSON document carries the same as data (``outcome``).
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import uuid
from pathlib import Path
from typing import Any, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from accounts.models import User
from research import services
from research.cli.progress import ProgressDisplay
from research.cli.run_document import build_run_document, render_run_markdown
from research.cli.run_driver import (
    ACTIVE_STATUSES,
    OrchestratorFactory,
    RunDriver,
    default_orchestrator,
)
from research.engine.states import RunStatus
from research.llm.factory import describe_backend, llm_config_from_settings
from research.models import ResearchRun

EXIT_COMPLETED = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_INTERRUPTED = 130

_EXIT_FOR_STATUS = {
    RunStatus.COMPLETED: EXIT_COMPLETED,
    RunStatus.BUDGET_EXHAUSTED: EXIT_PARTIAL,
    RunStatus.FAILED: EXIT_FAILED,
    RunStatus.CANCELLED: EXIT_FAILED,
}


def _domains(values: list[str] | None) -> list[str]:
    """Domains given as repeated options and/or comma-separated lists."""
    return [part.strip() for value in values or [] for part in value.split(",") if part.strip()]


class Command(BaseCommand):
    help = (
        "Research a question: print the plan, wait for approval, run the research in this "
        "process and write the cited report. Exit status 0 completed, 3 partial report, 1 failed "
        "or cancelled, 130 interrupted (resume with --resume RUN_ID)."
    )
    # Accepted from call_command only: tests drive runs with a scripted model backend.
    stealth_options = ("orchestrator_factory",)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("question", nargs="?", help="the question to research, in quotes")
        parser.add_argument(
            "--resume", metavar="RUN_ID", help="continue a paused, waiting or failed run"
        )
        parser.add_argument(
            "--depth",
            choices=ResearchRun.Depth.values,
            help="research budget preset (default: standard)",
        )
        parser.add_argument(
            "--only-domains",
            action="append",
            metavar="DOMAINS",
            help="use only these domains (comma-separated; may be repeated)",
        )
        parser.add_argument(
            "--prefer-domains",
            action="append",
            metavar="DOMAINS",
            help="read these domains first (comma-separated; may be repeated)",
        )
        parser.add_argument(
            "--exclude-domains",
            action="append",
            metavar="DOMAINS",
            help="never use these domains (comma-separated; may be repeated)",
        )
        parser.add_argument(
            "--auto-approve", action="store_true", help="start research without asking"
        )
        parser.add_argument(
            "--format",
            choices=("markdown", "json"),
            default="markdown",
            help="markdown report, or one JSON document with citations, sources and steps",
        )
        parser.add_argument("--output", metavar="FILE", help="write the result here, not stdout")
        parser.add_argument(
            "--user",
            metavar="NAME",
            help=f"account that owns the run (default: {settings.DEMO_USERNAME})",
        )

    # -- entry point -----------------------------------------------------------------------

    def handle(self, *args: Any, **options: Any) -> None:
        output = self._output_path(options["output"])
        self.log: TextIO = sys.stderr
        self.auto_approve: bool = options["auto_approve"]
        self.progress: ProgressDisplay | None = None
        existing = self._resumable_run(options) if options["resume"] else None
        owner = None
        if existing is None:
            self._check_new_run_options(options)
            owner = self._owner(options["user"])
        factory: OrchestratorFactory = options.get("orchestrator_factory") or default_orchestrator
        self.driver = RunDriver(factory=factory)
        run = self._reopen(existing) if existing else self._create(options, owner)
        status = self._drive_to_the_end(run)
        run.refresh_from_db()
        self._write_result(run, options["format"], output)
        code = _EXIT_FOR_STATUS.get(RunStatus(status), EXIT_INTERRUPTED)
        self._say_outcome(run, code)
        if code != EXIT_COMPLETED:
            sys.exit(code)

    # -- options -----------------------------------------------------------------------------

    def _output_path(self, value: str | None) -> Path | None:
        if not value:
            return None
        path = Path(value)
        if path.is_dir():
            raise CommandError(f"--output {value} is a folder; name a file.", returncode=EXIT_USAGE)
        if not path.parent.exists():
            raise CommandError(
                f"Cannot write to {value}: the folder {path.parent} does not exist.",
                returncode=EXIT_USAGE,
            )
        return path

    def _check_new_run_options(self, options: dict[str, Any]) -> None:
        if not (options["question"] or "").strip():
            raise CommandError(
                "Give the question to research in quotes, or --resume RUN_ID to continue a run.",
                returncode=EXIT_USAGE,
            )
        if options["only_domains"] and options["prefer_domains"]:
            raise CommandError(
                "Choose either --only-domains or --prefer-domains, not both.",
                returncode=EXIT_USAGE,
            )

    def _resumable_run(self, options: dict[str, Any]) -> ResearchRun:
        if options["question"]:
            raise CommandError(
                "Give either a question or --resume RUN_ID, not both.", returncode=EXIT_USAGE
            )
        given = [
            f"--{name.replace('_', '-')}"
            for name in ("depth", "only_domains", "prefer_domains", "exclude_domains")
            if options[name]
        ]
        if given:
            raise CommandError(
                f"{', '.join(given)} only applies to a new run; a resumed run keeps its settings.",
                returncode=EXIT_USAGE,
            )
        try:
            run_id = uuid.UUID(options["resume"])
        except ValueError:
            raise CommandError(
                f"{options['resume']!r} is not a run id; run ids look like "
                "3f2b6c1e-8d4a-4f57-9a0e-2c1d5b7e9f10.",
                returncode=EXIT_USAGE,
            ) from None
        run = ResearchRun.objects.select_related("owner").filter(pk=run_id).first()
        if run is None:
            raise CommandError(f"There is no run with id {run_id}.", returncode=EXIT_USAGE)
        if options["user"] and options["user"] != run.owner.get_username():
            raise CommandError(
                f"Run {run_id} belongs to {run.owner.get_username()}, not {options['user']}.",
                returncode=EXIT_USAGE,
            )
        return run

    def _owner(self, name: str | None) -> User:
        username = name or settings.DEMO_USERNAME
        user = User.objects.filter(username=username).first()
        if user is not None:
            return user
        if name:
            raise CommandError(f"There is no account named {name!r}.", returncode=EXIT_USAGE)
        raise CommandError(
            f"No account to own the run: pass --user NAME, or create the “{username}” account "
            "with `python manage.py ensure_demo_account`.",
            returncode=EXIT_USAGE,
        )

    # -- the run's life ---------------------------------------------------------------------

    def _create(self, options: dict[str, Any], owner: User) -> ResearchRun:
        policy: dict[str, Any] = {"excluded_domains": _domains(options["exclude_domains"])}
        if options["only_domains"]:
            policy.update(mode="only_domains", domains=_domains(options["only_domains"]))
        elif options["prefer_domains"]:
            policy.update(mode="prefer_domains", domains=_domains(options["prefer_domains"]))
        try:
            run = self.driver.take(
                lambda: services.run_create(
                    owner=owner,
                    question=options["question"],
                    depth=options["depth"] or ResearchRun.Depth.STANDARD,
                    source_policy=policy,
                )
            )
        except services.RunActionError as exc:
            raise CommandError(str(exc), returncode=EXIT_USAGE) from None
        self._say(
            f"Run {run.pk} ({run.depth}) owned by {owner.get_username()}; model backend: "
            f"{describe_backend(llm_config_from_settings())}. Planning…"
        )
        return run

    def _reopen(self, run: ResearchRun) -> ResearchRun:
        self.driver.run_id = str(run.pk)
        self._say(f"Resuming run {run.pk}, which is {run.outcome.label.lower()}.")
        try:
            if run.status == RunStatus.PAUSED:
                run = self.driver.take(lambda: services.run_resume(run=run))
            elif run.status == RunStatus.FAILED:
                self._say(
                    f"It failed: {run.last_error or run.terminal_reason}. Retrying that phase."
                )
                run = self.driver.take(lambda: services.run_retry(run=run))
        except services.RunActionError as exc:
            raise CommandError(str(exc)) from None
        return run

    def _drive_to_the_end(self, run: ResearchRun) -> str:
        """Drive the run, asking for approval when the plan is ready; returns its last status."""
        while True:
            status = self._drive(run)
            if status != RunStatus.AWAITING_APPROVAL:
                return status
            run.refresh_from_db()
            self._print_plan(run)
            if not self._approved(run):
                return status
            try:
                run = self.driver.take(
                    lambda seen=run: services.plan_approve(
                        run=seen, expected_version=seen.plan_version
                    )
                )
            except services.RunActionError as exc:
                raise CommandError(str(exc)) from None
            self._say("Plan approved; researching…")

    def _drive(self, run: ResearchRun) -> str:
        """Run the driver on a thread while this thread shows progress and takes Ctrl-C."""
        if run.status not in ACTIVE_STATUSES:
            return run.status
        if self.progress is None:
            self.progress = ProgressDisplay(str(run.pk), self.log)
        progress = self.progress
        result: dict[str, Any] = {}
        # An Event, not Thread.join: a KeyboardInterrupt landing inside join() can make
        # is_alive() report a running thread as finished (CPython before 3.13).
        done = threading.Event()

        def work() -> None:
            try:
                result["status"] = self.driver.run()
            except BaseException as exc:  # reported on the main thread
                result["error"] = exc
            finally:
                done.set()

        if threading.current_thread() is threading.main_thread():
            # Ctrl-C pauses the run even when this process inherited SIGINT ignored (started
            # as a background job of a script), in which case Python installs no handler.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Thread(target=work, name=f"research-{run.pk}", daemon=True).start()
        interrupted = False
        while not done.is_set():
            try:
                done.wait(self.driver.poll_seconds)
                progress.update()
            except KeyboardInterrupt:
                progress.finish()
                if interrupted:
                    self._say("Stopped. The run will pause at its next safe point.")
                    sys.exit(EXIT_INTERRUPTED)
                interrupted = True
                self._pause(run)
        progress.update()
        progress.finish()
        if "error" in result:
            raise CommandError(f"The run stopped because of an internal error: {result['error']}")
        return result["status"]

    def _pause(self, run: ResearchRun) -> None:
        run.refresh_from_db()
        try:
            services.run_pause(run=run)
        except services.RunActionError as exc:
            self._say(str(exc))
            return
        self._say(
            "Pausing at the next safe point (Ctrl-C again quits at once; the run still pauses)."
        )

    def _approved(self, run: ResearchRun) -> bool:
        if self.auto_approve:
            return True
        if not sys.stdin.isatty():
            self._say(
                "The plan waits for approval. Approve it in the web app, or run "
                f"`manage.py research --resume {run.pk} --auto-approve`."
            )
            return False
        try:
            answer = input("Approve this plan and start research? [y/N] ")
        except (EOFError, KeyboardInterrupt):
            self._say("")
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            return True
        self._say(
            f"Not approved; the run waits for approval. Continue later with --resume {run.pk}."
        )
        return False

    # -- output ------------------------------------------------------------------------------

    def _say(self, text: str) -> None:
        self.log.write(text + "\n")
        self.log.flush()

    def _print_plan(self, run: ResearchRun) -> None:
        plan = run.plan or {}
        lines = [f"Plan (version {run.plan_version}): {plan.get('objective', run.question)}"]
        required = set((plan.get("completion_criteria") or {}).get("required_question_ids", []))
        for question in plan.get("questions", []):
            label = (
                "required"
                if question.get("priority") == "required" or question["id"] in required
                else "supporting"
            )
            lines.append(f"  {question['id']:<4} [{label}] {question['text']}")
        for assumption in plan.get("assumptions", []):
            lines.append(f"  assumption: {assumption}")
        policy = run.source_policy or {}
        if policy.get("mode", "full_web") != "full_web" or policy.get("excluded_domains"):
            lines.append(
                f"  sources: {policy.get('mode', 'full_web').replace('_', ' ')} "
                f"{', '.join(policy.get('domains', []))}"
                + (
                    f"; never {', '.join(policy['excluded_domains'])}"
                    if policy.get("excluded_domains")
                    else ""
                )
            )
        self._say("\n".join(lines))

    def _write_result(self, run: ResearchRun, fmt: str, output: Path | None) -> None:
        if fmt == "json":
            text = json.dumps(build_run_document(run), ensure_ascii=False, indent=2) + "\n"
        else:
            text = render_run_markdown(run) or ""
        if not text:
            return
        if output is None:
            sys.stdout.write(text)
            sys.stdout.flush()
            return
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise CommandError(f"Cannot write to {output}: {exc.strerror}.") from None
        self._say(f"Wrote {output}.")

    def _say_outcome(self, run: ResearchRun, code: int) -> None:
        outcome = run.outcome
        if code == EXIT_COMPLETED:
            self._say(f"Completed run {run.pk}.")
        elif code == EXIT_PARTIAL:
            line = f"{outcome.label}. {outcome.sentence}"
            if outcome.budget_stop:
                line += (
                    " (In the web app: Increase the budget; the command line cannot grow a "
                    "run's budget.)"
                )
            self._say(line)
        elif run.status == RunStatus.FAILED:
            reason = outcome.detail or "no reason was recorded"
            self._say(
                f"{outcome.label}. {outcome.sentence} What happened: {reason} "
                f"Retry with `manage.py research --resume {run.pk}`."
            )
        elif code == EXIT_FAILED:
            reason = run.terminal_reason or "no reason was recorded"
            self._say(f"The run is {outcome.label.lower()}: {reason}")
        elif run.status != RunStatus.AWAITING_APPROVAL:  # that case was explained already
            self._say(
                f"The run is {run.get_status_display().lower()}; continue it with "
                f"`manage.py research --resume {run.pk}`."
            )
