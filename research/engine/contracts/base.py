"""The base contract, shared field types and limits."""

from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

from research.engine.urls import parse_policy_entry

SCHEMA_VERSION = 1

EXCERPT_MAX_CHARS = 1000
BASIS_POINTS = 10_000

SourceClass = Literal[
    "primary",
    "official",
    "academic",
    "reputable_secondary",
    "aggregator",
    "user_generated",
    "unknown",
]
SOURCE_CLASSES: tuple[str, ...] = get_args(SourceClass)
SourceStatus = Literal["candidate", "fetched", "blocked", "failed", "unsupported", "duplicate"]
Stance = Literal["supports", "contradicts", "context"]
Confidence = Literal["high", "medium", "low"]

# Short, URL- and anchor-safe identifiers for things a model refers to by id.
_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$"


class Contract(BaseModel):
    """Base of every contract: versioned, strict about unknown fields."""

    model_config = ConfigDict(extra="forbid", validate_assignment=False)

    schema_version: int = SCHEMA_VERSION

    @field_validator("schema_version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if not 1 <= value <= SCHEMA_VERSION:
            raise ValueError(
                f"schema_version {value} is not understood by this version of the engine "
                f"(supported: 1 to {SCHEMA_VERSION})"
            )
        return value


class _Part(BaseModel):
    """A nested value object; it is versioned by the contract that contains it."""

    model_config = ConfigDict(extra="forbid")


NonEmptyStr = Annotated[str, Field(min_length=1)]
ShortText = Annotated[str, Field(min_length=1, max_length=500)]
Identifier = Annotated[str, Field(pattern=_ID_PATTERN)]


def normalize_domain(value: str) -> str:
    """Validate and normalise one domain-control entry of a source policy.

    An entry is a domain name (``example.org``, which covers its subdomains; international
    names become punycode) or an IP address (``10.0.0.5``, ``[fd00::1]``), either optionally
    with a port (``[fd00::1]:8443``). Raises ``ValueError`` with a readable sentence for
    anything else (a URL, a path, a malformed address or port): an
    :class:`~research.engine.urls.InvalidPolicyEntry`.
    """
    return str(parse_policy_entry(value))
