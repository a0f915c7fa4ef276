"""Fixtures of the API tests: personal tokens and clients that call with them."""

from __future__ import annotations

import pytest
from django.test import Client

from accounts.services import api_token_create


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def token_for(db):
    """``token_for(user, read_only=False, team=None)``: a new token's secret."""

    def make(user, **options) -> str:
        _, secret = api_token_create(user=user, name=options.pop("name", "tests"), **options)
        return secret

    return make


@pytest.fixture
def api_for(token_for):
    """``api_for(user)``: a client that sends a fresh token of ``user`` (none for None)."""

    def build(user=None, **options) -> Client:
        if user is None:
            return Client()
        return Client(HTTP_AUTHORIZATION=f"Bearer {token_for(user, **options)}")

    return build


@pytest.fixture(autouse=True)
def worker_not_shutting_down():
    """A Dramatiq worker stopped in this process by an earlier test (tests/web/test_queue_outage)
    leaves research.worker.shutdown.SHUTTING_DOWN set, and every later in-process run then stops at once
    ("This worker is shutting down"). These tests drive runs in-process, so start from a worker
    that is not shutting down, whatever ran before."""
    from research.worker.shutdown import SHUTTING_DOWN

    SHUTTING_DOWN.clear()
    yield
