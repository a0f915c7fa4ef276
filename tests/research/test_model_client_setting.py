"""The model client the worker uses is chosen by the RESEARCH_MODEL_CLIENT setting."""

from __future__ import annotations

import pytest
from django.core.exceptions import ImproperlyConfigured

from research.llm.extractive import ExtractiveModelClient
from research.worker.actors import configured_model_client

_NAMED = ExtractiveModelClient()


def named_client() -> ExtractiveModelClient:
    return _NAMED


def test_empty_setting_means_the_configured_endpoint_or_the_extractive_backend(settings):
    settings.RESEARCH_MODEL_CLIENT = ""
    assert isinstance(configured_model_client(), ExtractiveModelClient)
    assert configured_model_client() is not _NAMED


def test_the_setting_names_the_client(settings):
    settings.RESEARCH_MODEL_CLIENT = f"{__name__}.named_client"
    assert configured_model_client() is _NAMED


def test_a_path_that_cannot_be_imported_is_one_sentence_naming_the_setting(settings):
    settings.RESEARCH_MODEL_CLIENT = "tests.nowhere.client"
    with pytest.raises(ImproperlyConfigured, match=r"^RESEARCH_MODEL_CLIENT names 'tests.nowhere"):
        configured_model_client()
