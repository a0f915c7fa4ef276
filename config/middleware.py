from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.loader import render_to_string


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


# No address of ours contains a control character; a path that does is nobody's page.
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
# A NUL escaped in JSON text: "\u0000" preceded by an even number of backslashes (an odd
# number would make the first backslash part of an escaped backslash, not of the escape).
_JSON_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000", re.IGNORECASE)

PATH_REFUSED = (
    "This address contains a character that no address here uses (a NUL or another control "
    "character); check the link you followed."
)
QUERY_REFUSED = (
    "The address contains a NUL character (%00) in its query, which no page accepts; remove it "
    "and try again."
)
BODY_REFUSED = (
    "What you sent contains a NUL character, which no field accepts; nothing was saved. Remove "
    "the character (it often comes with text pasted from a binary file) and send it again."
)
HEADER_REFUSED = "The request has a NUL character in a header, which HTTP does not allow."


class RefuseNulCharactersMiddleware:
    """Refuse NUL characters before they reach a view, the session or the database.

    PostgreSQL refuses NUL in text (a DataError, so a 500) while SQLite stores it; checking
    here makes both databases answer the same, for our pages and for the admin alike. A
    path with a control character is no page of ours (404); a NUL in the query, in form
    fields or in a JSON body is refused with 422 and a sentence (HTMX requests get the
    sentence above the page, so the form and what was typed in it stay); a NUL in a header
    is a malformed request (400); a cookie with a NUL is ignored.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if _CONTROL.search(request.path_info) or _CONTROL.search(request.path):
            return _refusal(request, PATH_REFUSED, status=404)
        headers = (value for key, value in request.META.items() if key.startswith("HTTP_"))
        if any("\x00" in str(value) for value in headers):
            return _refusal(request, HEADER_REFUSED, status=400)
        # A cookie may carry a NUL even when the header does not (an octal escape inside
        # quotes); such a cookie is treated as absent, so a broken session cookie signs the
        # browser out instead of locking it out of every page.
        for name in [name for name, value in request.COOKIES.items() if "\x00" in value]:
            del request.COOKIES[name]
        if _has_nul(request.GET.lists()):
            return _refusal(request, QUERY_REFUSED, status=422)
        if request.method in ("POST", "PUT", "PATCH") and request.path_info.startswith("/api/"):
            # The JSON API reads the raw body; reading it first keeps it readable after a
            # form body is parsed below (Django refuses the raw body once the stream is read).
            _ = request.body
        if request.method in ("POST", "PUT", "PATCH") and _body_has_nul(request):
            return _refusal(request, BODY_REFUSED, status=422)
        return self.get_response(request)


def _has_nul(lists: Iterable[tuple[str, list[str]]]) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in lists)


def _body_has_nul(request: HttpRequest) -> bool:
    content_type = request.content_type or ""
    if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        # Uploaded files may hold any bytes; only their names are text.
        names = [(key, [f.name or "" for f in files]) for key, files in request.FILES.lists()]
        return _has_nul(request.POST.lists()) or _has_nul(names)
    if content_type == "application/json" or content_type.endswith("+json"):
        body = request.body
        return b"\x00" in body or bool(_JSON_NUL.search(body))
    return False


def _refusal(request: HttpRequest, sentence: str, *, status: int) -> HttpResponse:
    if request.path_info.startswith("/api/"):
        # The JSON API's one error shape (research.api.errors).
        body = {"code": "not_found" if status == 404 else "invalid", "message": sentence}
        return JsonResponse({**body, "field": None}, status=status)
    if getattr(request, "htmx", False) or request.headers.get("HX-Request") == "true":
        # Put the sentence above the page instead of replacing the part that sent the
        # request: the form keeps what the person typed.
        body = render_to_string("_refusal.html", {"sentence": sentence}, request=request)
        response = HttpResponse(body, status=status)
        response["HX-Retarget"] = "main"
        response["HX-Reswap"] = "afterbegin"
        return response
    template = "404.html" if status == 404 else "refused.html"
    body = render_to_string(template, {"reason": sentence}, request=request)
    return HttpResponse(body, status=status)
