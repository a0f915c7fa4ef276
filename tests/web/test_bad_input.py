"""Bad input in an address never becomes a 500.

PostgreSQL refuses a NUL character in text (a DataError), SQLite stores it; the answer must
be the same on both. The walk below builds every URL pattern of the project (research,
accounts and the admin), fills each path parameter with a real value, then puts ``%00``
into one parameter at a time and requests the address as a superuser, an ordinary user and
an anonymous visitor, with GET and POST.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import pytest
from django.contrib.contenttypes.models import ContentType
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from django.urls.resolvers import RegexPattern, RoutePattern

from accounts.models import Invitation, Membership, Team, User
from accounts.services import api_token_create, invitation_create
from research import libraries
from research.engine.contracts import SourceDocument
from research.models import (
    LibraryDocument,
    QuestionTurn,
    ResearchEvidence,
    ResearchRun,
    ResearchSource,
    Webhook,
)
from research.questions import topic_create
from tests.web.factories import completed_run


@dataclass(frozen=True)
class Route:
    """One URL pattern, flattened: its pieces and the names of its parameters."""

    name: str
    pieces: tuple[str, ...]  # literal text and "{param}" slots, in order
    params: tuple[str, ...]

    def build(self, values: dict[str, str]) -> str:
        return "/" + "".join(
            values[piece[1:-1]] if piece.startswith("{") else piece for piece in self.pieces
        )


_ROUTE_PARAM = re.compile(r"<(?:(?P<converter>[^>:]+):)?(?P<parameter>[^>]+)>")
_REGEX_GROUP = re.compile(r"\(\?P<(?P<name>\w+)>(?P<body>(?:[^()]|\([^()]*\))*)\)")


def _pieces(pattern: object) -> list[str]:
    if isinstance(pattern, RoutePattern):
        text, pieces, last = str(pattern._route), [], 0
        for match in _ROUTE_PARAM.finditer(text):
            pieces += [text[last : match.start()], "{" + match["parameter"] + "}"]
            last = match.end()
        return [*pieces, text[last:]]
    assert isinstance(pattern, RegexPattern)
    text = pattern._regex.lstrip("^").rstrip("$").replace("\\", "")
    pieces, last = [], 0
    for match in _REGEX_GROUP.finditer(text):
        pieces += [text[last : match.start()], "{" + match["name"] + "}"]
        last = match.end()
    return [*pieces, text[last:]]


def walk(patterns: list, prefix: tuple[str, ...] = (), namespace: str = "") -> Iterator[Route]:
    for entry in patterns:
        pieces = (*prefix, *_pieces(entry.pattern))
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            yield from walk(entry.url_patterns, pieces, inner)
        elif isinstance(entry, URLPattern):
            params = tuple(p[1:-1] for p in pieces if p.startswith("{"))
            yield Route(f"{namespace}{entry.name or entry.pattern}", pieces, params)


ROUTES = list(walk(get_resolver().url_patterns))


def _admin_model(route_name: str) -> type | None:
    """The model behind an admin route name such as ``admin:research_researchrun_change``."""
    match = re.match(r"admin:(\w+?)_(\w+)_(?:change|delete|history)$", route_name)
    if not match:
        return None
    try:
        return ContentType.objects.get_by_natural_key(match[1], match[2]).model_class()
    except ContentType.DoesNotExist:
        return None


@pytest.fixture
def real_values(owner, team) -> dict[str, str]:
    """A value for every path parameter that names an object that exists."""
    run = completed_run(
        owner, team=team, visibility=ResearchRun.Visibility.LINK, share_token="share-token-abc"
    )
    source = ResearchSource.objects.filter(run=run).first()
    evidence = ResearchEvidence.objects.filter(run=run).first()
    member = User.objects.create_user("member-x", password="unused-password-123")
    membership = Membership.objects.create(team=team, user=member, role=Membership.Role.VIEWER)
    invitation, token = invitation_create(team=team, role="viewer", created_by=owner)
    api_token, _ = api_token_create(user=owner, name="walk")
    hook = Webhook.objects.create(
        owner=owner, url="https://example.org/hook", events=["run.completed"], secret="s"
    )
    library = libraries.library_create(user=owner, name="Walk", team=team)
    document = LibraryDocument.objects.create(
        library=library,
        name="notes.md",
        file="libraries/walk/notes",
        size_bytes=1,
        file_sha256="0" * 64,
        mime_type="text/markdown",
        snapshot=SourceDocument(
            requested_url="document://walk/notes",
            final_url="document://walk/notes",
            canonical_url="document://walk/notes",
            canonical_url_hash="0" * 64,
            content_hash="0" * 64,
            mime_type="text/markdown",
            kind="text",
            text="Notes.",
            content_bytes=6,
            retrieved_at=datetime.now(UTC),
        ).model_dump(mode="json"),
    )
    topic = topic_create(run=run, title="Walk", user=owner)
    turn = QuestionTurn.objects.create(
        topic=topic, question="Asked?", status=QuestionTurn.Status.FAILED
    )
    return {
        "library_id": str(library.pk),
        "document_id": str(document.pk),
        "run_id": str(run.pk),
        "source_id": str(source.pk),
        "evidence_id": evidence.pk,
        "share_token": run.share_token,
        "slug": team.slug,
        "action": "pause",
        "token": token,
        "invitation_id": str(invitation.pk),
        "membership_id": str(membership.pk),
        "token_id": str(api_token.pk),
        "hook_id": str(hook.pk),
        "team_id": str(team.pk),
        "topic_id": str(topic.pk),
        "turn_id": str(turn.pk),
        "app_label": "research",
        "content_type_id": str(ContentType.objects.get_for_model(ResearchRun).pk),
        "object_id": str(run.pk),
        "id": str(owner.pk),
        "url": "research/researchrun/",
    }


def _value_for(route: Route, param: str, values: dict[str, str]) -> str:
    if param == "object_id":
        model = _admin_model(route.name)
        instance = model.objects.order_by("pk").first() if model else None
        if instance is not None:
            return str(instance.pk)
    assert param in values, f"a new path parameter {param!r}: give it a real value above"
    return values[param]


def _with_nul(value: str) -> Iterator[str]:
    """``%00`` at the start, in the middle and at the end of a real value."""
    yield "%00" + value
    yield value[: len(value) // 2] + "%00" + value[len(value) // 2 :]
    yield value + "%00"


def test_the_walk_sees_every_app():
    names = {route.name.split(":")[0] for route in ROUTES}
    assert {"research", "accounts", "admin"} <= names
    with_params = [route for route in ROUTES if route.params]
    assert len(with_params) >= 20


# Bytes that are not valid UTF-8, an encoded lone surrogate, a line break and digits that
# overflow any integer column: not NUL, but no address uses them either; no 500 for them.
OTHER_BAD = ("%FF", "%ED%A0%80", "%0A", "%C0%80", "9" * 30)


@pytest.mark.django_db
def test_nul_in_any_path_parameter_is_refused_without_a_500(real_values, owner, client_for):
    superuser = User.objects.create_superuser("root", password="unused-password-123")
    clients = {
        "superuser": client_for(superuser, raise_request_exception=False),
        "owner": client_for(owner, raise_request_exception=False),
        "anonymous": Client(raise_request_exception=False),
    }
    for model in (ResearchRun, ResearchSource, ResearchEvidence, Team, Invitation):
        assert model.objects.exists()
    failures = []
    requested = 0
    for route in ROUTES:
        for param in route.params:
            values = {p: _value_for(route, p, real_values) for p in route.params}
            poisoned = list(_with_nul(values[param]))
            middle = len(values[param]) // 2
            others = [values[param][:middle] + bad + values[param][middle:] for bad in OTHER_BAD]
            for value in poisoned + others:
                url = route.build({**values, param: value})
                for who, client in clients.items():
                    for method in (client.get, client.post):
                        response = method(url)
                        requested += 1
                        if response.status_code >= 500:
                            failures.append(f"{method.__name__.upper()} {url} as {who}")
                        elif "%00" in value and response.status_code != 404:
                            failures.append(f"{url} as {who}: {response.status_code}, not 404")
    assert requested > 1000
    assert not failures, "\n".join(failures)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/share/%00/",
        "/share/abc%00def/report.md",
        "/share/%00/evidence/%00/",
    ],
)
def test_nul_in_a_share_link_is_a_404_with_a_sentence(url):
    response = Client().get(url)
    assert response.status_code == 404
    assert "This address contains a character that no address here uses" in (
        response.content.decode()
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url",
    [
        "/?q=%00",
        "/?team=%00",
        "/admin/research/researchrun/?status=%00",
        "/admin/research/researchevidence/?claim_key=%00",
        "/admin/research/researchrun/?%00=1",
        "/accounts/login/?next=/%00",
    ],
)
def test_nul_in_a_query_is_refused_with_422_and_a_sentence(url, owner, client_for):
    superuser = User.objects.create_superuser("root", password="unused-password-123")
    response = client_for(superuser, raise_request_exception=False).get(url)
    assert response.status_code == 422
    assert "NUL character (%00) in its query" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "data"),
    [
        ("/admin/research/researchrun/", {"action": "delete_selected", "_selected_action": "\x00"}),
        (
            "/admin/research/researchevidence/",
            {"action": "delete_selected", "_selected_action": "a\x00"},
        ),
        ("/accounts/login/", {"username": "alice\x00", "password": "x"}),
        ("/new/", {"question": "Heat\x00pumps?", "depth": "quick", "source_mode": "full_web"}),
    ],
)
def test_nul_in_a_form_is_refused_with_422_and_a_sentence(url, data, client_for):
    superuser = User.objects.create_superuser("root", password="unused-password-123")
    response = client_for(superuser, raise_request_exception=False).post(url, data)
    assert response.status_code == 422
    assert "contains a NUL character, which no field accepts; nothing was saved" in (
        response.content.decode()
    )
    assert ResearchRun.objects.count() == 0


@pytest.mark.django_db
def test_nul_in_an_htmx_form_keeps_the_form_and_shows_the_sentence_above_it(owner, client_for):
    from tests.web.factories import awaiting_run

    run = awaiting_run(owner)
    response = client_for(owner, raise_request_exception=False).post(
        f"/runs/{run.pk}/plan/",
        {"objective": "A\x00B", "plan_version": "1"},
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 422
    assert response["HX-Retarget"] == "main" and response["HX-Reswap"] == "afterbegin"
    assert "which no field accepts" in response.content.decode()
    run.refresh_from_db()
    assert run.plan_version == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body",
    [b'{"question": "a\\u0000b"}', b'{"question": "a\x00b"}', b'{"question": "\\U0000"}'],
)
def test_nul_in_a_json_body_is_refused(body, owner, client_for):
    response = client_for(owner, raise_request_exception=False).post(
        "/new/", body, content_type="application/json"
    )
    assert response.status_code == 422


@pytest.mark.django_db
def test_an_escaped_backslash_before_u0000_is_not_a_nul(owner, client_for):
    # JSON text "a\\u0000" is the characters a, backslash, u, 0, 0, 0, 0: no NUL.
    response = client_for(owner, raise_request_exception=False).post(
        "/new/", b'{"question": "a\\\\u0000"}', content_type="application/json"
    )
    assert b"which no field accepts" not in response.content


@pytest.mark.django_db
def test_a_session_cookie_with_nul_is_ignored_and_a_header_with_nul_refused(owner):
    client = Client(raise_request_exception=False)
    client.cookies["sessionid"] = "\x00" * 32
    response = client.get("/")
    assert response.status_code == 302 and response["Location"].startswith("/accounts/login/")
    response = Client(raise_request_exception=False).post(
        "/accounts/login/",
        {"username": "alice", "password": "wrong"},
        HTTP_USER_AGENT="agent\x00",
    )
    assert response.status_code == 400
