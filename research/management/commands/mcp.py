"""``manage.py mcp --token TOKEN`` (or ``--user NAME`` on your own machine): the MCP server on
stdio, acting as that token's or user's owner (research/api/mcp.py, docs/api.md)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from accounts.models import ApiToken, User, hash_api_token


class Command(BaseCommand):
    help = "Serve research as MCP tools on stdio, as the owner of --token (or --user)."

    def add_arguments(self, parser) -> None:
        who = parser.add_mutually_exclusive_group(required=True)
        who.add_argument("--token", help="a personal API token (its limits apply)")
        who.add_argument("--user", help="a username, for local use by whoever runs manage.py")

    def handle(self, *args, token: str | None, user: str | None, **options) -> None:
        from research.api.mcp import build_server

        row = None
        if token:
            row = (
                ApiToken.objects.select_related("user", "team")
                .filter(token_hash=hash_api_token(token.strip()), revoked_at__isnull=True)
                .first()
            )
            if row is None or not row.user.is_active:
                raise CommandError("This API token is not valid or has been revoked.")
            person = row.user
        else:
            person = User.objects.filter(username=user, is_active=True).first()
            if person is None:
                raise CommandError(f"No active user is called {user!r}.")
        # In the embedded mode (no Redis) runs are worked on inside this process, as in the
        # web server's; with Redis the rundramatiq workers take them.
        from config.worker import start_embedded_worker

        start_embedded_worker()
        build_server(person, row).run("stdio")
