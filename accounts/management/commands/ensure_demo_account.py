import secrets

from django.conf import settings
from django.core.management.base import BaseCommand
from django.db import transaction

from accounts.models import User
from accounts.services import team_create


class Command(BaseCommand):
    help = (
        "Create the demo account (and a demo team) if it does not exist yet. "
        "The password comes from DEMO_PASSWORD, or is generated and printed once."
    )

    @transaction.atomic
    def handle(self, *args, **options) -> None:
        username = settings.DEMO_USERNAME
        if User.objects.filter(username=username).exists():
            self.stdout.write(
                f"Demo account “{username}” already exists; its password is unchanged."
            )
            return
        password = settings.DEMO_PASSWORD or secrets.token_urlsafe(12)
        user = User.objects.create_user(username=username, password=password, is_staff=True)
        # Staff so the demo can open the audit admin; superuser so every audit page works.
        user.is_superuser = True
        user.save(update_fields=["is_superuser"])
        team_create(name="Demo team", owner=user)
        self.stdout.write(self.style.SUCCESS("Created the demo account (shown once):"))
        self.stdout.write(f"    username: {username}")
        self.stdout.write(
            f"    password: {password}"
            if not settings.DEMO_PASSWORD
            else "    password: the value of DEMO_PASSWORD"
        )
