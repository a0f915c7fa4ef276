"""Plain configuration of the model layer, free of Django so backends and tests can build it."""

from dataclasses import dataclass, field
from typing import Literal

Phase = Literal["planner", "decider", "extractor", "synthesizer", "verifier"]
PHASES: tuple[Phase, ...] = ("planner", "decider", "extractor", "synthesizer", "verifier")

OutputMode = Literal["json_schema", "json_object", "prompt"]
OUTPUT_MODES: tuple[OutputMode, ...] = ("json_schema", "json_object", "prompt")

# The public OpenAI endpoint: the only one that needs a key for sure. Local servers (Ollama,
# llama.cpp, vLLM, LM Studio) usually run without one.
OPENAI_BASE_URL = "https://api.openai.com/v1"


class LLMConfigError(ValueError):
    """The model configuration cannot work; the message names the setting to fix."""


@dataclass(frozen=True)
class LLMConfig:
    """Where and how to call a language model.

    With neither ``base_url`` nor any model set, no model is configured and the extractive
    backend is used. ``phase_models`` overrides ``model`` for single phases, for example a
    cheaper model for extraction. ``output_mode`` forces a structured-output mode instead of
    starting with JSON schema and falling back when the endpoint refuses it.
    """

    base_url: str = ""
    api_key: str = ""
    model: str = ""
    phase_models: dict[Phase, str] = field(default_factory=dict)
    timeout_seconds: float = 120.0
    max_concurrency: int = 4
    max_attempts: int = 3
    max_retry_wait_seconds: float = 60.0
    output_mode: OutputMode | None = None

    @property
    def model_configured(self) -> bool:
        """Whether any model endpoint is configured at all."""
        return bool(self.base_url or self.model or any(self.phase_models.values()))

    @property
    def endpoint(self) -> str:
        """The base URL calls go to (the public OpenAI API when none is set)."""
        return (self.base_url or OPENAI_BASE_URL).rstrip("/")

    def model_for(self, phase: Phase) -> str:
        """The model a phase calls: its override, else the default model."""
        return self.phase_models.get(phase) or self.model

    def validate(self) -> None:
        """Raise :class:`LLMConfigError` when a configured endpoint could not be called."""
        missing = [phase for phase in PHASES if not self.model_for(phase)]
        if missing:
            names = ", ".join(f"LLM_MODEL_{phase.upper()}" for phase in missing)
            raise LLMConfigError(
                f"A model endpoint is configured but no model is named for {', '.join(missing)}; "
                f"set LLM_MODEL (or {names}). Local servers such as llama.cpp accept any name."
            )
        if self.endpoint == OPENAI_BASE_URL and not self.api_key:
            raise LLMConfigError(
                "LLM_API_KEY is required for the OpenAI API; set it, or set LLM_BASE_URL to a "
                "local OpenAI-compatible server."
            )
        if not self.endpoint.startswith(("http://", "https://")):
            raise LLMConfigError(
                f"LLM_BASE_URL must start with http:// or https://, not {self.base_url!r}."
            )
        if self.timeout_seconds <= 0:
            raise LLMConfigError("LLM_TIMEOUT_SECONDS must be greater than zero.")
        if self.max_concurrency < 1:
            raise LLMConfigError("LLM_MAX_CONCURRENCY must be at least 1.")
        if self.max_attempts < 1:
            raise LLMConfigError("LLM_MAX_ATTEMPTS must be at least 1.")
        if self.output_mode is not None and self.output_mode not in OUTPUT_MODES:
            raise LLMConfigError(
                f"LLM_OUTPUT_MODE must be one of {', '.join(OUTPUT_MODES)} or empty, "
                f"not {self.output_mode!r}."
            )
