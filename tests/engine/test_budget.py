import pytest

from research.engine.contracts import Budget, Usage, WorkingState
from research.engine.guards import (
    BUDGET_PRESETS,
    BudgetLedger,
    BudgetRefused,
    StopReason,
    budget_for,
    research_stop_reason,
)
from tests.engine.clock import FakeClock


def small_budget(**overrides: int) -> Budget:
    values = {
        "iterations": 5,
        "searches": 2,
        "fetched_sources": 2,
        "model_calls": 5,
        "elapsed_seconds": 600,
        "bytes_per_source": 100,
        "bytes_per_run": 250,
        "input_tokens": 1000,
        "output_tokens": 500,
        "synthesis_model_calls": 2,
        "synthesis_input_tokens": 400,
        "synthesis_output_tokens": 100,
    }
    values.update(overrides)
    return Budget(**values)


def ledger(budget: Budget | None = None, **kwargs: object) -> tuple[BudgetLedger, FakeClock]:
    clock = FakeClock()
    return BudgetLedger(budget or small_budget(), clock=clock, **kwargs), clock  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("depth", "row"),
    [
        ("quick", (6, 8, 10, 22, 600, 200_000, 1_500_000, 250_000, 40_000)),
        ("standard", (12, 18, 24, 40, 1200, 200_000, 3_000_000, 500_000, 80_000)),
        ("thorough", (20, 32, 45, 72, 2700, 200_000, 6_000_000, 900_000, 120_000)),
    ],
)
def test_presets_match_the_budget_table(depth: str, row: tuple[int, ...]) -> None:
    budget = budget_for(depth)
    assert (
        budget.iterations,
        budget.searches,
        budget.fetched_sources,
        budget.model_calls,
        budget.elapsed_seconds,
        budget.bytes_per_source,
        budget.bytes_per_run,
        budget.input_tokens,
        budget.output_tokens,
    ) == row


def test_every_preset_keeps_an_allowance_for_synthesis() -> None:
    for budget in BUDGET_PRESETS.values():
        assert budget.synthesis_model_calls >= 1
        assert budget.synthesis_input_tokens > 0


def test_unknown_depth_is_refused_with_the_choices() -> None:
    with pytest.raises(ValueError, match="choose quick, standard or thorough"):
        budget_for("exhaustive")


def test_preset_copies_are_independent() -> None:
    budget_for("quick").searches = 999
    assert budget_for("quick").searches == 8


def test_reservation_within_budget_is_granted_and_held() -> None:
    account, _ = ledger()
    account.reserve("search:a", Usage(searches=1))
    assert account.reserved().searches == 1
    assert account.remaining().searches == 1


def test_reservation_beyond_the_limit_is_refused_with_a_reason() -> None:
    account, _ = ledger()
    account.reserve("search:a", Usage(searches=1))
    account.reserve("search:b", Usage(searches=1))
    with pytest.raises(BudgetRefused) as caught:
        account.reserve("search:c", Usage(searches=1))
    assert caught.value.counter == "searches"
    assert str(caught.value) == (
        "Not enough budget: research may use 2 searches and 2 are already used or reserved."
    )


def test_settlement_records_actual_usage_and_releases_the_reservation() -> None:
    account, _ = ledger()
    account.reserve("extract:s1", Usage(model_calls=1, input_tokens=300, output_tokens=100))
    total = account.settle("extract:s1", Usage(model_calls=1, input_tokens=120, output_tokens=40))
    assert (total.model_calls, total.input_tokens, total.output_tokens) == (1, 120, 40)
    assert account.reserved() == Usage()


def test_retry_of_a_logical_action_counts_once() -> None:
    account, _ = ledger()
    first = account.reserve("read:s1", Usage(fetched_sources=1))
    retry = account.reserve("read:s1", Usage(fetched_sources=1))
    assert retry is first
    account.settle("read:s1", Usage(fetched_sources=1, bytes_fetched=80))
    account.settle("read:s1", Usage(fetched_sources=1, bytes_fetched=80))
    assert account.usage().fetched_sources == 1
    assert account.usage().bytes_fetched == 80


def test_settled_action_cannot_be_reserved_again() -> None:
    account, _ = ledger(settled_keys=["read:s1"])
    with pytest.raises(BudgetRefused, match="already been carried out"):
        account.reserve("read:s1", Usage(fetched_sources=1))


