"""Choosing and building the model backend from the Django settings.

This is the only module of the model layer that touches Django, and only through
``django.conf.settings`` attributes read with ``getattr``: everything else takes a plain
:class:`~research.llm.config.LLMConfig`.
"""

from typing import Any

from research.engine.ports import ModelClient
from research.llm.config import PHASES, LLMConfig, LLMConfigError, OutputMode, Phase
from research.llm.extractive import ExtractiveModelClient
from research.llm.openai_compatible import OpenAICompatibleClient


def _text(settings: Any, name: str) -> str:
    return str(getattr(settings, name, "") or "").strip()


def _number(settings: Any, name: str, default: float) -> float:
    value = getattr(settings, name, None)
    if value in (None, ""):
        return default
    try:
        return float(value)
    except (TypeError, ValueError):
        raise LLMConfigError(f"{name} must be a number, not {value!r}.") from None


def llm_config_from_settings(settings: Any = None) -> LLMConfig:
    """The model configuration from ``LLM_*`` settings (``django.conf.settings`` by default)."""
    if settings is None:
        from django.conf import settings as django_settings

        settings = django_settings
    phase_models: dict[Phase, str] = {}
    for phase in PHASES:
        model = _text(settings, f"LLM_MODEL_{phase.upper()}")
        if model:
            phase_models[phase] = model
    mode = _text(settings, "LLM_OUTPUT_MODE").lower()
    output_mode: OutputMode | None = mode if mode and mode != "auto" else None  # type: ignore[assignment]
    return LLMConfig(
        base_url=_text(settings, "LLM_BASE_URL"),
        api_key=_text(settings, "LLM_API_KEY"),
        model=_text(settings, "LLM_MODEL"),
        phase_models=phase_models,
        timeout_seconds=_number(settings, "LLM_TIMEOUT_SECONDS", 120.0),
        max_concurrency=int(_number(settings, "LLM_MAX_CONCURRENCY", 4)),
        max_attempts=int(_number(settings, "LLM_MAX_ATTEMPTS", 3)),
        max_retry_wait_seconds=_number(settings, "LLM_MAX_RETRY_WAIT_SECONDS", 60.0),
        output_mode=output_mode,
    )


def model_client_from_config(config: LLMConfig) -> ModelClient:
    """The OpenAI-compatible backend when a model endpoint is configured, else the extractive
    backend. Raises :class:`~research.llm.config.LLMConfigError` for an unusable endpoint
    configuration."""
    if config.model_configured:
        return OpenAICompatibleClient(config)
    return ExtractiveModelClient()


def describe_backend(config: LLMConfig) -> str:
    """One line for the UI and logs saying which backend answers, e.g. "extractive (no
    language model configured)" or "gpt-4.1-mini at https://api.openai.com/v1"."""
    if not config.model_configured:
        return "extractive (no language model configured)"
    models = sorted({config.model_for(phase) for phase in PHASES if config.model_for(phase)})
    return f"{', '.join(models) or 'no model named'} at {config.endpoint}"
