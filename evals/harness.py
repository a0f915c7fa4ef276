"""Running benchmark tasks through the real pipeline (or the naive baseline) and scoring them.

Each task becomes a run owned by the benchmark's user, created, planned, approved and
researched in this process by the same driver the ``research`` command uses (Django store,
orchestrator, web sources against the frozen web, the chosen model backend). Its run
document is then scored. The naive baseline (``evals/naive_baseline.py``) answers the same
task with the same search provider, fetcher and snapshot builder and is scored by the same
scorer. Import this module only once Django is set up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from evals.follow_up import FollowUp, ask_follow_up
from evals.naive_baseline import naive_run_document
from evals.scoring import HostileText, Observation, TaskScore, WebReference, score_run
from evals.taskset import REAL_DOCS_SETS, Task
from research import services
from research.cli.run_document import build_run_document
from research.cli.run_driver import OrchestratorFactory, RunDriver
from research.engine.ports import ModelClient
from research.engine.run.orchestrator import Orchestrator
from research.engine.states import RunStatus
from research.questions import snapshot_current
from research.sources.adapter import WebSourceAdapter
from research.sources.config import sources_config_from_settings
from research.worker.actors import build_orchestrator
from tests.fixtures.frozen_web.server import FrozenWeb, serve_frozen_web
from tests.fixtures.real_docs.hostile import hostile_pages
from tests.fixtures.real_docs.rendering import occurs_in_rendering, visible_text

EVAL_USERNAME = "evals"
ModelFactory = Callable[[], ModelClient]


@dataclass
class TaskRun:
    task: Task
    document: dict[str, Any]
    observation: Observation
    score: TaskScore
    # The follow-up question asked of the finished report (evals/follow_up.py); None for the
    # naive baseline and for tasks without one.
    follow_up: FollowUp | None = None


def orchestrator_factory(model: ModelFactory) -> OrchestratorFactory:
    """Orchestrators wired like a worker's (database, web, channel layer) with ``model``."""

    def build(lease_owner: str) -> Orchestrator:
        return build_orchestrator(lease_owner=lease_owner, model=model())

    return build


def eval_owner():  # -> accounts.models.User
    """The account benchmark runs belong to (created in the throwaway database)."""
    from accounts.models import User

    user, _ = User.objects.get_or_create(username=EVAL_USERNAME)
    return user


def web_reference(web: FrozenWeb, *, hostile: bool) -> WebReference:
    """Independent renderings of ``web``'s HTML pages (made once per page) and, when
    ``hostile``, the hostile pages it serves."""
    renderings: dict[tuple[str, str], str | None] = {}

    def rendering(url: str) -> str | None:
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        key = ((parts.hostname or "").lower(), parts.path or "/")
        if key not in renderings:
            document = web.corpus.find(*key)
            renderings[key] = (
                visible_text(document.body) if document and document.kind == "html" else None
            )
        return renderings[key]

    pages = hostile_pages() if hostile else ()
    return WebReference(
        rendering=rendering,
        occurs=occurs_in_rendering,
        hostile=tuple(HostileText(p.name, p.injected, p.forbidden_urls) for p in pages),
    )


@contextmanager
def web_for_set(task_set: str, fictional: FrozenWeb) -> Iterator[tuple[FrozenWeb, WebReference]]:
    """The frozen web ``task_set`` is asked against, with Django pointed at it: the
    fictional web, or the real documentation with its hostile community pages."""
    from django.test import override_settings

    if task_set not in REAL_DOCS_SETS:
        with override_settings(**fictional.django_settings()):
            yield fictional, web_reference(fictional, hostile=False)
        return
    with (
        serve_frozen_web(real_docs=[], extra_pages=True) as web,
        override_settings(**web.django_settings()),
    ):
        yield web, web_reference(web, hostile=True)


def run_task(
    task: Task, *, web: FrozenWeb, model: ModelFactory, reference: WebReference | None = None
) -> TaskRun:
    """Create, plan, approve and research ``task``'s question; score the run document."""
    owner = eval_owner()
    web.reset()
    started = time.perf_counter()
    driver = RunDriver(factory=orchestrator_factory(model), poll_seconds=0.05)
    run = driver.take(
        lambda: services.run_create(
            owner=owner,
            question=task.question,
            depth=task.depth,
            source_policy=dict(task.source_policy),
        )
    )
    status = driver.run()
    if status == RunStatus.AWAITING_APPROVAL:
        run.refresh_from_db()
        driver.take(lambda: services.plan_approve(run=run, expected_version=run.plan_version))
        driver.run()
    observation = Observation(
        requests=[(r.method, r.host, r.path) for r in web.requests],
        wall_seconds=time.perf_counter() - started,
    )
    document = build_run_document(run)
    score = score_run(task, document, observation, reference)
    run.refresh_from_db()
    snapshot = snapshot_current(run)
    follow_up = ask_follow_up(task, snapshot.frozen if snapshot else None)
    return TaskRun(task, document, observation, score, follow_up)


def run_naive_task(task: Task, *, web: FrozenWeb, reference: WebReference | None = None) -> TaskRun:
    """Answer ``task`` with the naive baseline over the configured web; score its document."""
    web.reset()
    started = time.perf_counter()
    document = naive_run_document(task, adapter=WebSourceAdapter(sources_config_from_settings()))
    observation = Observation(
        requests=[(r.method, r.host, r.path) for r in web.requests],
        wall_seconds=time.perf_counter() - started,
    )
    return TaskRun(task, document, observation, score_run(task, document, observation, reference))


def run_tasks(
    tasks: Sequence[Task],
    *,
    web: FrozenWeb,
    model: ModelFactory | None,
    reference: WebReference | None = None,
    on_done: Callable[[TaskRun], None] | None = None,
) -> list[TaskRun]:
    """Run tasks one after another (each on a clean frozen-web request log); ``model=None``
    runs the naive baseline instead of the pipeline."""
    runs = []
    for task in tasks:
        if model is None:
            result = run_naive_task(task, web=web, reference=reference)
        else:
            result = run_task(task, web=web, model=model, reference=reference)
        runs.append(result)
        if on_done is not None:
            on_done(result)
    return runs