def test_released_reservation_frees_the_budget() -> None:
    account, _ = ledger()
    account.reserve("search:a", Usage(searches=2))
    account.release("search:a")
    account.reserve("search:b", Usage(searches=2))


def test_research_cannot_spend_the_synthesis_allowance() -> None:
    account, _ = ledger()  # 5 model calls, 2 kept for synthesis
    for index in range(3):
        account.reserve(f"call:{index}", Usage(model_calls=1))
    with pytest.raises(BudgetRefused) as caught:
        account.reserve("call:3", Usage(model_calls=1))
    assert "2 more are kept for writing the report" in str(caught.value)
    account.reserve("synthesis", Usage(model_calls=1), phase="synthesis")
    account.reserve("synthesis-repair", Usage(model_calls=1), phase="synthesis")


def test_research_tokens_stop_short_of_the_synthesis_reserve() -> None:
    account, _ = ledger()
    with pytest.raises(BudgetRefused) as caught:
        account.reserve("extract:big", Usage(model_calls=1, input_tokens=700))
    assert caught.value.counter == "input_tokens"
    account.reserve("synthesis", Usage(model_calls=1, input_tokens=700), phase="synthesis")


def test_bytes_per_run_is_a_hard_limit() -> None:
    account, _ = ledger()
    account.settle("read:s1", Usage(fetched_sources=1, bytes_fetched=200))
    with pytest.raises(BudgetRefused) as caught:
        account.reserve("read:s2", Usage(fetched_sources=1, bytes_fetched=100))
    assert caught.value.counter == "bytes_fetched"


def test_elapsed_time_comes_from_the_injected_clock() -> None:
    account, clock = ledger()
    clock.advance(599)
    assert not account.time_exhausted()
    clock.advance(1)
    assert account.time_exhausted()
    with pytest.raises(BudgetRefused, match="10 minutes of research time"):
        account.reserve("search:a", Usage(searches=1))


def test_elapsed_time_accumulates_across_pauses() -> None:
    account, clock = ledger(usage=Usage(elapsed_seconds=500))
    clock.advance(50)
    assert account.elapsed_seconds() == pytest.approx(550)
    assert account.usage().elapsed_seconds == pytest.approx(550)


def test_synthesis_may_run_after_research_time_is_up() -> None:
    account, clock = ledger()
    clock.advance(10_000)
    account.reserve("synthesis", Usage(model_calls=1), phase="synthesis")


def test_settlement_ignores_elapsed_time_reported_by_an_action() -> None:
    account, _ = ledger()
    account.settle("search:a", Usage(searches=1, elapsed_seconds=999))
    assert account.usage().elapsed_seconds == 0


def test_exhausted_lists_used_up_counters() -> None:
    account, _ = ledger()
    account.settle("s", Usage(searches=2))
    assert account.exhausted() == ["searches"]


def test_running_out_of_searches_alone_does_not_stop_research() -> None:
    account, _ = ledger()
    account.settle("s", Usage(searches=2))
    assert account.research_blocked() is None
    account.settle("r", Usage(fetched_sources=2))
    assert account.research_blocked() == "searches"


def test_stop_reason_reports_budget_and_time() -> None:
    account, clock = ledger()
    assert research_stop_reason(account, WorkingState()) is None
    account.settle("i", Usage(iterations=5))
    assert research_stop_reason(account, WorkingState()) is StopReason.BUDGET_EXHAUSTED
    other, clock = ledger()
    clock.advance(601)
    assert research_stop_reason(other, WorkingState()) is StopReason.TIME_EXHAUSTED


def test_stop_reason_reports_streaks() -> None:
    account, _ = ledger()
    assert research_stop_reason(account, WorkingState(zero_gain_streak=3)) is (
        StopReason.DIMINISHING_RETURNS
    )
    assert research_stop_reason(account, WorkingState(duplicate_proposal_streak=2)) is (
        StopReason.ONLY_EQUIVALENT_SEARCHES
    )
    assert research_stop_reason(account, WorkingState(systemic_failure_streak=3)) is (
        StopReason.PROVIDER_FAILURES
    )


def test_synthesis_reserve_is_reported_for_the_checkpoint() -> None:
    account, _ = ledger()
    reserve = account.synthesis_reserve()
    assert (reserve.model_calls, reserve.input_tokens, reserve.output_tokens) == (2, 400, 100)
