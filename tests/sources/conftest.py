"""Fixtures for source acquisition tests: the frozen web and fakes for DNS and sockets."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fixtures.frozen_web.server import FrozenWeb, serve_frozen_web


@pytest.fixture(scope="session")
def frozen_web() -> Iterator[FrozenWeb]:
    """The frozen local web on 127.0.0.1 (one server for the whole session)."""
    with serve_frozen_web() as web:
        yield web


@pytest.fixture
def web(frozen_web: FrozenWeb) -> Iterator[FrozenWeb]:
    """The frozen web with recorded requests and injected faults cleared before each test."""
    frozen_web.reset()
    yield frozen_web
    frozen_web.reset()
