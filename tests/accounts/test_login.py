from django.urls import reverse

from tests.conftest import PASSWORD


def test_login_page_renders(client, db):
    response = client.get(reverse("accounts:login"))
    assert response.status_code == 200
    assert b'name="username"' in response.content


def test_dashboard_requires_login(client, db):
    response = client.get(reverse("research:dashboard"))
    assert response.status_code == 302
    assert reverse("accounts:login") in response["Location"]


def test_login_reaches_dashboard_and_logout_ends_session(client, owner):
    response = client.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 302
    assert client.get(reverse("research:dashboard")).status_code == 200
    client.post(reverse("accounts:logout"))
    assert client.get(reverse("research:dashboard")).status_code == 302


def test_login_is_throttled_after_repeated_failures(client, owner, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        response = client.post(
            reverse("accounts:login"), {"username": "alice", "password": "wrong"}
        )
        assert response.status_code == 200
    last_failure = client.post(
        reverse("accounts:login"), {"username": "alice", "password": "wrong"}
    )
    assert last_failure.status_code == 429
    locked = client.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD})
    assert locked.status_code == 429
    assert b"Too many failed log-in attempts" in locked.content
    assert client.get(reverse("research:dashboard")).status_code == 302


def test_failures_for_one_user_do_not_lock_another(client, owner, outsider, settings):
    for _ in range(settings.AXES_FAILURE_LIMIT):
        client.post(reverse("accounts:login"), {"username": "alice", "password": "wrong"})
    response = client.post(reverse("accounts:login"), {"username": "mallory", "password": PASSWORD})
    assert response.status_code == 302


def test_password_change(client, owner):
    client.force_login(owner)
    response = client.post(
        reverse("accounts:password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "another-long-pass-42",
            "new_password2": "another-long-pass-42",
        },
    )
    assert response.status_code == 302
    owner.refresh_from_db()
    assert owner.check_password("another-long-pass-42")


def test_pages_carry_security_headers(client, db):
    response = client.get(reverse("accounts:login"))
    assert "script-src 'self'" in response["Content-Security-Policy"]
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"


def test_login_requires_csrf_token(owner):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    response = strict.post(reverse("accounts:login"), {"username": "alice", "password": PASSWORD})
    assert response.status_code == 403
