"""Budgets: presets per depth, token estimates and the BudgetLedger (reserve -> settle)."""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from research.engine.contracts import Budget, SynthesisReserve, Usage
from research.engine.ports import Clock

Depth = Literal["quick", "standard", "thorough"]
Phase = Literal["research", "synthesis"]

# --------------------------------------------------------------------------------------------
# Budgets
# --------------------------------------------------------------------------------------------

_KB = 1000
_MB = 1000 * _KB

BUDGET_PRESETS: dict[str, Budget] = {
    "quick": Budget(
        iterations=6,
        searches=8,
        fetched_sources=10,
        model_calls=22,
        elapsed_seconds=10 * 60,
        bytes_per_source=200 * _KB,
        bytes_per_run=1500 * _KB,
        input_tokens=250_000,
        output_tokens=40_000,
        synthesis_model_calls=2,
        synthesis_input_tokens=60_000,
        synthesis_output_tokens=8_000,
    ),
    "standard": Budget(
        iterations=12,
        searches=18,
        fetched_sources=24,
        model_calls=40,
        elapsed_seconds=20 * 60,
        bytes_per_source=200 * _KB,
        bytes_per_run=3 * _MB,
        input_tokens=500_000,
        output_tokens=80_000,
        synthesis_model_calls=2,
        synthesis_input_tokens=120_000,
        synthesis_output_tokens=16_000,
    ),
    "thorough": Budget(
        iterations=20,
        searches=32,
        fetched_sources=45,
        model_calls=72,
        elapsed_seconds=45 * 60,
        bytes_per_source=200 * _KB,
        bytes_per_run=6 * _MB,
        input_tokens=900_000,
        output_tokens=120_000,
        synthesis_model_calls=2,
        synthesis_input_tokens=200_000,
        synthesis_output_tokens=24_000,
    ),
}

# Usage counters a reservation is checked against, with the budget field that limits each.
_LIMITED_COUNTERS: tuple[tuple[str, str, str], ...] = (
    ("iterations", "iterations", "iterations"),
    ("searches", "searches", "searches"),
    ("fetched_sources", "fetched_sources", "fetched sources"),
    ("model_calls", "model_calls", "model calls"),
    ("bytes_fetched", "bytes_per_run", "bytes of source text"),
    ("input_tokens", "input_tokens", "input tokens"),
    ("output_tokens", "output_tokens", "output tokens"),
)
_RESERVED_FOR_SYNTHESIS = {
    "model_calls": "synthesis_model_calls",
    "input_tokens": "synthesis_input_tokens",
    "output_tokens": "synthesis_output_tokens",
}


def budget_for(depth: str) -> Budget:
    """The hard-limit preset for ``depth`` (quick, standard or thorough), as a fresh copy."""
    try:
        return BUDGET_PRESETS[depth].model_copy(deep=True)
    except KeyError:
        raise ValueError(
            f"{depth!r} is not a research depth; choose quick, standard or thorough."
        ) from None


def estimate_tokens(text: str) -> int:
    """A cheap, deliberately generous token estimate (about three characters per token)."""
    return len(text) // 3 + 1


