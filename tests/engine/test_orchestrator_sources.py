"""What the loop keeps of a search and what a fetch costs, over the in-memory ports.

The source adapter decides which results may be fetched (it knows the operator's
allow-list); the loop counts every result it drops and names the reason in the step's
summary and output. A refused fetch costs no fetch of the budget; a failed one costs one.
"""

from typing import Any

from research.engine.contracts import Budget, SourcePolicy
from research.engine.guards import budget_for
from research.engine.ports import CANDIDATE_DROPS, AcquisitionError
from research.engine.run.execution import search_summary
from tests.engine.factories import make_document
from tests.engine.test_orchestrator import GDP_QUERY, INSEE, PAGES, PRESS, RESULTS, build

INTRANET = "http://10.1.2.3:8080/wiki/gdp-2023"
INTRANET_V6 = "http://[fd00::5]:8443/wiki/gdp-2023-notes"
PRIVATE = "http://192.168.1.20/gdp"
METADATA = "http://169.254.169.254/latest/meta-data/"
INTRANET_PAGES = {
    **PAGES,
    INTRANET: make_document(
        "Intranet wiki. GDP grew by 0.9% in 2023 according to the revised estimate.",
        url=INTRANET,
        title="Intranet gdp note",
    ),
    INTRANET_V6: make_document(
        "Intranet notes. The gdp revision was published in May.",
        url=INTRANET_V6,
        title="Intranet gdp revision notes",
    ),
}


def search_step(world: Any) -> Any:
    return next(s for s in world.step_log("search") if s.payload.get("query") == GDP_QUERY)


def test_allow_listed_literal_addresses_become_candidates_and_are_read() -> None:
    results = {**RESULTS, GDP_QUERY: [INTRANET, PRIVATE, INTRANET_V6, METADATA, INSEE]}
    world = build(
        pages=INTRANET_PAGES,
        results=results,
        allowed_hosts=["10.1.2.3:8080", "[fd00::5]:8443"],
    )
    world.advance()

    step = search_step(world)
    assert (
        step.summary
        == "5 results; 2 dropped: 1 cloud metadata address, 1 private address not allowed"
    )
    assert step.output == {
        "results": 5,
        "kept": 3,
        "dropped": {"private address not allowed": 1, "cloud metadata address": 1},
    }
    urls = {s.url for s in world.store.sources.values()}
    assert {INTRANET, INTRANET_V6, INSEE} <= urls
    assert PRIVATE not in urls and METADATA not in urls
    assert INTRANET in world.web.fetches and INTRANET_V6 in world.web.fetches
    finished = [e for e in world.events.of_type("step_finished") if e.step_id == step.id]
    assert finished[0].message == f"Found {step.summary}"


def test_results_outside_the_source_policy_are_dropped_and_counted() -> None:
    policy = SourcePolicy(
        mode="only_domains", domains=["insee.fr"], excluded_domains=["www.insee.fr"]
    )
    results = {**RESULTS, GDP_QUERY: [INSEE, PRESS, "mailto:someone@example.org"]}
    world = build(results=results, policy=policy)
    world.advance()

    step = search_step(world)
    assert step.output["dropped"] == {
        "excluded domain": 1,
        "outside the allowed domains": 1,
        "not a web address": 1,
    }
    assert step.summary.startswith("3 results; 3 dropped: ")
    assert set(step.output["dropped"]) <= set(CANDIDATE_DROPS)


def test_search_summary_names_each_reason_once() -> None:
    assert search_summary(8, {}) == "8 results"
    assert search_summary(1, {}) == "1 result"
    assert (
        search_summary(8, {"private address not allowed": 3})
        == "8 results; 3 dropped: private address not allowed"
    )
    assert (
        search_summary(8, {"excluded domain": 1, "private address not allowed": 3})
        == "8 results; 4 dropped: 3 private address not allowed, 1 excluded domain"
    )


def _budget(fetches: int) -> Budget:
    return budget_for("standard").model_copy(update={"fetched_sources": fetches})


def test_refused_fetches_leave_the_fetch_budget_untouched() -> None:
    errors = {
        INSEE: AcquisitionError("blocked", "The site asks for a subscription (paywall)."),
        PRESS: AcquisitionError("unsupported", "The page is an image, not text."),
    }
    world = build(errors=errors, budget=_budget(24))
    world.advance()

    reads = {s.payload["url"]: s for s in world.step_log("read") if "url" in s.payload}
    assert reads[INSEE].usage.fetched_sources == 0
    assert reads[PRESS].usage.fetched_sources == 0
    fetched = [s for s in world.store.sources.values() if s.status in ("fetched", "duplicate")]
    assert world.store.run.usage.fetched_sources == len(fetched)
    assert len(world.web.fetches) == len(fetched) + 2


def test_a_failed_read_costs_one_fetch_and_a_downloaded_unusable_page_costs_one() -> None:
    errors = {
        INSEE: AcquisitionError(
            "failed",
            "The site is down (HTTP 503). Fetching gave up after 3 attempts.",
            retryable=True,
        ),
        PRESS: AcquisitionError("unsupported", "The PDF is damaged.", counts_as_fetch=True),
    }
    world = build(errors=errors)
    world.advance()

    reads = {s.payload["url"]: s for s in world.step_log("read") if "url" in s.payload}
    assert reads[INSEE].usage.fetched_sources == 1
    assert reads[PRESS].usage.fetched_sources == 1
    assert world.store.run.usage.fetched_sources == len(world.web.fetches)
