"""Who is calling: a personal API token (``Authorization: Bearer …``) or our own pages'
session cookie.

* A request that carries an ``Authorization`` header is judged by it alone: a wrong,
  revoked or malformed token is refused (401) even when a valid session cookie comes along,
  so a cookie is never a substitute for a token. Token calls need no CSRF token.
* A request without one may use the session cookie of a signed-in person; then unsafe
  methods must pass Django's CSRF check, exactly as a form post would.
* A read-only token is refused on every write (403), before the endpoint runs.
* Each token may make ``API_TOKEN_REQUESTS_PER_MINUTE`` requests per minute (a window counted
  in the token's own row, so every worker process sees the same count); more get 429 with
  ``Retry-After``.
"""

from __future__ import annotations

import math
import time
from typing import Any

from django.conf import settings
from django.db.models import F
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer
from ninja.utils import check_csrf

from accounts.models import ApiToken, User, hash_api_token
from research.api.errors import ApiError

SAFE_METHODS = ("GET", "HEAD", "OPTIONS")
_WINDOW_SECONDS = 60


def _unauthenticated(message: str) -> ApiError:
    return ApiError(401, "unauthenticated", message, headers={"WWW-Authenticate": "Bearer"})


def _count_request(token: ApiToken) -> None:
    """Count one request in the token's current minute; raise 429 past the limit."""
    now = time.time()
    window = int(now // _WINDOW_SECONDS)
    stamp = timezone.now()
    rows = ApiToken.objects.filter(pk=token.pk)
    counted = rows.filter(rate_window=window).update(
        rate_count=F("rate_count") + 1, last_used_at=stamp
    ) or rows.exclude(rate_window=window).update(
        rate_window=window, rate_count=1, last_used_at=stamp
    )
    if not counted:
        # A new minute began between the two updates (another request started it): count
        # this one in it.
        rows.update(rate_count=F("rate_count") + 1, last_used_at=stamp)
    count = rows.values_list("rate_count", flat=True).first() or 0
    limit = settings.API_TOKEN_REQUESTS_PER_MINUTE
    if count > limit:
        wait = max(1, math.ceil((window + 1) * _WINDOW_SECONDS - now))
        raise ApiError(
            429,
            "rate_limited",
            f"This token made more than {limit} requests in a minute, the most this server "
            f"allows; try again in {wait} second{'s' if wait != 1 else ''}.",
            headers={"Retry-After": str(wait)},
        )


class ApiAuth(HttpBearer):
    """Bearer token first and alone; otherwise the session (with CSRF on writes)."""

    def __call__(self, request: HttpRequest) -> Any:
        request.api_token = None  # type: ignore[attr-defined]
        header = request.headers.get("Authorization")
        if header is not None:
            scheme, _, value = header.strip().partition(" ")
            if scheme.lower() != "bearer" or not value.strip():
                raise _unauthenticated(
                    "The Authorization header must be “Bearer ” followed by a personal API token."
                )
            return self.authenticate(request, value.strip())
        user = getattr(request, "user", None)
        if user is None or not user.is_authenticated or not user.is_active:
            return None
        if request.method not in SAFE_METHODS and check_csrf(request) is not None:
            raise ApiError(
                403,
                "csrf_failed",
                "This request uses the session cookie but has no valid CSRF token; send the "
                "X-CSRFToken header, or call the API with a personal token instead.",
            )
        return user

    def authenticate(self, request: HttpRequest, token: str) -> User:
        row = (
            ApiToken.objects.select_related("user").filter(token_hash=hash_api_token(token)).first()
        )
        if row is None or row.revoked_at is not None or not row.user.is_active:
            raise _unauthenticated("This API token is not valid or has been revoked.")
        _count_request(row)
        if row.read_only and request.method not in SAFE_METHODS:
            raise ApiError(
                403,
                "read_only_token",
                "This token is read-only; create a token without that limit to change anything.",
            )
        request.api_token = row  # type: ignore[attr-defined]
        return row.user


api_auth = ApiAuth()
