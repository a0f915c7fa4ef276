"""The MCP server over streamable HTTP, mounted at ``/mcp`` in the ASGI app (config/asgi.py).

Every request must carry ``Authorization: Bearer <personal API token>``; it is checked like an
API call (revoked tokens refused at once, the per-token rate limit applies) and answered by a
stateless MCP server acting as the token's owner (research/api/mcp.py), with JSON responses. No
session lives in this process: a run's state is in the database, and the agent polls it.
"""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from accounts.models import ApiToken, hash_api_token
from research.api.auth import _count_request
from research.api.errors import ApiError
from research.api.mcp import build_server


def _token_for(header: str) -> ApiToken:
    scheme, _, value = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not value.strip():
        raise ApiError(
            401,
            "unauthenticated",
            "Send “Authorization: Bearer <token>” with a personal API token.",
        )
    row = (
        ApiToken.objects.select_related("user", "team")
        .filter(token_hash=hash_api_token(value.strip()))
        .first()
    )
    if row is None or row.revoked_at is not None or not row.user.is_active:
        raise ApiError(401, "unauthenticated", "This API token is not valid or has been revoked.")
    _count_request(row)
    return row


async def _refuse(send, error: ApiError) -> None:
    body = json.dumps(error.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if error.status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    for name, value in error.headers.items():
        if name.lower() != "www-authenticate":
            headers.append((name.lower().encode(), value.encode()))
    await send({"type": "http.response.start", "status": error.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def mcp_http_app(scope, receive, send) -> None:
    headers = dict(scope.get("headers") or [])
    try:
        token = await sync_to_async(_token_for, thread_sensitive=True)(
            headers.get(b"authorization", b"").decode("latin-1")
        )
    except ApiError as error:
        await _refuse(send, error)
        return
    server = await sync_to_async(build_server, thread_sensitive=True)(token.user, token)
    manager = StreamableHTTPSessionManager(server._mcp_server, json_response=True, stateless=True)
    async with manager.run():
        await manager.handle_request(scope, receive, send)


def with_mcp(django_app):
    """An ASGI HTTP app: the MCP transport at /mcp, every other address to ``django_app``."""

    async def app(scope, receive, send) -> None:
        if scope["path"] in ("/mcp", "/mcp/"):
            await mcp_http_app(scope, receive, send)
        else:
            await django_app(scope, receive, send)

    return app
