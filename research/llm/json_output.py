"""Turning a model's text answer into a validated contract.

Models wrap JSON in reasoning blocks, Markdown fences and chatter; endpoints differ in which
JSON Schema keywords they accept. This module is the one place that copes with both.
"""

import copy
import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

T = TypeVar("T", bound=BaseModel)

# Reasoning models (DeepSeek-R1, Qwen3, QwQ…) put their thinking in these tags. Some servers
# strip the opening tag but leave the closing one, so a lone closing tag ends a preamble too.
_REASONING_BLOCK = re.compile(r"<(think|thinking|reasoning)>.*?</\1\s*>", re.IGNORECASE | re.DOTALL)
_LONE_CLOSING = re.compile(r"^.*</(?:think|thinking|reasoning)\s*>", re.IGNORECASE | re.DOTALL)
_UNCLOSED_OPENING = re.compile(r"<(?:think|thinking|reasoning)>.*$", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"```[ \t]*(?:json|JSON|javascript)?[ \t]*\n?(.*?)```", re.DOTALL)

_MAX_ERRORS_SHOWN = 8


class InvalidOutput(ValueError):
    """The model's answer is not a valid instance of the expected contract.

    ``detail`` says what is wrong in words a model (during the repair call) and a user can use.
    """

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def strip_reasoning(text: str) -> str:
    """Remove ``<think>…</think>`` style reasoning blocks, including a dangling one."""
    text = _REASONING_BLOCK.sub("", text)
    text = _LONE_CLOSING.sub("", text)
    return _UNCLOSED_OPENING.sub("", text).strip()


def extract_json_text(text: str) -> str:
    """The JSON object inside a model answer: reasoning, fences and chatter removed.

    Raises :class:`InvalidOutput` when no JSON object can be found or decoded.
    """
    cleaned = strip_reasoning(text)
    if not cleaned:
        raise InvalidOutput("The answer contained no JSON object (it was empty after reasoning).")
    candidates = [match.group(1).strip() for match in _FENCE.finditer(cleaned)]
    candidates.append(cleaned)
    decoder = json.JSONDecoder()
    first_error: json.JSONDecodeError | None = None
    for candidate in candidates:
        start = candidate.find("{")
        if start < 0:
            continue
        try:
            value, end = decoder.raw_decode(candidate, start)
        except json.JSONDecodeError as error:
            first_error = first_error or error
            continue
        if isinstance(value, dict):
            return candidate[start:end]
    if first_error is not None:
        # Some decoder messages already end in "at" ("Unterminated string starting at").
        where = "" if first_error.msg.endswith(" at") else " at"
        raise InvalidOutput(
            f"The answer is not valid JSON: {first_error.msg}{where} line {first_error.lineno} "
            f"column {first_error.colno}."
        )
    raise InvalidOutput("The answer contained no JSON object.")


def describe_validation_error(error: ValidationError) -> str:
    """A compact, model-readable list of what failed validation (field path: problem)."""
    lines = []
    for item in error.errors()[:_MAX_ERRORS_SHOWN]:
        path = ".".join(str(part) for part in item["loc"]) or "(top level)"
        lines.append(f"{path}: {item['msg']}")
    hidden = error.error_count() - len(lines)
    if hidden > 0:
        lines.append(f"… and {hidden} more problems of the same kind.")
    return "; ".join(lines)


def parse_output(text: str, schema: type[T]) -> T:
    """Validate a model answer as ``schema``; raises :class:`InvalidOutput` with the reason."""
    json_text = extract_json_text(text)
    try:
        return schema.model_validate_json(json_text)
    except ValidationError as error:
        raise InvalidOutput(
            f"The JSON does not match the required schema: {describe_validation_error(error)}"
        ) from None


def _simplify(node: Any) -> Any:
    if isinstance(node, dict):
        simplified = {
            # "discriminator" is an OpenAPI keyword, not JSON Schema; llama.cpp and several vLLM
            # grammar backends refuse schemas containing it, and oneOf already says the same.
            key: _simplify(value)
            for key, value in node.items()
            if key != "discriminator"
        }
        properties = simplified.get("properties")
        if isinstance(properties, dict):
            # The contract version is ours to set, not the model's; hiding it keeps small
            # models focused on content.
            properties.pop("schema_version", None)
            # A union member is told apart by its constant "type" tag, so the model must
            # always write it even though the contract has a default for it.
            tags = [name for name, spec in properties.items() if "const" in spec]
            required = simplified.setdefault("required", [])
            required.extend(tag for tag in tags if tag not in required)
            if not required:
                simplified.pop("required")
        return simplified
    if isinstance(node, list):
        return [_simplify(item) for item in node]
    return node


def response_json_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The JSON Schema of ``schema`` in the subset OpenAI-compatible servers accept."""
    return _simplify(copy.deepcopy(schema.model_json_schema()))
