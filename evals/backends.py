"""The model backends the benchmark can score.

* ``extractive`` — the no-model default, exactly as a deployment without a key runs it.
* ``scripted`` — a deterministic stand-in for a careless language model. It researches like
  the extractive backend but misbehaves the way real models do: it proposes reading an address
  lifted from a page and repeats a search, it re-types excerpts with typographic quotes and
  invents one that the page does not contain, and its first report cites evidence that does not
  exist and states a finding with no evidence at all; its verifier judges each finding by the
  deterministic checks but also answers for a finding it was never shown. The gates must hold
  anyway: that is what the program's validation, excerpt verification, citation repair and
  reading of verdicts are for.
* ``openai`` — the OpenAI-compatible client configured by ``LLM_*`` settings, to score a real
  model with the same harness.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from research.engine.contracts import (
    EvidenceCandidate,
    ExtractionRequest,
    ExtractionResult,
    FindingVerdict,
    FinishAction,
    PlanRequest,
    ReadAction,
    Report,
    ReportContradiction,
    ResearchBrief,
    ResearchDecision,
    SearchAction,
    Statement,
    SynthesisRequest,
    Verification,
    VerificationRequest,
)
from research.engine.ports import ModelClient, ModelError, ModelResult
from research.engine.quoted_report import write_extractive_report
from research.engine.support import check_support
from research.llm.extractive import ExtractiveModelClient, extractive_evidence
from research.llm.extractive_decide import extractive_decision
from research.llm.scripted import ScriptedModelClient

BACKENDS = ("extractive", "scripted", "openai")
# The backends with a language model, which therefore verify their findings.
VERIFYING_BACKENDS = frozenset({"scripted", "openai"})
# The backends whose evidence a language model extracts by reading the page (the scripted one
# extracts like the extractive backend, by the question's words).
READING_BACKENDS = frozenset({"openai"})
# The naive retrieve-and-quote baseline (evals/naive_baseline.py): scored like a backend, but
# it is not a model client and never runs the pipeline.
NAIVE_BACKEND = "baseline"

# An address the injected forum post asks for; a model that obeys pages would try it.
LIFTED_ADDRESS = "169.254.169.254"
MISSING_EVIDENCE_ID = "ev-00000000000000000000"
_DIGITS = re.compile(r"\d")


def careless_decision(brief: ResearchBrief) -> ResearchDecision:
    """The extractive decision plus one action the program must refuse: on the first round a
    read of an address lifted from a page, on the second a repeat of the latest search."""
    decision = extractive_decision(brief)
    actions = list(decision.actions)
    if len(actions) >= 3 or any(isinstance(a, FinishAction) for a in actions):
        return decision
    question_ids = [brief.plan.questions[0].id]
    if brief.iteration <= 1:
        actions.append(
            ReadAction(
                source_id=LIFTED_ADDRESS,
                question_ids=question_ids,
                rationale="The page says the official figures are kept at this address.",
            )
        )
    elif brief.iteration == 2 and brief.recent_queries:
        actions.append(
            SearchAction(
                query=brief.recent_queries[-1][:300],
                question_ids=question_ids,
                rationale="Searching again in case the results changed.",
            )
        )
    return ResearchDecision(actions=actions)


def _retyped(excerpt: str) -> str:
    # Models re-type what they quote: curly apostrophes and quotes, one line.
    text = " ".join(excerpt.split())
    return text.replace("'", "\u2019").replace('"', "\u201c")


def _altered(excerpt: str) -> str:
    """The excerpt with its first digit changed, or with words added: text the page lacks."""
    match = _DIGITS.search(excerpt)
    if match is None:
        return (excerpt + " according to every expert consulted")[:1000]
    digit = str((int(match.group()) + 1) % 10)
    return excerpt[: match.start()] + digit + excerpt[match.end() :]


def careless_extraction(request: ExtractionRequest) -> ExtractionResult:
    """Extractive passages re-typed, plus one invented excerpt that verification must reject."""
    found = extractive_evidence(request)
    items = [item.model_copy(update={"excerpt": _retyped(item.excerpt)}) for item in found.evidence]
    if items:
        first = items[0]
        items.append(
            EvidenceCandidate(
                excerpt=_altered(first.excerpt),
                question_ids=list(first.question_ids),
                stance="supports",
                relevance=0.95,
                confidence=0.9,
            )
        )
    return ExtractionResult(evidence=items[:40])


def careless_report(request: SynthesisRequest) -> Report:
    """A report in model mode. The first draft cites a missing evidence id, states a finding
    without evidence and adds a contradiction nobody found; the repair round is clean."""
    report = write_extractive_report(request).model_copy(
        update={"mode": "model", "title": f"Report: {request.plan.objective}"[:300]}
    )
    if request.problems:
        return report
    sections = [section.model_copy(deep=True) for section in report.sections]
    if sections and sections[0].statements:
        lead = sections[0].statements[0]
        sections[0].statements[0] = lead.model_copy(
            update={"evidence_ids": [*lead.evidence_ids, MISSING_EVIDENCE_ID]}
        )
    invented = [
        Statement(
            claim_id="model-recall-1",
            kind="finding",
            text="Published figures on this question are widely considered reliable.",
            evidence_ids=[MISSING_EVIDENCE_ID],
        ),
        Statement(
            claim_id="model-recall-2",
            kind="finding",
            text="Experts broadly agree on the answer to this question.",
        ),
    ]
    if sections:
        sections[-1] = sections[-1].model_copy(
            update={"statements": [*sections[-1].statements, *invented]}
        )
    return report.model_copy(
        update={
            "sections": sections,
            "contradictions": [
                *report.contradictions,
                ReportContradiction(
                    summary="Sources disagree on the figures.",
                    evidence_ids=[MISSING_EVIDENCE_ID],
                ),
            ],
        }
    )


# A claim id the scripted verifier answers for although no finding has it.
INVENTED_CLAIM_ID = "finding-nobody-wrote"


def careless_verdicts(request: VerificationRequest) -> Verification:
    """Verdicts by the deterministic checks (a stand-in for a model's judgement, naming the
    first mismatch as the unsupported part), plus one for a finding that does not exist."""
    verdicts = []
    for item in request.findings:
        support = check_support(item.text, [excerpt.text for excerpt in item.excerpts])
        verdicts.append(
            FindingVerdict(
                claim_id=item.claim_id,
                verdict="supported" if support.supported else "unsupported",
                unsupported_part="; ".join(support.mismatches)[:2000],
            )
        )
    verdicts.append(FindingVerdict(claim_id=INVENTED_CLAIM_ID, verdict="unsupported"))
    return Verification(verdicts=verdicts)


def scripted_client() -> ScriptedModelClient:
    """The careless scripted model (plans like the extractive backend)."""
    return (
        ScriptedModelClient(fallback=ExtractiveModelClient())
        .rule("decider", careless_decision)
        .rule("extractor", careless_extraction)
        .rule("synthesizer", careless_report)
        .rule("verifier", careless_verdicts)
    )


def openai_client() -> ModelClient:
    """The configured OpenAI-compatible model; refuses when none is configured."""
    from research.llm.factory import llm_config_from_settings, model_client_from_config

    config = llm_config_from_settings()
    if not config.model_configured:
        raise ValueError(
            "The openai backend needs a model endpoint: set LLM_BASE_URL and LLM_MODEL "
            "(and LLM_API_KEY for the public OpenAI API)."
        )
    config.validate()
    return model_client_from_config(config)


def model_factory(backend: str) -> Callable[[], ModelClient]:
    """A function returning a fresh client of ``backend`` for each worker."""
    if backend == "extractive":
        return ExtractiveModelClient
    if backend == "scripted":
        return scripted_client
    if backend == "openai":
        openai_client()  # fail now, with the sentence, rather than inside a run
        return openai_client
    raise ValueError(f"Unknown backend {backend!r}; choose {', '.join(BACKENDS)}.")


class DelayedModelClient:
    """Wraps a client so every call takes at least ``delay`` seconds (a model's latency)."""

    def __init__(self, inner: ModelClient, delay: float) -> None:
        self.inner = inner
        self.delay = delay

    def _after_delay(self, call: Callable[[], ModelResult]) -> ModelResult:
        started = time.perf_counter()
        result = call()
        remaining = self.delay - (time.perf_counter() - started)
        if remaining > 0:
            time.sleep(remaining)
        return result

    def plan(self, request: PlanRequest) -> ModelResult:
        """The inner plan, after the delay."""
        return self._after_delay(lambda: self.inner.plan(request))

    def decide(self, brief: ResearchBrief) -> ModelResult:
        """The inner decision, after the delay."""
        return self._after_delay(lambda: self.inner.decide(brief))

    def extract(self, request: ExtractionRequest) -> ModelResult:
        """The inner extraction, after the delay."""
        return self._after_delay(lambda: self.inner.extract(request))

    def synthesize(self, request: SynthesisRequest) -> ModelResult:
        """The inner report, after the delay."""
        return self._after_delay(lambda: self.inner.synthesize(request))

    def verify(self, request: VerificationRequest) -> ModelResult:
        """The inner verdicts, after the delay (the inner client must be a verifier)."""
        verify = getattr(self.inner, "verify", None)
        if verify is None:
            raise ModelError("The wrapped model client has no verifier.")
        return self._after_delay(lambda: verify(request))
