from datetime import UTC, datetime

import pytest

from research.engine.contracts import PhaseChanged, SearchCandidate, SourcePolicy, Usage
from research.engine.guards import budget_for
from research.engine.ports import (
    AcquisitionError,
    Clock,
    EventSink,
    ModelError,
    ModelResult,
    SourceAdapter,
    Store,
    SystemClock,
)
from research.engine.states import RunStatus
from tests.engine.clock import FakeClock
from tests.engine.factories import make_document
from tests.engine.fakes import MemoryEvents, MemoryWeb
from tests.engine.memory_store import MemoryStore


def test_acquisition_error_reads_as_its_reason() -> None:
    error = AcquisitionError("blocked", "The site does not allow automated access.")
    assert str(error) == "The site does not allow automated access."
    assert (error.kind, error.retryable) == ("blocked", False)
    assert AcquisitionError("failed", "Timed out.", retryable=True).retryable


def test_acquisition_error_kind_must_be_a_source_status() -> None:
    with pytest.raises(ValueError, match="not an acquisition error kind"):
        AcquisitionError("exploded", "x")  # type: ignore[arg-type]


def test_model_error_carries_the_usage_of_the_failed_call() -> None:
    error = ModelError("The model returned invalid JSON twice.", usage=Usage(model_calls=2))
    assert str(error) == "The model returned invalid JSON twice."
    assert error.usage.model_calls == 2 and not error.retryable


def test_model_result_pairs_a_value_with_usage() -> None:
    result = ModelResult(value="plan", usage=Usage(model_calls=1))
    assert result.value == "plan" and result.usage.model_calls == 1


def test_fake_clock_moves_only_when_told() -> None:
    clock = FakeClock(datetime(2025, 6, 1, tzinfo=UTC))
    assert clock.monotonic() == 0
    clock.advance(90)
    assert clock.monotonic() == 90
    assert clock.now() == datetime(2025, 6, 1, 0, 1, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="cannot go backwards"):
        clock.advance(-1)


def test_system_clock_is_timezone_aware_and_monotonic() -> None:
    clock = SystemClock()
    assert clock.now().tzinfo is not None
    first = clock.monotonic()
    assert clock.monotonic() >= first


def test_in_memory_fakes_satisfy_the_ports() -> None:
    assert isinstance(SystemClock(), Clock)
    assert isinstance(FakeClock(), Clock)
    assert isinstance(MemoryEvents(), EventSink)
    assert isinstance(MemoryWeb({}, {}), SourceAdapter)
    assert isinstance(MemoryStore("run-1", budget=budget_for("quick")), Store)


def test_store_transition_is_compare_and_set() -> None:
    store = MemoryStore("run-1", budget=budget_for("quick"))
    assert store.transition("run-1", expected=RunStatus.QUEUED, to=RunStatus.RESEARCHING)
    assert not store.transition("run-1", expected=RunStatus.QUEUED, to=RunStatus.RESEARCHING)
    assert not store.transition(
        "run-1", expected=RunStatus.RESEARCHING, to=RunStatus.PAUSED, plan_version=7
    )


def test_store_steps_are_idempotent_by_dedupe_key() -> None:
    store = MemoryStore("run-1", budget=budget_for("quick"))
    first = store.begin_step("run-1", kind="search", dedupe_key="search:abc")
    again = store.begin_step("run-1", kind="search", dedupe_key="search:abc")
    assert first.id == again.id and len(store.steps) == 1


def test_web_fake_refuses_excluded_domains_as_blocked() -> None:
    web = MemoryWeb(
        {"https://spam.example/a": make_document("x", url="https://spam.example/a")}, {}
    )
    with pytest.raises(AcquisitionError) as caught:
        web.acquire(
            "https://spam.example/a",
            policy=SourcePolicy(excluded_domains=["spam.example"]),
            max_bytes=100,
        )
    assert caught.value.kind == "blocked"


def test_event_sink_receives_typed_events() -> None:
    events = MemoryEvents()
    events.emit(PhaseChanged(run_id="run-1", phase="searching", status=RunStatus.RESEARCHING))
    assert events.events[0].type == "phase_changed"


def test_search_candidates_are_recorded_once_per_canonical_url() -> None:
    store = MemoryStore("run-1", budget=budget_for("quick"))
    step = store.begin_step("run-1", kind="search", dedupe_key="search:1")
    candidates = [
        SearchCandidate(url="https://example.org/a?utm_source=x", provider="p", rank=1),
        SearchCandidate(url="HTTPS://EXAMPLE.org/a#frag", provider="q", rank=2),
    ]
    recorded = store.record_candidates("run-1", step_id=step.id, candidates=candidates)
    assert len({source.id for source in recorded}) == 1
