"""Scraping helpers shared by the telemetry tests (no tests here)."""

from __future__ import annotations

from django.test import Client
from prometheus_client.parser import text_string_to_metric_families


def scrape(token: str, client: Client | None = None) -> str:
    answer = (client or Client()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {token}")
    assert answer.status_code == 200, answer.content
    return answer.content.decode()


def value(text: str, sample: str) -> float:
    """The value of one sample, written as ``name{label="value",...}`` (0 when absent)."""
    for family in text_string_to_metric_families(text):
        for found in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(found.labels.items()))
            key = f"{found.name}{{{labels}}}" if labels else found.name
            if key == sample:
                return found.value
    return 0.0
