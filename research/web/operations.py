"""``/metrics``: the Prometheus scrape endpoint (docs/operations.md).

Off unless ``METRICS_ENABLED`` (404, as for any address that does not exist). When on, a
request is answered only with ``Authorization: Bearer <METRICS_TOKEN>`` or from an address in
``METRICS_ALLOWED_ADDRESSES`` (the socket's peer address: a proxy in front must be listed
itself, since forwarded headers can be forged); anything else gets 403 with one sentence.
"""

from __future__ import annotations

import hmac
import ipaddress

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST

from research.telemetry.gauges import exposition


def _token_ok(request: HttpRequest) -> bool:
    token = settings.METRICS_TOKEN
    header = request.headers.get("Authorization", "")
    scheme, _, given = header.partition(" ")
    return (
        bool(token)
        and scheme.lower() == "bearer"
        and hmac.compare_digest(given.strip().encode(), token.encode())
    )


def _address_ok(request: HttpRequest) -> bool:
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR", ""))
    except ValueError:
        return False
    return any(address in network for network in settings.METRICS_ALLOWED_ADDRESSES)


@require_GET
def metrics(request: HttpRequest) -> HttpResponse:
    if not settings.METRICS_ENABLED:
        raise Http404("Metrics are not enabled.")
    if not (_token_ok(request) or _address_ok(request)):
        return HttpResponse(
            "Metrics need the bearer token or an allowed address.\n",
            status=403,
            content_type="text/plain; charset=utf-8",
        )
    return HttpResponse(exposition(), content_type=CONTENT_TYPE_LATEST)