class BudgetRefused(Exception):
    """A reservation would exceed a hard limit (or repeat an action already counted)."""

    def __init__(self, reason: str, *, counter: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.counter = counter

    def __str__(self) -> str:
        return self.reason


@dataclass(frozen=True)
class Reservation:
    """Budget held for one logical action until it is settled or released."""

    key: str
    amount: Usage
    phase: Phase


def _get(usage: Usage, counter: str) -> float:
    return getattr(usage, counter)


class BudgetLedger:
    """The running account of one run: settled usage, open reservations, elapsed time.

    Reserve before an action, settle after it. Reserving the same key again (a retry) returns
    the open reservation, and settling a key twice records it once, so a logical action counts
    once however often it is attempted. Research-phase reservations may not touch the
    allowance set aside for synthesis; synthesis-phase ones may, and ignore the time limit so a
    run that ran out of time can still write its (partial) report.
    """

    def __init__(
        self,
        budget: Budget,
        *,
        clock: Clock,
        usage: Usage | None = None,
        settled_keys: Iterable[str] = (),
    ) -> None:
        self.budget = budget
        self._clock = clock
        self._settled = (usage or Usage()).model_copy()
        self._settled_keys: set[str] = set(settled_keys)
        self._open: dict[str, Reservation] = {}
        # Elapsed time accumulates across pauses: earlier segments come in through ``usage``.
        self._segment_start = clock.monotonic()

    @property
    def settled_keys(self) -> frozenset[str]:
        """Keys of every action already counted (persist them in the working state)."""
        return frozenset(self._settled_keys)

    def elapsed_seconds(self) -> float:
        """Active research time of the run, including earlier segments."""
        return self._settled.elapsed_seconds + (self._clock.monotonic() - self._segment_start)

    def time_exhausted(self) -> bool:
        """Whether the run has used its elapsed-time budget."""
        return self.elapsed_seconds() >= self.budget.elapsed_seconds

    def usage(self) -> Usage:
        """Settled usage with the elapsed time up to now; what a checkpoint stores."""
        return self._settled.model_copy(update={"elapsed_seconds": self.elapsed_seconds()})

    def reserved(self) -> Usage:
        """The sum of all open reservations."""
        total = Usage()
        for reservation in self._open.values():
            total = total + reservation.amount
        return total

    def synthesis_reserve(self) -> SynthesisReserve:
        """The allowance research may not spend."""
        return SynthesisReserve(
            model_calls=self.budget.synthesis_model_calls,
            input_tokens=self.budget.synthesis_input_tokens,
            output_tokens=self.budget.synthesis_output_tokens,
        )

    def limit(self, counter: str, *, phase: Phase = "research") -> int:
        """The limit of a usage counter in ``phase`` (research excludes the synthesis reserve)."""
        budget_field = next(b for c, b, _ in _LIMITED_COUNTERS if c == counter)
        limit = int(getattr(self.budget, budget_field))
        if phase == "research" and counter in _RESERVED_FOR_SYNTHESIS:
            limit -= int(getattr(self.budget, _RESERVED_FOR_SYNTHESIS[counter]))
        return limit

    def remaining(self, *, phase: Phase = "research") -> Usage:
        """What is still available in ``phase`` after settled usage and open reservations."""
        committed = self._settled + self.reserved()
        values = {
            counter: max(0, self.limit(counter, phase=phase) - int(_get(committed, counter)))
            for counter, _, _ in _LIMITED_COUNTERS
        }
        values["elapsed_seconds"] = max(0.0, self.budget.elapsed_seconds - self.elapsed_seconds())
        return Usage(**values)

    def reserve(self, key: str, amount: Usage, *, phase: Phase = "research") -> Reservation:
        """Hold ``amount`` for the action ``key``; raises :class:`BudgetRefused` with a reason
        when it would exceed a hard limit, when research time is up, or when ``key`` was
        already settled."""
        if key in self._settled_keys:
            raise BudgetRefused("This action has already been carried out and counted.")
        existing = self._open.get(key)
        if existing is not None:
            return existing
        if phase == "research" and self.time_exhausted():
            minutes = self.budget.elapsed_seconds / 60
            raise BudgetRefused(
                f"The run has used its {minutes:g} minutes of research time.",
                counter="elapsed_seconds",
            )
        committed = self._settled + self.reserved()
        for counter, _, label in _LIMITED_COUNTERS:
            wanted = _get(amount, counter)
            if not wanted:
                continue
            limit = self.limit(counter, phase=phase)
            used = _get(committed, counter)
            if used + wanted > limit:
                raise BudgetRefused(
                    self._refusal(counter, label, used, limit, phase), counter=counter
                )
        reservation = Reservation(key=key, amount=amount, phase=phase)
        self._open[key] = reservation
        return reservation

    def _refusal(self, counter: str, label: str, used: float, limit: int, phase: Phase) -> str:
        held_back = ""
        if phase == "research" and counter in _RESERVED_FOR_SYNTHESIS:
            kept = int(getattr(self.budget, _RESERVED_FOR_SYNTHESIS[counter]))
            if kept:
                held_back = f" ({kept:,} more are kept for writing the report)"
        return (
            f"Not enough budget: research may use {limit:,} {label}{held_back} "
            f"and {int(used):,} are already used or reserved."
        )

    def settle(self, key: str, actual: Usage) -> Usage:
        """Record what the action ``key`` actually used and release its reservation.

        Settling a key that was already settled changes nothing. Returns the settled total.
        """
        self._open.pop(key, None)
        if key in self._settled_keys:
            return self.usage()
        self._settled_keys.add(key)
        # Elapsed time is measured by the ledger itself, never taken from an action's report.
        self._settled = self._settled + actual.model_copy(update={"elapsed_seconds": 0.0})
        return self.usage()

    def release(self, key: str) -> None:
        """Drop the reservation of an action that will not run (refused, cancelled)."""
        self._open.pop(key, None)

    def exhausted(self, *, phase: Phase = "research") -> list[str]:
        """Counters with nothing left in ``phase`` (plus ``elapsed_seconds`` once time is up)."""
        committed = self._settled + self.reserved()
        spent = [
            counter
            for counter, _, _ in _LIMITED_COUNTERS
            if _get(committed, counter) >= self.limit(counter, phase=phase)
        ]
        if self.time_exhausted():
            spent.append("elapsed_seconds")
        return spent

    def research_blocked(self) -> str | None:
        """Why research cannot continue on budget grounds, or ``None``.

        Research stops when iterations, model calls, tokens or time are used up, or when it
        can neither search nor read any more. Running out of searches alone does not stop it:
        already discovered candidates can still be read.
        """
        spent = set(self.exhausted(phase="research"))
        for counter in (
            "elapsed_seconds",
            "iterations",
            "model_calls",
            "input_tokens",
            "output_tokens",
        ):
            if counter in spent:
                return counter
        cannot_read = {"fetched_sources", "bytes_fetched"} & spent
        if "searches" in spent and cannot_read:
            return "searches"
        return None
