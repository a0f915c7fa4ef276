"""Metering: what a model call or an action may cost, and the one way a call is paid for.

Every model call goes through :meth:`Meter.call` (or :meth:`Meter.collect` for a call made on
the thread pool): reserve the allowance under a key, make the call, settle what it used —
its own usage when it succeeded, the error's usage when it failed. The budget therefore holds
even when a call fails halfway.
"""

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Protocol, TypeVar

from research.engine import observe
from research.engine.contracts import RunSnapshot, StepRecord, Usage
from research.engine.guards import BudgetLedger, BudgetRefused, estimate_tokens
from research.engine.ports import Clock, ModelError

if TYPE_CHECKING:
    from research.engine.guards import Phase as BudgetPhase
    from research.engine.run.context import RunContext


# A client may repair invalid output once (a repair call counts as a model call), so
# one request can cost two calls; reservations assume the worst so limits hold.
CALLS_PER_REQUEST = 2
# System prompt and framing the client wraps around each request.
PROMPT_OVERHEAD_TOKENS = 1_500
OUTPUT_TOKEN_CAPS: dict[str, int] = {
    "plan": 4_000,
    "decide": 1_500,
    "extract": 4_000,
    "synthesize": 16_000,
    # One verdict per finding (about 50 tokens each) for up to 60 findings, with room to spare.
    "verify": 6_000,
}
# Below this many output tokens a synthesis call cannot produce a useful report; the program
# writes the report from the evidence itself instead.
MIN_SYNTHESIS_OUTPUT_TOKENS = 800
# Below this many output tokens the verifier cannot judge even a short report; the findings are
# then left to the deterministic checks.
MIN_VERIFY_OUTPUT_TOKENS = 300
# A snapshot is cut to fit the token budget, but never below this many characters.
MIN_EXTRACTION_CHARS = 2_000
# Reading a source with less than this many bytes of budget left is not worth a fetch.
MIN_SOURCE_BYTES = 2_000


def call_allowance(
    request_text: str, *, output_tokens: int, calls: int = CALLS_PER_REQUEST
) -> Usage:
    """The most one model request may consume: what the budget reserves before the call.

    ``request_text`` is the request contract as JSON; ``output_tokens`` is the output cap
    passed to the client (``max_output_tokens``). A repair resends the prompt and the first
    answer, hence the multiplication. Token counts are the engine's generous estimate
    (:func:`estimate_tokens`); clients are expected to stay within them.
    """
    prompt = estimate_tokens(request_text) + PROMPT_OVERHEAD_TOKENS
    return Usage(
        model_calls=calls,
        input_tokens=calls * prompt + (calls - 1) * output_tokens,
        output_tokens=calls * output_tokens,
    )


class _Metered(Protocol):
    @property
    def usage(self) -> Usage: ...


R = TypeVar("R", bound=_Metered)


class Meter:
    """Budget arithmetic for one orchestrator: ``calls`` is how many model calls one request
    may cost (see :data:`CALLS_PER_REQUEST`)."""

    def __init__(self, *, clock: Clock, calls: int) -> None:
        self._clock = clock
        self.calls = calls

    def ledger(self, snapshot: RunSnapshot) -> BudgetLedger:
        """A ledger for one phase; create it when the phase starts, because elapsed time is
        measured from its creation (earlier segments come in through ``usage``)."""
        return BudgetLedger(
            snapshot.budget,
            clock=self._clock,
            usage=snapshot.usage,
            settled_keys=snapshot.state.settled_action_keys,
        )

    def allowance(self, request_text: str, kind: str, output_cap: int | None = None) -> Usage:
        cap = OUTPUT_TOKEN_CAPS[kind] if output_cap is None else output_cap
        return call_allowance(request_text, output_tokens=cap, calls=self.calls)

    def call(
        self,
        ledger: BudgetLedger,
        key: str,
        allowance: Usage,
        call: Callable[[], R],
        *,
        kind: str,
        phase: "BudgetPhase" = "research",
    ) -> R:
        """Reserve ``allowance`` under ``key``, make ``call`` and settle what it used.
        ``kind`` is the model call's kind (plan, decide, synthesize, verify), for telemetry.

        Raises :class:`BudgetRefused` (nothing reserved, nothing called) when the budget
        cannot hold the allowance, and :class:`ModelError` after settling the error's usage
        when the call fails."""
        ledger.reserve(key, allowance, phase=phase)
        return self.settle(ledger, key, self.traced(kind, call), kind=kind)

    def collect(self, ledger: BudgetLedger, key: str, future: "Future[R]", *, kind: str) -> R:
        """The result of a call already reserved under ``key`` and running on a pool
        (submitted as ``traced(kind, ...)``), settled like :meth:`call`."""
        return self.settle(ledger, key, future.result, kind=kind)

    @staticmethod
    def traced(kind: str, call: Callable[..., R]) -> Callable[..., R]:
        """``call`` inside a tracing span of its own, in the caller's context (for pools)."""

        def run(*args: object) -> R:
            with observe.observer().span(f"research.model.{kind}", {"kind": kind}):
                return call(*args)

        return observe.carry_context(run)

    @staticmethod
    def settle(ledger: BudgetLedger, key: str, call: Callable[[], R], *, kind: str) -> R:
        try:
            result = call()
        except ModelError as error:
            ledger.settle(key, error.usage)
            observe.observer().model_call(kind, error.usage, failed=True)
            raise
        ledger.settle(key, result.usage)
        observe.observer().model_call(kind, result.usage, failed=False)
        return result

    def reserve_logical(
        self, run: "RunContext", key: str, amount: Usage, *, strict: bool = True
    ) -> None:
        """Reserve a logical action once: an action already counted (before a crash) is not
        counted again. ``strict=False`` ignores refusals (for an iteration already begun)."""
        if key in run.ledger.settled_keys:
            return
        try:
            run.ledger.reserve(key, amount)
        except BudgetRefused:
            if strict:
                raise

    def reserve_read(self, run: "RunContext", key: str) -> int:
        """Reserve a fetch and the bytes it may bring; returns the byte limit to fetch with."""
        budget = run.ledger.budget
        if key in run.ledger.settled_keys:
            return budget.bytes_per_source
        available = run.ledger.remaining(phase="research").bytes_fetched
        max_bytes = min(budget.bytes_per_source, available)
        # An open reservation of the same key comes back unchanged (the amount is ignored).
        reservation = run.ledger.reserve(key, Usage(fetched_sources=1, bytes_fetched=max_bytes))
        if reservation.amount.bytes_fetched < min(MIN_SOURCE_BYTES, budget.bytes_per_source):
            run.ledger.release(key)
            raise BudgetRefused(
                "Not enough of the run's byte budget is left to read another source.",
                counter="bytes_fetched",
            )
        return reservation.amount.bytes_fetched

    def check_time(self, run: "RunContext", key: str) -> None:
        """Refuse to start an action once research time is up, even one reserved in time
        (a batch can outlast the clock); its reservation is released."""
        if run.ledger.time_exhausted():
            run.ledger.release(key)
            minutes = run.ledger.budget.elapsed_seconds / 60
            raise BudgetRefused(
                f"The run has used its {minutes:g} minutes of research time.",
                counter="elapsed_seconds",
            )

    def count_retry(self, ledger: BudgetLedger, step: StepRecord) -> None:
        if step.attempt > 1:
            ledger.settle(f"{step.dedupe_key}#attempt{step.attempt}", Usage(retries=1))
            observe.observer().retried("step")
