"""Choosing the backend from settings."""

from types import SimpleNamespace

import pytest

from research.llm import (
    LLMConfig,
    LLMConfigError,
    describe_backend,
    llm_config_from_settings,
    model_client_from_config,
)
from research.llm.extractive import ExtractiveModelClient
from research.llm.openai_compatible import OpenAICompatibleClient


def test_no_model_settings_mean_the_extractive_backend():
    config = llm_config_from_settings(SimpleNamespace())

    assert not config.model_configured
    assert isinstance(model_client_from_config(config), ExtractiveModelClient)
    assert describe_backend(config) == "extractive (no language model configured)"


def test_settings_build_the_openai_compatible_backend_with_phase_overrides():
    settings = SimpleNamespace(
        LLM_BASE_URL="http://localhost:11434/v1/",
        LLM_API_KEY="",
        LLM_MODEL="qwen3:8b",
        LLM_MODEL_EXTRACTOR="qwen3:4b",
        LLM_TIMEOUT_SECONDS="45",
        LLM_MAX_CONCURRENCY=2,
        LLM_MAX_ATTEMPTS=5,
        LLM_OUTPUT_MODE="json_object",
    )

    config = llm_config_from_settings(settings)
    client = model_client_from_config(config)

    assert isinstance(client, OpenAICompatibleClient)
    assert config.endpoint == "http://localhost:11434/v1"
    assert config.model_for("extractor") == "qwen3:4b"
    assert config.model_for("planner") == "qwen3:8b"
    assert (config.timeout_seconds, config.max_concurrency, config.max_attempts) == (45.0, 2, 5)
    assert config.output_mode == "json_object"
    assert describe_backend(config) == "qwen3:4b, qwen3:8b at http://localhost:11434/v1"


def test_a_malformed_number_names_the_setting():
    with pytest.raises(LLMConfigError, match="LLM_TIMEOUT_SECONDS"):
        llm_config_from_settings(SimpleNamespace(LLM_TIMEOUT_SECONDS="soon"))


def test_django_settings_are_read_by_default(settings):
    settings.LLM_BASE_URL = "http://127.0.0.1:8080/v1"
    settings.LLM_MODEL = "local"

    assert llm_config_from_settings().model_for("decider") == "local"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (LLMConfig(base_url="http://localhost:8080/v1"), "LLM_MODEL"),
        (LLMConfig(model="gpt-4.1-mini"), "LLM_API_KEY"),
        (LLMConfig(base_url="localhost:8080", model="m"), "http://"),
        (LLMConfig(base_url="http://h/v1", model="m", output_mode="xml"), "LLM_OUTPUT_MODE"),  # type: ignore[arg-type]
    ],
)
def test_unusable_model_settings_name_the_setting_to_fix(config, message):
    with pytest.raises(LLMConfigError, match=message):
        model_client_from_config(config)


def test_every_backend_implements_the_model_client_port():
    from research.engine.ports import ModelClient
    from research.llm.scripted import ScriptedModelClient

    openai_backend = model_client_from_config(
        LLMConfig(base_url="http://127.0.0.1:9/v1", model="m")
    )

    for backend in (openai_backend, ExtractiveModelClient(), ScriptedModelClient()):
        assert isinstance(backend, ModelClient)
