"""Fixtures the research scenarios share (test_scenarios.py, test_scenarios_controls.py); a
module defining its own fixture of the same name uses its own."""

import pytest
from django.test import override_settings

from research.llm.scripted import ScriptedModelClient
from tests.integration.scripted import use_scripted_model


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> ScriptedModelClient:
    """The scripted model, answering every call the actor's orchestrator makes."""
    return use_scripted_model(monkeypatch)


@pytest.fixture
def frozen(web):
    """The frozen local web, with the settings that point the run's search and fetching at it."""
    with override_settings(**web.django_settings()):
        yield web
