"""Model backends behind the engine's ``ModelClient`` port.

``openai_compatible`` calls any OpenAI-compatible endpoint with validated structured output;
``extractive`` does the whole method without a model (the default when none is configured);
``scripted`` answers from a script for tests. ``factory`` picks one from the settings.
"""

from research.llm.config import LLMConfig, LLMConfigError
from research.llm.factory import (
    describe_backend,
    llm_config_from_settings,
    model_client_from_config,
)

__all__ = [
    "LLMConfig",
    "LLMConfigError",
    "describe_backend",
    "llm_config_from_settings",
    "model_client_from_config",
]
