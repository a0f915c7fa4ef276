"""Property-based fuzzing of the API against its own OpenAPI document (schemathesis).

For every operation, schemathesis generates requests from the schema (a bounded number of
examples, ``FUZZ_EXAMPLES``) and each is sent twice through Django's real request handler:
once as generated, and once aimed at real runs (an awaiting plan, a completed report, a
share link) so the success paths are fuzzed too, not only the 404s. Every answer must be
no server error, use a documented status code and content type, and match its schema.
"""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.handlers.wsgi import WSGIHandler
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from accounts.services import api_token_create
from research.api.endpoints import api
from research.models import ResearchEvidence, ResearchRun
from tests.web.factories import awaiting_run, completed_run

FUZZ_EXAMPLES = int(os.environ.get("API_FUZZ_EXAMPLES", "15"))
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


# Every operation of the document (pytest-django has set Django up before collection).
OPERATIONS = [
    (method.upper(), path)
    for path, methods in api.get_openapi_schema(path_prefix="/api/v1/")["paths"].items()
    for method in methods
]


@pytest.fixture
def api_schema(db):
    # As Django's test client does: a finished request must not close the test's database
    # connection (it holds the test transaction).
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield schemathesis.openapi.from_wsgi("/api/v1/openapi.json", WSGIHandler())
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def targets(owner, team, settings):
    settings.API_TOKEN_REQUESTS_PER_MINUTE = 100_000
    settings.RESEARCH_MAX_RUNS_PER_USER_PER_HOUR = 100_000
    settings.RESEARCH_MAX_PLANNING_RUNS_PER_USER = 100_000
    plan = awaiting_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)
    report = completed_run(owner, team=team, visibility=ResearchRun.Visibility.LINK)
    _, secret = api_token_create(user=owner, name="fuzz")
    return {
        "headers": {"Authorization": f"Bearer {secret}"},
        "plan": plan,
        "report": report,
        "evidence": ResearchEvidence.objects.filter(run=report).values_list("pk", flat=True)[0],
    }


def _aim(case, targets) -> bool:
    """Point the case's path at real objects; False when it has no path parameters."""
    params = case.path_parameters or {}
    if not params:
        return False
    reading = case.method.upper() == "GET"
    run = targets["report"] if reading else targets["plan"]
    if "run_id" in params:
        params["run_id"] = str(run.pk)
    if "share_token" in params:
        params["share_token"] = targets["report"].share_token
    if "evidence_id" in params:
        params["run_id"] = str(targets["report"].pk) if "run_id" in params else None
        if params["run_id"] is None:
            del params["run_id"]
        params["evidence_id"] = targets["evidence"]
    return True


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_the_api_answers_every_generated_request_as_documented(method, path, api_schema, targets):
    operation = api_schema[path][method]

    @given(case=operation.as_strategy())
    @settings(
        max_examples=FUZZ_EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def answers_as_documented(case) -> None:
        case.call_and_validate(headers=targets["headers"], checks=CHECKS)
        if _aim(case, targets):
            case.call_and_validate(headers=targets["headers"], checks=CHECKS)

    answers_as_documented()
