"""The model backend for any OpenAI-compatible chat completions endpoint.

OpenAI, vLLM, Ollama, llama.cpp server, LM Studio and OpenRouter all speak
``/v1/chat/completions`` but differ in what they support. This client starts with JSON-schema
structured output, falls back to JSON mode and then to prompt-only JSON when the endpoint
answers 400 to the former, and remembers the mode that worked per endpoint and model. Every
answer is cleaned (reasoning blocks, code fences) and validated with pydantic; an invalid answer
gets exactly one repair call that quotes the validation error, after which the phase fails with
a :class:`ModelError` that says why.

Transient failures (429, 5xx, timeouts, refused connections) are retried a bounded number of
times, honouring ``Retry-After``; a per-endpoint semaphore caps concurrent calls; every call's
token usage and reported cost come back as an engine :class:`Usage`.
"""

import math
import threading
import time
from collections.abc import Callable
from decimal import Decimal, InvalidOperation
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai
from pydantic import BaseModel

from research.engine.answers import AnswerDraft
from research.engine.contracts import (
    ExtractionRequest,
    ExtractionResult,
    PlanRequest,
    Report,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SynthesisRequest,
    Usage,
    Verification,
    VerificationRequest,
)
from research.engine.guards import estimate_tokens
from research.engine.ports import ModelError, ModelResult
from research.engine.retry import GiveUp, RetryPolicy, call_with_retries, retry_after_seconds
from research.llm.clarify import ClarifyingQuestions
from research.llm.config import OUTPUT_MODES, LLMConfig, OutputMode, Phase
from research.llm.json_output import InvalidOutput, parse_output, response_json_schema
from research.llm.prompts import (
    Prompt,
    decider_prompt,
    extractor_prompt,
    planner_prompt,
    repair_prompt,
    synthesizer_prompt,
    verifier_prompt,
)

T = TypeVar("T", bound=BaseModel)

PHASE_LABELS: dict[Phase, str] = {
    "planner": "planning",
    "decider": "research decision",
    "extractor": "evidence extraction",
    "synthesizer": "report synthesis",
    "verifier": "finding verification",
}

# A model that answers with pages of invalid text should not get all of it back in the repair
# call; the start is enough for it to see its mistake.
_REPAIR_ECHO_CHARS = 6000
_ERROR_DETAIL_CHARS = 300
# Three one-line questions in JSON fit well within this many output tokens.
_CLARIFY_OUTPUT_TOKENS = 600
_BACKOFF_BASE_SECONDS = 1.0

# Phrases servers use when a prompt does not fit (OpenAI, vLLM, llama.cpp, Ollama, LM Studio,
# OpenRouter, Anthropic-style proxies).
_CONTEXT_PHRASES = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "context size",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length",
    "exceeds the available context",
)
# Phrases that mark a 400 as "this request field is not supported here".
_UNSUPPORTED_PHRASES = (
    "unsupported",
    "not supported",
    "unrecognized",
    "unknown parameter",
    "unexpected keyword",
    "extra inputs are not permitted",
    "not allowed",
    "instead",
)
# Phrases that mark a 400 as "this structured-output mode is not supported here".
_FORMAT_PHRASES = (
    "response_format",
    "response format",
    "json_schema",
    "json schema",
    "json_object",
    "json mode",
    "structured output",
    "guided_json",
    "grammar",
    "schema",
)

_modes_lock = threading.Lock()
_working_modes: dict[tuple[str, str], OutputMode] = {}
_slots_lock = threading.Lock()
_endpoint_slots: dict[tuple[str, int], threading.BoundedSemaphore] = {}


# The request field that caps the answer's length. Most OpenAI-compatible servers take
# ``max_tokens``; OpenAI's reasoning models refuse it and want ``max_completion_tokens``.
LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
_working_limit_fields: dict[tuple[str, str], str] = {}


def remembered_limit_field(endpoint: str, model: str) -> str:
    """The output-limit field that last worked for ``model`` at ``endpoint``."""
    with _modes_lock:
        return _working_limit_fields.get((endpoint.rstrip("/"), model), LIMIT_FIELDS[0])


