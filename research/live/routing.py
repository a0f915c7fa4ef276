"""WebSocket routes: live progress of one run (``research.live.consumer``) and live threads of
question topics (``research.live.questions``)."""

from django.urls import path

from research.live.consumer import RunConsumer
from research.live.questions import TopicConsumer

websocket_urlpatterns = [
    path("ws/runs/<uuid:run_id>/", RunConsumer.as_asgi()),
    path("ws/topics/<uuid:topic_id>/", TopicConsumer.as_asgi()),
]
