"""Extraction: evidence from fetched snapshots, by bounded parallel model calls, verified
against the stored snapshot before anything is stored."""

import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

from research.engine.contracts import ExtractionRequest
from research.engine.guards import BudgetRefused
from research.engine.ledger import clip_blocks, verify_candidates
from research.engine.ports import ModelError
from research.engine.run.context import Batch, Fetch, Phase, RunContext
from research.engine.run.execution import domain_of
from research.engine.run.metering import MIN_EXTRACTION_CHARS, OUTPUT_TOKEN_CAPS
from research.engine.run.progress import display_text
from research.engine.states import RunStatus

_S = RunStatus


class Extraction(Phase):
    """Extracts and verifies evidence from the snapshots a batch fetched."""

    def _extract_all(
        self, run: RunContext, batch: Batch, pool: ThreadPoolExecutor, jobs: list[Fetch]
    ) -> None:
        """Extract evidence from fetched snapshots (bounded parallel model calls), verify
        every excerpt against its snapshot and store what holds up."""
        pending = list(jobs)
        while pending:
            calls: list[tuple[Fetch, str, Future[Any], ExtractionRequest]] = []
            deferred: list[Fetch] = []
            for job in pending:
                if len(calls) >= self._max_extractions:
                    deferred.append(job)
                    continue
                domain = job.source.domain or domain_of(job.source.url)
                try:
                    request, key = self._extraction_request(run, job)
                except BudgetRefused as refusal:
                    if calls:
                        # The calls already running hold budget they may not use up: try
                        # again once they have settled.
                        deferred.append(job)
                        continue
                    self._finish_read(
                        run,
                        job,
                        "failed",
                        f"Read {domain} but could not extract evidence",
                        error=f"Not enough budget to extract evidence: {refusal.reason}",
                    )
                    continue
                self._progress.phase(
                    run.id,
                    "extracting_evidence",
                    _S.RESEARCHING,
                    f"Extracting evidence from {domain}",
                )
                extract = self._meter.traced("extract", self._model.extract)
                calls.append((job, key, pool.submit(extract, request), request))
            for job, key, future, request in calls:
                self._finish_extraction(run, batch, job, key, future, request)
            pending = deferred

    def _extraction_request(self, run: RunContext, job: Fetch) -> tuple[ExtractionRequest, str]:
        assert job.document is not None
        document = job.document
        text = document.text
        key = f"{job.step.dedupe_key}#extract#{uuid.uuid4().hex[:12]}"
        while True:
            request = ExtractionRequest(
                source_id=job.source.id,
                title=display_text(document.title, 300),
                kind=document.kind,
                text=text,
                blocks=clip_blocks(document.blocks, len(text)),
                questions=run.plan.questions,
                max_items=self._extraction_max_items,
                max_output_tokens=OUTPUT_TOKEN_CAPS["extract"],
            )
            # The block map steers the extractive backend; a model is sent only the text.
            sent = request.model_dump_json(exclude={"blocks"})
            try:
                run.ledger.reserve(key, self._meter.allowance(sent, "extract"))
                return request, key
            except BudgetRefused as refusal:
                # A long page is cut to what the token budget allows rather than skipped;
                # excerpts are still verified against the whole stored snapshot.
                if refusal.counter != "input_tokens" or len(text) <= MIN_EXTRACTION_CHARS:
                    raise
                text = text[: max(MIN_EXTRACTION_CHARS, len(text) // 2)]

    def _finish_extraction(
        self,
        run: RunContext,
        batch: Batch,
        job: Fetch,
        key: str,
        future: "Future[Any]",
        request: ExtractionRequest,
    ) -> None:
        assert job.document is not None
        domain = job.source.domain or domain_of(job.source.url)
        try:
            result = self._meter.collect(run.ledger, key, future, kind="extract")
        except ModelError as error:
            job.usage = job.usage + error.usage
            if error.retryable:
                batch.systemic_failures += 1
            self._finish_read(
                run,
                job,
                "failed",
                f"Read {domain} but could not extract evidence",
                error=display_text(f"Evidence could not be extracted: {error.reason}", 500),
            )
            return
        job.usage = job.usage + result.usage
        known = {item.evidence_hash for item in self._store.list_evidence(run.id)}
        outcome = verify_candidates(
            result.value.evidence,
            run_id=run.id,
            source_id=job.source.id,
            document=job.document,
            question_ids=set(run.plan.question_ids),
            known_hashes=known,
        )
        added = self._store.add_evidence(run.id, step_id=job.step.id, evidence=outcome.evidence)
        run.state = run.state.model_copy(
            update={"rejected_excerpts": run.state.rejected_excerpts + outcome.rejected_count}
        )
        batch.successes += 1
        summary = f"{len(added)} verified excerpts from {domain}"
        if outcome.rejected_count:
            summary += f"; {outcome.rejected_count} proposed excerpts were not in the page"
        if len(request.text) < len(job.document.text):
            summary += " (the page was read in part to stay within the token budget)"
        self._finish_read(run, job, "succeeded", summary)