def _remember_limit_field(endpoint: str, model: str, name: str) -> None:
    with _modes_lock:
        _working_limit_fields[(endpoint.rstrip("/"), model)] = name


def remembered_output_mode(endpoint: str, model: str) -> OutputMode | None:
    """The structured-output mode that last worked for ``model`` at ``endpoint``, if known."""
    with _modes_lock:
        return _working_modes.get((endpoint.rstrip("/"), model))


def _remember_mode(endpoint: str, model: str, mode: OutputMode) -> None:
    with _modes_lock:
        _working_modes[(endpoint.rstrip("/"), model)] = mode


def endpoint_semaphore(endpoint: str, limit: int) -> threading.BoundedSemaphore:
    """The process-wide semaphore capping concurrent calls to one endpoint."""
    key = (endpoint.rstrip("/"), limit)
    with _slots_lock:
        slot = _endpoint_slots.get(key)
        if slot is None:
            slot = _endpoint_slots[key] = threading.BoundedSemaphore(limit)
        return slot


def _error_detail(error: openai.APIError) -> str:
    body = error.body
    if isinstance(body, dict):
        message = body.get("message") or body.get("error") or body.get("detail") or body
    else:
        message = body or error.message
    text = " ".join(str(message).split())
    return text[:_ERROR_DETAIL_CHARS]


def _mentions(text: str, phrases: tuple[str, ...]) -> bool:
    folded = text.casefold()
    return any(phrase in folded for phrase in phrases)


_RETRYABLE_ERRORS = (openai.RateLimitError, openai.InternalServerError, openai.APIConnectionError)


def _asked_wait(error: Exception) -> float | None:
    """The wait the server asked for in the failed response's Retry-After headers, if any."""
    response = getattr(error, "response", None)
    return retry_after_seconds(response.headers if response is not None else None)


def _decimal(value: Any) -> Decimal:
    try:
        amount = Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0)
    return amount if amount.is_finite() and amount > 0 else Decimal(0)


def usage_from_completion(completion: Any, *, prompt_text: str, answer: str) -> Usage:
    """Engine usage of one completed call: tokens as reported (estimated when the server
    reports none, so token budgets still bite), cached input tokens and reported cost."""
    reported = getattr(completion, "usage", None)
    input_tokens = getattr(reported, "prompt_tokens", None)
    output_tokens = getattr(reported, "completion_tokens", None)
    details = getattr(reported, "prompt_tokens_details", None)
    cached = getattr(details, "cached_tokens", None) if details is not None else None
    extra = getattr(reported, "model_extra", None) or {}
    # OpenRouter reports the charged amount as usage.cost (credits, i.e. US dollars).
    cost = _decimal(extra.get("cost", getattr(reported, "cost", 0)) or 0)
    return Usage(
        model_calls=1,
        input_tokens=_count(input_tokens, fallback=estimate_tokens(prompt_text)),
        output_tokens=_count(output_tokens, fallback=estimate_tokens(answer)),
        cached_tokens=_count(cached, fallback=0),
        cost=cost,
    )


def _count(value: Any, *, fallback: int) -> int:
    return value if isinstance(value, int) and value >= 0 else fallback


