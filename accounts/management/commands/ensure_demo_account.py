import secrets

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import User
from accounts.services import team_create


class Command(BaseCommand):
    help = (
        "Create the demo account (and a demo team) if it does not exist yet: an ordinary "
        "user, never staff. The password comes from DEMO_PASSWORD, or is generated and "
        "printed once. Staff accounts for the audit admin come from createsuperuser."
    )

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        username = settings.DEMO_USERNAME
        existing = User.objects.filter(username=username).first()
        if existing is not None:
            self.stdout.write(
                f"Demo account “{username}” already exists; its password is unchanged."
            )
            if existing.is_staff or existing.is_superuser:
                # Older versions made the demo account a superuser, so anyone holding its
                # printed password could read every user's runs in the admin.
                User.objects.filter(pk=existing.pk).update(is_staff=False, is_superuser=False)
                self.stdout.write(
                    self.style.WARNING(
                        f"“{username}” was staff; it is now an ordinary account. Create a "
                        "staff account for the audit admin with: python manage.py "
                        "createsuperuser"
                    )
                )
            return
        password = settings.DEMO_PASSWORD or secrets.token_urlsafe(12)
        user = User.objects.create_user(username=username, password=password)
        team_create(name="Demo team", owner=user)
        self.stdout.write(self.style.SUCCESS("Created the demo account (shown once):"))
        self.stdout.write(f"    username: {username}")
        self.stdout.write(
            f"    password: {password}"
            if not settings.DEMO_PASSWORD
            else "    password: the value of DEMO_PASSWORD"
        )
        self.stdout.write(
            "It is an ordinary account. For the audit admin, create a staff account with: "
            "python manage.py createsuperuser"
        )
