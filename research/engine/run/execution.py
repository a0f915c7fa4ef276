"""Execution: running search and read steps — search, fetch, substitute (extraction is in
:mod:`.extraction`)."""

from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, Literal

from research.engine import observe
from research.engine.contracts import (
    ReadAction,
    SearchCandidate,
    SourceDocument,
    SourceQuality,
    SourceRecord,
    StepRecord,
    Usage,
)
from research.engine.guards import BudgetRefused, action_dedupe_key, plan_fetch_waves
from research.engine.ledger import assign_independence_clusters, find_duplicate
from research.engine.ports import AcquisitionError, CandidateDrop, fetch_counted
from research.engine.quality import plan_subjects, with_first_party
from research.engine.run.context import GAP_KEY_PREFIX, Batch, Fetch, Halt, Phase, RunContext
from research.engine.run.progress import display_text
from research.engine.states import RunStatus
from research.engine.steps import StepPayload
from research.engine.urls import (
    UnsupportedURLError,
    canonical_url,
    evaluate_domain_policy,
    hostname,
    is_document_url,
    registrable_domain,
)

_S = RunStatus


def domain_of(url: str) -> str:
    if is_document_url(url):
        return "a library document"
    try:
        return hostname(url)
    except UnsupportedURLError:
        return "an unknown site"


def _site_of(url: str) -> str:
    try:
        return registrable_domain(hostname(url))
    except UnsupportedURLError:
        return url


