"""WebSocket routes: live progress of one run (see ``research.consumers``)."""

from django.urls import path

from research.consumers import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),
]
