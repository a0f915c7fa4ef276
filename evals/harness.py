"""Running benchmark tasks through the real pipeline and scoring them.

Each task becomes a run owned by the benchmark's user, created, planned, approved and
researched in this process by the same driver the ``research`` command uses (Django store,
orchestrator, web sources against the frozen web, the chosen model backend). Its run
document is then scored. Import this module only once Django is set up.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from evals.scoring import Observation, TaskScore, score_run
from evals.taskset import Task
from research import services
from research.actors import build_orchestrator
from research.engine.orchestrator import Orchestrator
from research.engine.ports import ModelClient
from research.engine.states import RunStatus
from research.management.run_document import build_run_document
from research.management.run_driver import OrchestratorFactory, RunDriver
from tests.fixtures.frozen_web.server import FrozenWeb

EVAL_USERNAME = "evals"
ModelFactory = Callable[[], ModelClient]


@dataclass
class TaskRun:
    task: Task
    document: dict[str, Any]
    observation: Observation
    score: TaskScore


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


def run_task(task: Task, *, web: FrozenWeb, model: ModelFactory) -> TaskRun:
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
    return TaskRun(task, document, observation, score_run(task, document, observation))


def run_tasks(
    tasks: Sequence[Task],
    *,
    web: FrozenWeb,
    model: ModelFactory,
    on_done: Callable[[TaskRun], None] | None = None,
) -> list[TaskRun]:
    """Run tasks one after another (each on a clean frozen-web request log)."""
    runs = []
    for task in tasks:
        result = run_task(task, web=web, model=model)
        runs.append(result)
        if on_done is not None:
            on_done(result)
    return runs