class Execution(Phase):
    """Runs a batch of search and read steps on a small thread pool."""

    def _unfinished_batch(self, run: RunContext, *, also: Sequence[str] = ()) -> Batch:
        """Every search and read step that has not finished, in creation order: the steps
        of this iteration and any interrupted earlier (a pause, a crash). ``also`` names
        steps to run whatever their status (a cancelled step proposed again)."""
        batch = Batch()
        wanted = set(also)
        for step in self._store.list_steps(run.id):
            if step.status not in ("pending", "running") and step.id not in wanted:
                continue
            payload = StepPayload.of(step)
            if payload.refused:
                # A refusal interrupted before it was recorded as skipped.
                self._store.finish_step(step.id, status="skipped", summary="Refused")
                continue
            if step.kind == "search":
                batch.searches.append(step)
                fingerprint = payload.fingerprint
                if fingerprint and fingerprint not in run.state.query_fingerprints:
                    run.state = run.state.model_copy(
                        update={"query_fingerprints": [*run.state.query_fingerprints, fingerprint]}
                    )
            elif step.kind == "read":
                batch.add_read(step)
        return batch

    def _run_batch(self, run: RunContext, batch: Batch) -> Halt | None:
        """Run searches (at most two at once) and reads (at most three fetches at once, one
        per site) round by round, committing each round in proposal order. Pause and cancel
        are checked between rounds; steps not started stay pending for the resume."""
        if not batch.searches and not batch.reads:
            return None
        workers = self._max_searches + self._max_fetches + self._max_extractions
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="research") as pool:
            first = True
            while batch.searches or batch.reads:
                if not first:
                    self._store.heartbeat(run.id)
                    control = self._pending_control(run.id)
                    if control is not None:
                        return control
                first = False
                searches = batch.searches[: self._max_searches]
                del batch.searches[: self._max_searches]
                wave = self._next_wave(batch)
                started = [
                    job
                    for job in (self._start_search(run, step, pool) for step in searches)
                    if job is not None
                ]
                fetches = [
                    job
                    for job in (self._start_read(run, step, pool) for step in wave)
                    if job is not None
                ]
                for step, future in started:
                    self._finish_search(run, batch, step, future)
                readable = [
                    job for job in fetches if self._finish_fetch(run, batch, job) is not None
                ]
                self._extract_all(run, batch, pool, readable)
                self._checkpoint(run)
                self._emit_counts(run)
        return None

    def _next_wave(self, batch: Batch) -> list[StepRecord]:
        if not batch.reads:
            return []
        waves = plan_fetch_waves(batch.reads, lambda step: StepPayload.of(step).url)
        wave = waves[0][: self._max_fetches]
        chosen = {step.id for step in wave}
        batch.reads = [step for step in batch.reads if step.id not in chosen]
        return wave

    def _start_search(
        self, run: RunContext, step: StepRecord, pool: ThreadPoolExecutor
    ) -> "tuple[StepRecord, Future[list[SearchCandidate]]] | None":
        query = StepPayload.of(step).query
        try:
            self._meter.reserve_logical(run, step.dedupe_key, Usage(searches=1))
            self._meter.check_time(run, step.dedupe_key)
        except BudgetRefused as refusal:
            self._skip(run, step, refusal.reason)
            return None
        step = self._store.start_step(step.id)
        self._meter.count_retry(run.ledger, step)
        self._progress.phase(
            run.id, "searching", _S.RESEARCHING, f"Searching “{display_text(query, 120)}”"
        )
        self._progress.step_started(
            run.id, step.id, "search", f"Searching “{display_text(query, 120)}”"
        )
        future = pool.submit(
            observe.carry_context(self._sources.discover),
            query,
            policy=run.policy,
            limit=self._search_results,
        )
        return step, future

    def _finish_search(
        self,
        run: RunContext,
        batch: Batch,
        step: StepRecord,
        future: "Future[list[SearchCandidate]]",
    ) -> None:
        usage = Usage(searches=1)
        payload = StepPayload.of(step)
        follow_up = payload.follow_up
        try:
            candidates = future.result()
        except AcquisitionError as error:
            run.ledger.settle(step.dedupe_key, usage)
            batch.systemic_failures += 1
            reason = display_text(error.reason, 300)
            self._store.finish_step(
                step.id, status="failed", usage=usage, summary="The search failed", error=reason
            )
            self._progress.step_finished(
                run.id, step.id, "search", "failed", f"The search failed: {reason}"
            )
            self._mark_followed_up(run, follow_up)
            return
        usable, dropped = self._screen_candidates(run, candidates)
        run.ledger.settle(step.dedupe_key, usage)
        summary = search_summary(len(candidates), dropped)
        records = self._store.record_candidates(
            run.id,
            step_id=step.id,
            candidates=usable,
            summary=summary,
            usage=usage,
            output={"results": len(candidates), "kept": len(usable), "dropped": dict(dropped)},
        )
        batch.successes += 1
        for record in records:
            if record.status == "candidate":
                self._progress.source_updated(run.id, record, f"Found {record.domain}")
        self._progress.step_finished(run.id, step.id, "search", "succeeded", f"Found {summary}")
        self._mark_followed_up(run, follow_up)
        if follow_up and payload.program:
            self._queue_follow_up_read(run, batch, step, records)

    def _screen_candidates(
        self, run: RunContext, candidates: Sequence[SearchCandidate]
    ) -> tuple[list[SearchCandidate], dict[CandidateDrop, int]]:
        """Keep the results the source adapter would fetch; count the others by reason.

        Whether a URL may be fetched is the adapter's decision (it knows the operator's
        allow-list); the engine only insists on an address it can store."""
        usable: list[SearchCandidate] = []
        dropped: dict[CandidateDrop, int] = {}
        for candidate in candidates:
            reason: CandidateDrop | None
            try:
                if not is_document_url(candidate.url):
                    canonical_url(candidate.url)
            except UnsupportedURLError:
                reason = "not a web address"
            else:
                reason = self._sources.screen(candidate.url, policy=run.policy)
            if reason is None:
                usable.append(candidate)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        return usable, dropped

    def _mark_followed_up(self, run: RunContext, key: object) -> None:
        if isinstance(key, str) and key and key not in run.state.followed_up_contradictions:
            run.state = run.state.model_copy(
                update={"followed_up_contradictions": [*run.state.followed_up_contradictions, key]}
            )

    def _queue_follow_up_read(
        self, run: RunContext, batch: Batch, search: StepRecord, records: Sequence[SourceRecord]
    ) -> None:
        """Read the best new result of a program follow-up search in the same iteration."""
        payload = StepPayload.of(search)
        question_ids = list(payload.question_ids)
        for record in records:
            if record.status != "candidate" or record.id in batch.queued_sources:
                continue
            if not evaluate_domain_policy(record.url, run.policy).allowed:
                continue
            step = self._program_read(
                run,
                record,
                question_ids,
                rationale=(
                    f"Reading a new source the finish gate may accept for {', '.join(question_ids)}."
                    if str(payload.follow_up).startswith(GAP_KEY_PREFIX)
                    else "Reading a new source about the conflicting evidence for "
                    f"{', '.join(question_ids)}."
                ),
                extra={"follow_up": payload.follow_up},
            )
            if step is not None:
                batch.add_read(step)
            return

    def _program_read(
        self,
        run: RunContext,
        source: SourceRecord,
        question_ids: list[str],
        *,
        rationale: str,
        extra: dict[str, Any],
    ) -> StepRecord | None:
        known = set(run.plan.question_ids)
        question_ids = [qid for qid in question_ids if qid in known] or run.plan.question_ids[:1]
        action = ReadAction(source_id=source.id, question_ids=question_ids, rationale=rationale)
        key = action_dedupe_key(run.id, action, iteration=run.state.iteration)
        try:
            max_bytes = self._meter.reserve_read(run, key)
        except BudgetRefused:
            return None
        step = self._store.begin_step(
            run.id,
            kind="read",
            dedupe_key=key,
            rationale=rationale,
            payload=StepPayload(
                source_id=source.id,
                question_ids=question_ids,
                url=source.url,
                max_bytes=max_bytes,
                program=True,
                **extra,
            ),
            iteration=run.state.iteration,
        )
        if step.status not in ("pending", "running"):
            run.ledger.release(key)
            return None
        return step

    def _start_read(
        self, run: RunContext, step: StepRecord, pool: ThreadPoolExecutor
    ) -> Fetch | None:
        source_id = StepPayload.of(step).source_id
        source = self._store.get_source(run.id, source_id)
        if source is None:
            self._skip(run, step, f"There is no source {source_id} in this run.")
            return None
        if source.status == "candidate":
            try:
                max_bytes = self._meter.reserve_read(run, step.dedupe_key)
                self._meter.check_time(run, step.dedupe_key)
            except BudgetRefused as refusal:
                self._skip(run, step, refusal.reason)
                return None
        else:
            max_bytes = run.ledger.budget.bytes_per_source
        step = self._store.start_step(step.id)
        self._meter.count_retry(run.ledger, step)
        domain = source.domain or domain_of(source.url)
        self._progress.phase(run.id, "reading_source", _S.RESEARCHING, f"Reading {domain}")
        self._progress.step_started(run.id, step.id, "read", f"Reading {domain}")
        job = Fetch(step=step, source=source, max_bytes=max_bytes)
        if source.status == "candidate":
            job.future = pool.submit(
                observe.carry_context(self._sources.acquire),
                source.url,
                policy=run.policy,
                max_bytes=max_bytes,
                work=source.scholarly,
            )
            return job
        # The source was acquired (or refused) before an interruption: its outcome is stored,
        # so it is counted once and never fetched again (a refusal is not counted at all).
        document = self._store.load_snapshot(run.id, source.id)
        counted = source.status in ("fetched", "duplicate") or fetch_counted(source.status)
        job.usage = Usage(
            fetched_sources=1 if counted else 0,
            bytes_fetched=document.content_bytes if document else 0,
        )
        run.ledger.settle(step.dedupe_key, job.usage)
        if source.status == "fetched" and document is not None:
            job.document = document
            return job
        if source.status == "duplicate":
            self._finish_read(run, job, "succeeded", f"{domain} was already stored as a duplicate")
        else:
            self._finish_read(
                run,
                job,
                "failed",
                f"Could not read {domain}",
                error=source.status_reason or "The source could not be read.",
            )
        return None

    def _finish_fetch(self, run: RunContext, batch: Batch, job: Fetch) -> Fetch | None:
        """Commit one fetch: failure (and a substitute source), duplicate, or a snapshot to
        extract evidence from. Returns the job when evidence should be extracted."""
        if job.document is not None:
            return job
        assert job.future is not None
        source = job.source
        domain = source.domain or domain_of(source.url)
        try:
            document = job.future.result()
            if document.content_bytes > job.max_bytes:
                # An adapter must cut pages to max_bytes; one that does not cannot break the
                # run's byte budget either.
                raise AcquisitionError(
                    "unsupported", "The page is larger than the per-source size limit."
                )
        except AcquisitionError as error:
            # A refusal (address, policy, access gate, unreadable type) fetched nothing and
            # leaves the fetch budget alone; a failed read costs one fetch, retries included.
            job.usage = Usage(fetched_sources=1 if error.counts_as_fetch else 0)
            run.ledger.settle(job.step.dedupe_key, job.usage)
            reason = display_text(error.reason, 300)
            record = self._store.record_failure(run.id, source.id, kind=error.kind, reason=reason)
            self._progress.source_updated(run.id, record, f"Could not read {domain}: {reason}")
            if error.kind == "failed" and error.retryable:
                batch.systemic_failures += 1
            self._finish_read(run, job, "failed", f"Could not read {domain}", error=reason)
            self._substitute(run, batch, job)
            return None
        sources = self._store.list_sources(run.id)
        duplicate = find_duplicate(document, sources, source_id=source.id)
        quality = self._quality(run, document, source, sources, duplicate_of=duplicate)
        record = self._store.record_acquisition(
            run.id,
            source.id,
            document=document,
            quality=quality,
            duplicate_of=duplicate.source_id if duplicate else None,
        )
        job.usage = Usage(fetched_sources=1, bytes_fetched=document.content_bytes)
        run.ledger.settle(job.step.dedupe_key, job.usage)
        batch.successes += 1
        self._progress.source_updated(run.id, record, f"Read {domain}")
        if duplicate is not None:
            how = "the same address" if duplicate.reason == "canonical_url" else "the same text"
            self._finish_read(
                run,
                job,
                "succeeded",
                f"{domain} has {how} as source {duplicate.source_id}; kept as a duplicate",
            )
            return None
        job.document = document
        return job

    def _quality(
        self,
        run: RunContext,
        document: SourceDocument,
        source: SourceRecord,
        sources: Sequence[SourceRecord],
        *,
        duplicate_of: object,
    ) -> SourceQuality:
        quality = with_first_party(document, self._classify(document), plan_subjects(run.plan))
        provisional = source.model_copy(
            update={
                "status": "duplicate" if duplicate_of else "fetched",
                "content_hash": document.content_hash,
                "publisher": document.publisher,
                "declared_canonical_url": document.declared_canonical_url,
                "duplicate_of": getattr(duplicate_of, "source_id", None),
            }
        )
        others = [s for s in sources if s.id != source.id and s.status in ("fetched", "duplicate")]
        clusters = assign_independence_clusters([*others, provisional])
        return quality.model_copy(update={"independence_cluster": clusters[source.id]})

    def _substitute(self, run: RunContext, batch: Batch, job: Fetch) -> None:
        """After a failed read, read the next best unread candidate from another site."""
        payload = StepPayload.of(job.step)
        if payload.substitute_for:
            return  # one substitution per proposed read keeps a bad site list bounded
        failed_site = _site_of(job.source.url)
        question_ids = list(payload.question_ids)
        options: list[tuple[bool, int, SourceRecord]] = []
        for position, source in enumerate(self._store.list_sources(run.id)):
            if source.status != "candidate" or source.id in batch.queued_sources:
                continue
            if _site_of(source.url) == failed_site:
                continue
            decision = evaluate_domain_policy(source.url, run.policy)
            if decision.allowed:
                options.append((not decision.preferred, position, source))
        if not options:
            return
        replacement = min(options, key=lambda option: option[:2])[2]
        domain = job.source.domain or domain_of(job.source.url)
        step = self._program_read(
            run,
            replacement,
            question_ids,
            rationale=f"Trying another source because {domain} could not be read.",
            extra={"substitute_for": job.source.id},
        )
        if step is not None:
            batch.add_read(step)

    def _finish_read(
        self,
        run: RunContext,
        job: Fetch,
        status: Literal["succeeded", "failed"],
        summary: str,
        *,
        error: str = "",
    ) -> None:
        self._store.finish_step(
            job.step.id,
            status=status,
            summary=display_text(summary, 300),
            usage=job.usage,
            error=error,
        )
        self._progress.step_finished(run.id, job.step.id, "read", status, summary)

    def _skip(self, run: RunContext, step: StepRecord, reason: str) -> None:
        self._store.finish_step(
            step.id, status="skipped", summary=display_text(f"Not done: {reason}", 300)
        )
        self._progress.step_finished(run.id, step.id, step.kind, "skipped", f"Skipped: {reason}")


def search_summary(results: int, dropped: Mapping[str, int]) -> str:
    """The summary of a search step: how many results came back and, when some were not kept,
    how many were dropped and why ("8 results; 3 dropped: private address not allowed")."""
    noun = "result" if results == 1 else "results"
    total = sum(dropped.values())
    if not total:
        return f"{results} {noun}"
    if len(dropped) == 1:
        reasons = next(iter(dropped))
    else:
        ranked = sorted(dropped.items(), key=lambda item: (-item[1], item[0]))
        reasons = ", ".join(f"{count} {reason}" for reason, count in ranked)
    return f"{results} {noun}; {total} dropped: {reasons}"
