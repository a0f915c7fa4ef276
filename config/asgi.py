"""ASGI entry point: HTTP through Django, WebSockets through Channels.

In the embedded mode (no REDIS_URL) this also starts the background worker
threads inside the server process.
"""

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

from config.env import ConfigError  # noqa: E402

try:
    django_asgi_app = get_asgi_application()
except ConfigError as exc:
    sys.exit(f"Configuration error: {exc}")

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import AllowedHostsOriginValidator  # noqa: E402

from config.worker import start_embedded_worker  # noqa: E402
from research.api.mcp_http import with_mcp  # noqa: E402
from research.live.routing import websocket_urlpatterns  # noqa: E402

application = ProtocolTypeRouter(
    {
        # The MCP server's streamable HTTP transport at /mcp; every other address is Django's.
        "http": with_mcp(django_asgi_app),
        "websocket": AllowedHostsOriginValidator(
            AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
        ),
    }
)

start_embedded_worker()
