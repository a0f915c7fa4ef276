from django.urls import path

from research import views

app_name = "research"

urlpatterns = [
    path("", views.dashboard, name="dashboard"),
    path("runs/<uuid:run_id>/", views.run_detail, name="run_detail"),
    path("share/<str:share_token>/", views.run_shared, name="run_shared"),
]
