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

