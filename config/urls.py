from django.contrib import admin
from django.contrib.contenttypes.views import shortcut
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.urls import include, path

from research.api import pages as api_pages
from research.api.endpoints import api
from research.web import operations

admin.site.site_header = "Deep Research audit"
admin.site.site_title = "Deep Research audit"
admin.site.index_title = "Runs, steps, sources and evidence"


def view_on_site(request: HttpRequest, content_type_id: int, object_id: str) -> HttpResponse:
    """The admin's "view on site" redirect, with a malformed id answered 404: Django's own
    view lets a UUID field's ValidationError through as a 500."""
    try:
        return shortcut(request, content_type_id, object_id)
    except ValidationError:
        raise Http404("No object has that id.") from None


urlpatterns = [
    # Before the admin's own route of the same address, which it replaces.
    path(
        "admin/r/<int:content_type_id>/<path:object_id>/",
        admin.site.admin_view(view_on_site),
    ),
    path("admin/", admin.site.urls),
    path("metrics", operations.metrics, name="metrics"),
    path("api/v1/", api.urls),
    path("webhooks/", api_pages.webhook_list, name="webhook_list"),
    path("webhooks/<int:hook_id>/", api_pages.webhook_detail, name="webhook_detail"),
    path("webhooks/<int:hook_id>/toggle/", api_pages.webhook_toggle, name="webhook_toggle"),
    path("accounts/", include("accounts.urls")),
    path("", include("research.web.urls")),
]
