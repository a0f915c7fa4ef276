"""A clock for tests: it only moves when told to."""

import threading
from datetime import UTC, datetime, timedelta


class FakeClock:
    """A clock that only moves when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2025, 1, 1, tzinfo=UTC)
        self._monotonic = 0.0
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The fake current time."""
        return self._now

    def monotonic(self) -> float:
        """Seconds advanced since the clock was created."""
        return self._monotonic

    def advance(self, seconds: float) -> None:
        """Move both readings forward by ``seconds``."""
        if seconds < 0:
            raise ValueError("A clock cannot go backwards.")
        with self._lock:
            self._now += timedelta(seconds=seconds)
            self._monotonic += seconds