class OpenAICompatibleClient:
    """:class:`~research.engine.ports.ModelClient` for OpenAI-compatible endpoints.

    ``sleep`` is called for retry back-off (tests pass a fake). Safe to share between threads.
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        config.validate()
        self.config = config
        self._sleep = sleep
        self._endpoint = config.endpoint
        self._slot = endpoint_semaphore(self._endpoint, config.max_concurrency)
        # Exact backoff (no jitter) doubling from one second; the server's Retry-After replaces
        # it; a wait longer than allowed fails the call at once.
        self._retry = RetryPolicy(
            max_attempts=config.max_attempts,
            base_delay=_BACKOFF_BASE_SECONDS,
            max_delay=math.inf,
            max_retry_after=config.max_retry_wait_seconds,
            jitter=False,
        )
        self._client = openai.OpenAI(
            base_url=self._endpoint,
            # Local servers need no key, but the SDK insists on one.
            api_key=config.api_key or "unused",
            timeout=config.timeout_seconds,
            # Retries are ours: bounded, honouring Retry-After, and visible to tests.
            max_retries=0,
        )
        host = (urlsplit(self._endpoint).hostname or "").casefold()
        # OpenRouter reports cost only when asked; other servers may reject unknown fields.
        self._extra_body: dict[str, Any] = (
            {"usage": {"include": True}} if host.endswith("openrouter.ai") else {}
        )

    # -- the five phases ---------------------------------------------------------------------

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        """Draft a research plan (no tools, no retrieved content)."""
        return self._call(planner_prompt(request), ResearchPlan, request.max_output_tokens)

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        """Propose one to three research actions from the compact brief."""
        return self._call(decider_prompt(brief), ResearchDecision, brief.max_output_tokens)

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        """Extract evidence candidates from one untrusted source."""
        result = self._call(extractor_prompt(request), ExtractionResult, request.max_output_tokens)
        evidence = result.value.evidence[: request.max_items]
        return ModelResult(result.value.model_copy(update={"evidence": evidence}), result.usage)

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        """Write the report from evidence cards (and repair it once when problems are given)."""
        result = self._call(synthesizer_prompt(request), Report, request.max_output_tokens)
        # These two are facts about the run, not the model's to decide.
        report = result.value.model_copy(update={"mode": "model", "partial": request.partial})
        return ModelResult(report, result.usage)

    def verify(self, request: VerificationRequest) -> ModelResult[Verification]:
        """Judge each finding against its cited excerpts (a tool-less call)."""
        return self._call(verifier_prompt(request), Verification, request.max_output_tokens)

    def answer(self, prompt: Prompt, limit: int | None = None) -> ModelResult[AnswerDraft]:
        """Answer a question about a report from its frozen evidence (one tool-less call; the
        prompt is :func:`research.llm.answers.answer_prompt`)."""
        return self._call(prompt, AnswerDraft, limit)

    def clarify(self, prompt: Prompt) -> ModelResult[ClarifyingQuestions]:
        """Up to three clarifying questions before planning (the prompt is
        :func:`research.llm.clarify.clarifying_prompt`)."""
        return self._call(prompt, ClarifyingQuestions, _CLARIFY_OUTPUT_TOKENS)

    # -- one validated call with at most one repair ------------------------------------------

    def _call(self, prompt: Prompt, schema: type[T], limit: int | None) -> ModelResult[T]:
        """One validated answer. ``limit`` caps each completion's output tokens, so the token
        budget the engine reserved for the call is a hard limit, not an estimate."""
        phase = prompt.phase
        messages = prompt.messages()
        answer, usage, finish = self._complete(phase, messages, schema, prompt.text, limit)
        try:
            return ModelResult(parse_output(answer, schema), usage)
        except InvalidOutput as first:
            problem = first.detail
            if finish == "length":
                problem = (
                    f"the answer was cut off at the {limit}-token output limit; answer more "
                    f"briefly ({problem})"
                )
        repair_messages = [
            *messages,
            {"role": "assistant", "content": answer[:_REPAIR_ECHO_CHARS]},
            {"role": "user", "content": repair_prompt(problem)},
        ]
        try:
            answer, repair_usage, finish = self._complete(
                phase, repair_messages, schema, prompt.text + answer, limit
            )
        except ModelError as error:
            raise ModelError(
                f"The {PHASE_LABELS[phase]} answer was invalid ({problem}) and the repair call "
                f"failed: {error.reason}",
                retryable=error.retryable,
                usage=usage + error.usage,
            ) from error
        usage = usage + repair_usage
        try:
            return ModelResult(parse_output(answer, schema), usage)
        except InvalidOutput as second:
            cut = f" (cut off at the {limit}-token output limit)" if finish == "length" else ""
            raise ModelError(
                f"The model {self.config.model_for(phase)!r} gave an invalid {PHASE_LABELS[phase]} "
                f"answer twice (once after a repair request){cut}: {second.detail}",
                usage=usage,
            ) from None

    # -- one completion, with output-mode fallback and retries --------------------------------

    def _initial_mode(self, model: str) -> OutputMode:
        if self.config.output_mode is not None:
            return self.config.output_mode
        return remembered_output_mode(self._endpoint, model) or "json_schema"

    def _complete(
        self,
        phase: Phase,
        messages: list[dict[str, str]],
        schema: type[BaseModel],
        prompt_text: str,
        limit: int | None = None,
    ) -> tuple[str, Usage, str | None]:
        model = self.config.model_for(phase)
        mode = self._initial_mode(model)
        limit_field = remembered_limit_field(self._endpoint, model)
        switched = False  # one switch per call: a server refusing both fields must not loop
        while True:
            try:
                completion = self._request(
                    phase, model, messages, mode, schema, {limit_field: limit} if limit else {}
                )
            except (openai.BadRequestError, openai.UnprocessableEntityError) as error:
                other_field = (
                    self._other_limit_field(limit_field, error) if limit and not switched else None
                )
                if other_field is not None:
                    switched = True
                    limit_field = other_field
                    _remember_limit_field(self._endpoint, model, limit_field)
                    continue
                fallback = self._fallback_mode(mode, error)
                if fallback is None:
                    raise self._translate(error, phase, model) from error
                mode = fallback
                _remember_mode(self._endpoint, model, mode)
                continue
            except openai.OpenAIError as error:
                raise self._translate(error, phase, model) from error
            break
        if self.config.output_mode is None:
            _remember_mode(self._endpoint, model, mode)
        return self._answer(completion, phase, model, prompt_text)

    @staticmethod
    def _other_limit_field(current: str, error: openai.APIStatusError) -> str | None:
        """The other output-limit field, when the server refused ``current`` by name."""
        detail = _error_detail(error).casefold()
        if current not in detail or not _mentions(detail, _UNSUPPORTED_PHRASES):
            return None
        return next(name for name in LIMIT_FIELDS if name != current)

    def _fallback_mode(self, mode: OutputMode, error: openai.APIStatusError) -> OutputMode | None:
        if self.config.output_mode is not None or mode == "prompt":
            return None
        detail = _error_detail(error)
        if _mentions(detail, _CONTEXT_PHRASES) or not _mentions(detail, _FORMAT_PHRASES):
            return None
        return OUTPUT_MODES[OUTPUT_MODES.index(mode) + 1]

    def _request(
        self,
        phase: Phase,
        model: str,
        messages: list[dict[str, str]],
        mode: OutputMode,
        schema: type[BaseModel],
        limit: dict[str, int],
    ) -> Any:
        options: dict[str, Any] = dict(limit)
        if mode == "json_schema":
            options["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": schema.__name__,
                    "schema": response_json_schema(schema),
                    # Strict mode demands every property be required, which our contracts
                    # (with defaults) are not; pydantic validates strictly afterwards anyway.
                    "strict": False,
                },
            }
        elif mode == "json_object":
            options["response_format"] = {"type": "json_object"}
        if self._extra_body:
            options["extra_body"] = self._extra_body

        def create() -> Any:
            with self._slot:
                return self._client.chat.completions.create(
                    model=model, messages=messages, **options
                )

        def give_up(error: Exception, attempt: int, why: GiveUp) -> Exception:
            if why == "attempts":
                return error
            # A clear failure beats a worker silently blocked for many minutes.
            asked = _asked_wait(error)
            wait = asked if asked is not None else self._retry.backoff(attempt)
            return ModelError(
                f"The model endpoint {self._endpoint} asked to wait {wait:.0f} seconds before "
                f"the next {PHASE_LABELS[phase]} request, longer than the "
                f"{self.config.max_retry_wait_seconds:g} seconds allowed.",
                retryable=True,
            )

        return call_with_retries(
            create,
            policy=self._retry,
            retryable=lambda error: isinstance(error, _RETRYABLE_ERRORS),
            retry_after=_asked_wait,
            give_up=give_up,
            sleep=self._sleep,
            operation_name="model",
        )

    def _answer(
        self, completion: Any, phase: Phase, model: str, prompt_text: str
    ) -> tuple[str, Usage, str | None]:
        """The answer's text, its usage and its finish reason ("length" when it was cut off)."""
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list):
            raise ModelError(
                f"The model endpoint {self._endpoint} answered the {PHASE_LABELS[phase]} request "
                "with something that is not a chat completion. Check that LLM_BASE_URL is the "
                "API root of an OpenAI-compatible server (often ending in /v1)."
            )
        message = getattr(choices[0], "message", None) if choices else None
        finish = getattr(choices[0], "finish_reason", None) if choices else None
        content = getattr(message, "content", None) if message is not None else None
        text = content if isinstance(content, str) else ""
        usage = usage_from_completion(completion, prompt_text=prompt_text, answer=text)
        refusal = getattr(message, "refusal", None) if message is not None else None
        if refusal:
            raise ModelError(
                f"The model {model!r} refused the {PHASE_LABELS[phase]} request: "
                f"{' '.join(str(refusal).split())[:_ERROR_DETAIL_CHARS]}",
                usage=usage,
            )
        if not text.strip():
            reason = f" (finish reason: {finish})" if finish else ""
            raise ModelError(
                f"The model {model!r} at {self._endpoint} returned an empty response to the "
                f"{PHASE_LABELS[phase]} request{reason}.",
                retryable=True,
                usage=usage,
            )
        return text, usage, finish

    # -- errors ------------------------------------------------------------------------------

    @property
    def _attempts(self) -> str:
        count = self.config.max_attempts
        return "1 attempt" if count == 1 else f"{count} attempts"

    def _translate(self, error: openai.OpenAIError, phase: Phase, model: str) -> ModelError:
        endpoint = self._endpoint
        label = PHASE_LABELS[phase]
        if isinstance(error, openai.APITimeoutError):
            return ModelError(
                f"The model endpoint {endpoint} did not answer the {label} request within "
                f"{self.config.timeout_seconds:g} seconds ({self._attempts}).",
                retryable=True,
            )
        if isinstance(error, openai.APIConnectionError):
            return ModelError(
                f"The model endpoint {endpoint} could not be reached ({self._attempts}). "
                "Check LLM_BASE_URL and that the server is running.",
                retryable=True,
            )
        if not isinstance(error, openai.APIStatusError):
            return ModelError(
                f"The model endpoint {endpoint} gave an unusable answer to the {label} request: "
                f"{' '.join(str(error).split())[:_ERROR_DETAIL_CHARS]}",
                retryable=True,
            )
        detail = _error_detail(error)
        status = error.status_code
        if status == 401:
            return ModelError(
                f"The model endpoint {endpoint} rejected the API key (401 Unauthorized). "
                "Check LLM_API_KEY."
            )
        if status == 403:
            return ModelError(
                f"The model endpoint {endpoint} refused access to model {model!r} "
                f"(403 Forbidden): {detail}"
            )
        if status == 404:
            return ModelError(
                f"The model endpoint {endpoint} does not know the model {model!r} "
                f"(404 Not Found: {detail}). Check the model name and that LLM_BASE_URL is the "
                "API root (often ending in /v1)."
            )
        if status in (400, 413, 422) and _mentions(detail, _CONTEXT_PHRASES):
            return ModelError(
                f"The {label} prompt is too long for the context window of model {model!r}: "
                f"{detail} Use a model with a larger context or smaller sources."
            )
        if status == 429:
            return ModelError(
                f"The model endpoint {endpoint} is rate limiting requests (429 Too Many Requests) "
                f"and did not recover ({self._attempts}): {detail}",
                retryable=True,
            )
        if status >= 500:
            return ModelError(
                f"The model endpoint {endpoint} failed with {status} on the {label} request "
                f"({self._attempts}): {detail}",
                retryable=True,
            )
        return ModelError(
            f"The model endpoint {endpoint} rejected the {label} request ({status}): {detail}"
        )
