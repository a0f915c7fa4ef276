"""The demo account of `make run` is an ordinary user; the login page mentions it only in
the embedded default and only while it exists."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from accounts.models import User
from research.models import ResearchRun
from tests.conftest import make_run

pytestmark = pytest.mark.django_db


def ensure_demo() -> str:
    out = StringIO()
    call_command("ensure_demo_account", stdout=out)
    return out.getvalue()


def test_the_demo_account_is_not_staff_and_cannot_open_the_admin(settings, owner):
    settings.DEMO_PASSWORD = "demo-pass-for-tests-123"
    output = ensure_demo()
    demo = User.objects.get(username=settings.DEMO_USERNAME)
    assert not demo.is_staff and not demo.is_superuser
    assert "createsuperuser" in output
    private = make_run(owner)
    client = Client()
    signed_in = client.post(
        reverse("accounts:login"),
        {"username": demo.username, "password": "demo-pass-for-tests-123"},
    )
    assert signed_in.status_code == 302
    admin = client.get(reverse("admin:research_researchrun_changelist"))
    assert admin.status_code == 302 and admin["Location"].startswith("/admin/login/")
    detail = client.get(reverse("admin:research_researchrun_change", args=[private.pk]))
    assert detail.status_code == 302
    assert private.question not in client.get(reverse("research:dashboard")).content.decode()
    assert ResearchRun.objects.filter(owner=demo).count() == 0


def test_an_old_staff_demo_account_is_made_ordinary(settings):
    User.objects.create_superuser(settings.DEMO_USERNAME, password="old-demo-password-1")
    output = ensure_demo()
    demo = User.objects.get(username=settings.DEMO_USERNAME)
    assert not demo.is_staff and not demo.is_superuser
    assert "is now an ordinary account" in output
    assert demo.check_password("old-demo-password-1")  # the password is kept


def test_the_login_page_names_the_demo_account_in_the_embedded_default(settings):
    settings.EMBEDDED_MODE, settings.DEMO_PASSWORD = True, ""
    page = Client().get(reverse("accounts:login")).content.decode()
    assert 'id="demo-account"' not in page  # no demo account yet
    ensure_demo()
    page = Client().get(reverse("accounts:login")).content.decode()
    assert "A demo account exists: user name <strong>demo</strong>." in page
    assert "printed once in the terminal where <code>make run</code>" in page


def test_the_login_page_says_when_the_password_comes_from_the_environment(settings):
    settings.EMBEDDED_MODE, settings.DEMO_PASSWORD = True, "from-the-environment-1"
    ensure_demo()
    page = Client().get(reverse("accounts:login")).content.decode()
    assert "the value of <code>DEMO_PASSWORD</code>" in page
    assert "from-the-environment-1" not in page


def test_the_login_page_says_nothing_of_a_demo_outside_the_embedded_default(settings):
    settings.DEMO_PASSWORD = ""
    ensure_demo()
    settings.EMBEDDED_MODE = False
    page = Client().get(reverse("accounts:login")).content.decode()
    assert 'id="demo-account"' not in page
