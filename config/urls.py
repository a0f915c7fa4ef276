from django.contrib import admin
from django.urls import include, path

admin.site.site_header = "Deep Research audit"
admin.site.site_title = "Deep Research audit"
admin.site.index_title = "Runs, steps, sources and evidence"

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/", include("accounts.urls")),
    path("", include("research.urls")),
]
