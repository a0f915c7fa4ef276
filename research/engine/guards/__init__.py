"""The rules that keep research bounded: budgets and reservations, query fingerprints, action
validation, the finish gate, diminishing returns and stop reasons.

The model proposes; these functions decide. Everything here is deterministic and side-effect
free except :class:`BudgetLedger`, which keeps the running account of one run in memory (the
loop persists its ``usage`` and ``settled_keys`` in every checkpoint).
"""

from research.engine.guards.actions import (
    MAX_CONCURRENT_FETCHES,
    MAX_CONCURRENT_SEARCHES,
    MAX_FETCHES_PER_DOMAIN,
    Action,
    ActionVerdict,
    T,
    action_dedupe_key,
    plan_fetch_waves,
    validate_actions,
)
from research.engine.guards.budget import (
    BUDGET_PRESETS,
    BudgetLedger,
    BudgetRefused,
    Depth,
    Phase,
    Reservation,
    budget_for,
    estimate_tokens,
)
from research.engine.guards.coverage import (
    PRIMARY_CLASSES,
    RELEVANT_BP,
    FinishGateResult,
    central_contradictions,
    compute_coverage,
    evaluate_finish_gate,
    is_relevant,
    source_cluster,
    unmet_questions,
)
from research.engine.guards.queries import (
    RRF_K,
    QueryFingerprint,
    fingerprint_query,
    reciprocal_rank,
)
from research.engine.guards.stopping import (
    DUPLICATE_PROPOSAL_LIMIT,
    STOP_MESSAGES,
    SYSTEMIC_FAILURE_LIMIT,
    ZERO_GAIN_LIMIT,
    IterationGain,
    StopReason,
    advance_iteration,
    diminishing_returns,
    research_stop_reason,
)

__all__ = [
    "Action",
    "ActionVerdict",
    "BUDGET_PRESETS",
    "BudgetLedger",
    "BudgetRefused",
    "DUPLICATE_PROPOSAL_LIMIT",
    "Depth",
    "FinishGateResult",
    "IterationGain",
    "MAX_CONCURRENT_FETCHES",
    "MAX_CONCURRENT_SEARCHES",
    "MAX_FETCHES_PER_DOMAIN",
    "PRIMARY_CLASSES",
    "Phase",
    "QueryFingerprint",
    "RELEVANT_BP",
    "RRF_K",
    "Reservation",
    "STOP_MESSAGES",
    "SYSTEMIC_FAILURE_LIMIT",
    "StopReason",
    "T",
    "ZERO_GAIN_LIMIT",
    "action_dedupe_key",
    "advance_iteration",
    "budget_for",
    "central_contradictions",
    "compute_coverage",
    "diminishing_returns",
    "estimate_tokens",
    "evaluate_finish_gate",
    "fingerprint_query",
    "is_relevant",
    "plan_fetch_waves",
    "reciprocal_rank",
    "research_stop_reason",
    "source_cluster",
    "unmet_questions",
    "validate_actions",
]
