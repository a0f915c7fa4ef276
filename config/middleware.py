from collections.abc import Callable

from django.conf import settings
from django.http import HttpRequest, HttpResponse


class ContentSecurityPolicyMiddleware:
    """Send one Content-Security-Policy on every response.

    Django 5.2 has no built-in CSP; the policy allows only our own scripts and
    styles, so an injected inline script in a rendered source title cannot run.
    The admin keeps the policy too: it needs no inline script.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", settings.CONTENT_SECURITY_POLICY)
        return response
