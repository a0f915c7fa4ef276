"""A model backend for tests: scripted answers per phase, and a record of every call.

Answers are queued per phase or produced by a rule (a function of the request). Each answer may
be a contract, a dict, JSON text (parsed like a real model answer, so ``<think>`` blocks and
fences are handled) or a :class:`ModelError` to raise. Every call is recorded with its request
and the exact prompt the real backend would have sent, so tests can assert what a phase saw:
that no page text reached the decider, or that injected text stayed inside its envelope.
"""

import threading
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

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
from research.engine.ports import ModelClient, ModelError, ModelResult
from research.llm.config import Phase
from research.llm.json_output import InvalidOutput, describe_validation_error, parse_output
from research.llm.prompts import (
    Prompt,
    decider_prompt,
    extractor_prompt,
    planner_prompt,
    synthesizer_prompt,
    verifier_prompt,
)

T = TypeVar("T", bound=BaseModel)
Answer = BaseModel | dict[str, Any] | str | ModelError | Callable[[Any], Any]


@dataclass(frozen=True)
class ScriptedCall:
    """One call the scripted backend received."""

    phase: Phase
    request: BaseModel
    prompt: Prompt


class ScriptedModelClient:
    """:class:`~research.engine.ports.ModelClient` answering from a script.

    Queued answers are used first, in order; then the phase's rule; then ``fallback`` (for
    example an :class:`~research.llm.extractive.ExtractiveModelClient`); otherwise the call
    fails with a :class:`ModelError` saying nothing was scripted. ``usage`` is what each call
    reports; by default one model call with tokens estimated from the prompt and answer.
    """

    def __init__(self, *, fallback: ModelClient | None = None, usage: Usage | None = None) -> None:
        self._lock = threading.Lock()
        self._queues: dict[Phase, deque[Answer]] = defaultdict(deque)
        self._rules: dict[Phase, Callable[[Any], Any]] = {}
        self._fallback = fallback
        self._usage = usage
        self.calls: list[ScriptedCall] = []

    # -- scripting -------------------------------------------------------------------------

    def queue(self, phase: Phase, *answers: Answer) -> "ScriptedModelClient":
        """Answer the next calls of ``phase`` with ``answers``, in order."""
        with self._lock:
            self._queues[phase].extend(answers)
        return self

    def rule(self, phase: Phase, answer: Callable[[Any], Any]) -> "ScriptedModelClient":
        """Answer calls of ``phase`` with ``answer(request)`` once its queue is empty."""
        with self._lock:
            self._rules[phase] = answer
        return self

    def calls_for(self, phase: Phase) -> list[ScriptedCall]:
        """The recorded calls of one phase, in order."""
        with self._lock:
            return [call for call in self.calls if call.phase == phase]

    def prompts_for(self, phase: Phase) -> list[str]:
        """The full prompt text (system and user) of every recorded call of ``phase``."""
        return [call.prompt.text for call in self.calls_for(phase)]

    # -- the five phases ---------------------------------------------------------------------

    def plan(self, request: PlanRequest) -> ModelResult[ResearchPlan]:
        """The scripted plan."""
        return self._answer("planner", request, planner_prompt(request), ResearchPlan)

    def decide(self, brief: ResearchBrief) -> ModelResult[ResearchDecision]:
        """The scripted decision."""
        return self._answer("decider", brief, decider_prompt(brief), ResearchDecision)

    def extract(self, request: ExtractionRequest) -> ModelResult[ExtractionResult]:
        """The scripted extraction."""
        return self._answer("extractor", request, extractor_prompt(request), ExtractionResult)

    def synthesize(self, request: SynthesisRequest) -> ModelResult[Report]:
        """The scripted report."""
        return self._answer("synthesizer", request, synthesizer_prompt(request), Report)

    def verify(self, request: VerificationRequest) -> ModelResult[Verification]:
        """The scripted verdicts."""
        return self._answer("verifier", request, verifier_prompt(request), Verification)

    # -- internals ---------------------------------------------------------------------------

    def _answer(
        self, phase: Phase, request: BaseModel, prompt: Prompt, schema: type[T]
    ) -> ModelResult[T]:
        with self._lock:
            self.calls.append(ScriptedCall(phase, request, prompt))
            queue = self._queues[phase]
            answer: Answer | None = queue.popleft() if queue else self._rules.get(phase)
        if answer is None:
            # A fallback without a language model (the extractive backend) has no verifier.
            method = getattr(self._fallback, _METHODS[phase], None)
            if method is None:
                raise ModelError(f"No scripted answer is queued for the {phase} call.")
            return method(request)
        # An invalid answer still cost a call, as it does with a real endpoint.
        spent = self._usage or Usage(model_calls=1, input_tokens=estimate_tokens(prompt.text))
        value = self._resolve(phase, answer, request, schema, spent)
        usage = self._usage or Usage(
            model_calls=1,
            input_tokens=estimate_tokens(prompt.text),
            output_tokens=estimate_tokens(value.model_dump_json()),
        )
        return ModelResult(value, usage)

    def _resolve(
        self, phase: Phase, answer: Answer, request: BaseModel, schema: type[T], spent: Usage
    ) -> T:
        if callable(answer) and not isinstance(answer, BaseModel | ModelError):
            answer = answer(request)
        if isinstance(answer, ModelError):
            raise answer
        try:
            if isinstance(answer, schema):
                return answer
            if isinstance(answer, BaseModel):
                return schema.model_validate(answer.model_dump())
            if isinstance(answer, dict):
                return schema.model_validate(answer)
            if isinstance(answer, str):
                return parse_output(answer, schema)
        except ValidationError as error:
            raise ModelError(
                f"The scripted {phase} answer is invalid: {describe_validation_error(error)}",
                usage=spent,
            ) from None
        except InvalidOutput as error:
            raise ModelError(
                f"The scripted {phase} answer is invalid: {error.detail}", usage=spent
            ) from None
        raise TypeError(f"A scripted answer cannot be a {type(answer).__name__}.")


_METHODS: dict[Phase, str] = {
    "planner": "plan",
    "decider": "decide",
    "extractor": "extract",
    "synthesizer": "synthesize",
    "verifier": "verify",
}
