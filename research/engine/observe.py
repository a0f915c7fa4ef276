"""The observer port: how the engine, sources and model clients tell telemetry what happened.

The engine stays pure: it never imports a metrics or tracing library. It calls the
:class:`Observer` installed for the process (:func:`observer`), which is a no-op unless the
deployment installs one (``research.telemetry`` does at start-up when metrics or tracing
are configured). Every method takes only low-cardinality values — a phase, a kind, a
provider name, an outcome — and numbers; never a run's question, a URL or source text.

``span`` opens a tracing span around a block. Its attributes must be ids, hashes, counts or
the same low-cardinality names; the tracing implementation drops anything else.

Work handed to a thread pool keeps the caller's context (the current span, the run and step
ids on log lines) through :func:`carry_context`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

if TYPE_CHECKING:
    from research.engine.contracts import Usage

T = TypeVar("T")

# The run and step a thread is working on, for log lines and spans. Set by the orchestrator's
# entry points and by each step as it starts; read by the logging filter.
current_run_id: contextvars.ContextVar[str] = contextvars.ContextVar("research_run_id", default="")
current_step_id: contextvars.ContextVar[str] = contextvars.ContextVar(
    "research_step_id", default=""
)


class Observer(Protocol):
    def model_call(self, phase: str, usage: Usage, *, failed: bool) -> None:
        """One model call settled by the meter: ``phase`` is plan, decide, extract,
        synthesize or verify; ``usage`` what it used (its cost only when the provider reported one)."""

    def retried(self, operation: str) -> None:
        """One more attempt of ``operation`` (search, fetch, model, or a step after a crash)."""

    def timed(self, operation: str, provider: str, seconds: float, outcome: str) -> None:
        """A search or fetch took ``seconds``; ``outcome`` is ok or error."""

    def span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager:
        """A tracing span around a block."""


class NullObserver:
    """The default: nothing is recorded."""

    def model_call(self, phase: str, usage: Usage, *, failed: bool) -> None:
        return None

    def retried(self, operation: str) -> None:
        return None

    def timed(self, operation: str, provider: str, seconds: float, outcome: str) -> None:
        return None

    def span(self, name: str, attributes: dict[str, Any]) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()


_observer: Observer = NullObserver()


def observer() -> Observer:
    return _observer


def install(new: Observer | None) -> Observer:
    """Install ``new`` (``None``: the no-op) for the whole process; returns the previous one."""
    global _observer
    previous = _observer
    _observer = new if new is not None else NullObserver()
    return previous


@contextlib.contextmanager
def working_on(run_id: str = "", step_id: str = "") -> Iterator[None]:
    """Mark the current context as working on ``run_id`` (and ``step_id``) for the block."""
    tokens = []
    if run_id:
        tokens.append((current_run_id, current_run_id.set(run_id)))
    if step_id:
        tokens.append((current_step_id, current_step_id.set(step_id)))
    try:
        yield
    finally:
        for var, token in reversed(tokens):
            var.reset(token)


def carry_context(function: Callable[..., T]) -> Callable[..., T]:
    """``function`` bound to a copy of the caller's context, for a thread pool's worker."""
    context = contextvars.copy_context()

    def run(*args: Any, **kwargs: Any) -> T:
        return context.run(function, *args, **kwargs)

    return run
