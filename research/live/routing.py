"""WebSocket routes: live progress of one run (see ``research.live.consumer``)."""

from django.urls import path

from research.live.consumer import RunConsumer

websocket_urlpatterns = [
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),
]
