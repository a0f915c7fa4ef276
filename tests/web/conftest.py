"""Fixtures of the web tests: signed-in clients for the three users of tests/conftest.py."""

from __future__ import annotations

import pytest
from django.test import Client


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """The fixture users are created with a password; a fast hasher keeps setup quick."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def client_for(db):
    """``client_for(user)``: a client signed in as ``user`` (anonymous for None)."""

    def build(user=None, **headers) -> Client:
        client = Client(**headers)
        if user is not None:
            client.force_login(user, backend="django.contrib.auth.backends.ModelBackend")
        return client

    return build


@pytest.fixture
def htmx_headers() -> dict[str, str]:
    return {"HTTP_HX_REQUEST": "true"}
