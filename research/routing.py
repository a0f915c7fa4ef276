"""WebSocket routes. Live run progress (issue #7) adds its consumer here."""

websocket_urlpatterns: list = []
