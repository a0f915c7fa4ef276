"""Shared fixtures: three users (owner, team member, outsider), a team, runs."""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest

from accounts.models import Membership, Team, User
from accounts.services import team_create
from research.models import ResearchRun
from tests.fixtures.frozen_web.server import FrozenWeb, serve_frozen_web

PASSWORD = "correct horse battery staple"


def make_user(username: str, **extra: object) -> User:
    return User.objects.create_user(username=username, password=PASSWORD, **extra)


@pytest.fixture(autouse=True)
def worker_not_shutting_down() -> Iterator[None]:
    """A Dramatiq worker stopped in this process by an earlier test (a queue-outage or a
    question-worker test) leaves research.worker.shutdown.SHUTTING_DOWN set, and every later
    in-process run or answer then stops at once ("This worker is shutting down"). Each test
    starts from a worker that is not shutting down, whatever ran before."""
    from research.worker.shutdown import SHUTTING_DOWN

    SHUTTING_DOWN.clear()
    yield


@pytest.fixture
def owner(db) -> User:
    return make_user("alice")


@pytest.fixture
def outsider(db) -> User:
    return make_user("mallory")


@pytest.fixture
def team(owner: User) -> Team:
    return team_create(name="Lab", owner=owner)


@pytest.fixture
def editor(team: Team) -> User:
    user = make_user("eddie")
    Membership.objects.create(team=team, user=user, role=Membership.Role.EDITOR)
    return user


@pytest.fixture
def viewer(team: Team) -> User:
    user = make_user("vera")
    Membership.objects.create(team=team, user=user, role=Membership.Role.VIEWER)
    return user


@pytest.fixture
def staff(db) -> User:
    return make_user("auditor", is_staff=True)


def make_run(owner: User, **fields: object) -> ResearchRun:
    fields.setdefault("question", "How large is the European heat-pump market?")
    if fields.get("visibility") == ResearchRun.Visibility.LINK:
        fields.setdefault("share_token", secrets.token_urlsafe(24))
    return ResearchRun.objects.create(owner=owner, **fields)


@pytest.fixture
def private_run(owner: User) -> ResearchRun:
    return make_run(owner)


@pytest.fixture
def team_run(owner: User, team: Team) -> ResearchRun:
    return make_run(owner, team=team, visibility=ResearchRun.Visibility.TEAM)


@pytest.fixture
def link_run(owner: User, team: Team) -> ResearchRun:
    return make_run(owner, team=team, visibility=ResearchRun.Visibility.LINK)


@pytest.fixture(scope="session")
def frozen_web() -> Iterator[FrozenWeb]:
    """The frozen local web on 127.0.0.1 (one server for the whole session)."""
    with serve_frozen_web() as web:
        yield web


@pytest.fixture(scope="session")
def claims_web() -> Iterator[FrozenWeb]:
    """A frozen web of pages about one quantity that agree, disagree or plant instructions
    (tests/fixtures/frozen_web/claims), apart from the fictional corpus."""
    with serve_frozen_web(claims=True) as web:
        yield web


@pytest.fixture(scope="session")
def real_docs_web() -> Iterator[FrozenWeb]:
    """A frozen web serving the real documentation sets of tests/fixtures/real_docs under their
    own host names (skipped outside CI when the Debian packages are missing)."""
    from tests.fixtures.real_docs.catalogue import require

    require()
    with serve_frozen_web(real_docs=[]) as web:
        yield web


@pytest.fixture(scope="session")
def real_docs_hostile_web() -> Iterator[FrozenWeb]:
    """The real documentation web with the hostile community pages of
    tests/fixtures/real_docs/hostile.py beside it, as the real-documents evaluation sees it."""
    from tests.fixtures.real_docs.catalogue import require

    require()
    with serve_frozen_web(real_docs=[], extra_pages=True) as web:
        yield web


@pytest.fixture
def web(frozen_web: FrozenWeb) -> Iterator[FrozenWeb]:
    """The frozen web with recorded requests and injected faults cleared before each test."""
    frozen_web.reset()
    yield frozen_web
    frozen_web.reset()
