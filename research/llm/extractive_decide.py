"""The extractive backend's decider: which searches to make and which results to read.

For each question still lacking evidence (most urgent first, mirroring the engine's finish
gate) :func:`extractive_decision` reads the best unread search results by relevance and rank,
preferring sites not yet used for a question that needs corroboration, or searches with a
wording not yet tried (:mod:`research.llm.search_queries`, :mod:`research.llm.feedback`); it
finishes when nothing useful remains. Deterministic; no model.
"""

import re
from dataclasses import dataclass

from research.engine.contracts import (
    CandidateSummary,
    FinishAction,
    PlanQuestion,
    QuestionCoverage,
    ReadAction,
    ResearchBrief,
    ResearchDecision,
    ResearchPlan,
    SearchAction,
    Usage,
)
from research.engine.guards import BUDGET_PRESETS, fingerprint_query, reciprocal_rank
from research.engine.question_terms import TermWeights, answer_type_terms, question_terms
from research.engine.text import content_terms, keywords
from research.llm.feedback import feedback_query
from research.llm.search_queries import search_queries
from research.llm.wording import clip

MAX_ACTIONS = 3
MAX_SEARCHES_PER_DECISION = 2
READ_THRESHOLD = 0.3
CORROBORATION_READ_THRESHOLD = 0.15
_PREFERRED_BONUS = 0.05
# A result one of the searches placed this high is worth reading on the search engine's word
# when its title, snippet or address shares the question's focus, even if they name few of the
# question's other terms: the naive baseline that reads each search's top five cites the page
# holding the answer more often than a decider trusting titles alone. Four places, not the
# baseline's five: read on the engine's word, the fifth added 7% of the pages read and no
# answer and no gold page on the tune or the held-out set (docs/llm.md, "Decider").
ENGINE_TOP_PLACES = 4
# Share of the run's fetch budget that reading for breadth may use before finishing. Reading
# for breadth starts only once every question meets the finish gate, so what it leaves is a
# reserve for questions a plan refinement adds: 0.7 leaves three of the quick preset's ten
# fetches, one decision's reads (MAX_ACTIONS). Measured on the documentation tasks of
# evals/tasks/tune (issue 14): at half, runs finished after five of ten fetches with the
# page holding the answer among the unread results in four tasks; at 0.7 the gold-page rate
# rose from 73% to 83%, recall from 43% to 47%, with no more runs ending budget_exhausted.
# Until that share is used, every covered required question keeps reading strong or
# top-ranked matches (``_breadth``).
BREADTH_SHARE = 0.7


@dataclass(frozen=True)
class _Need:
    question: PlanQuestion
    # 0 no evidence, 1 needs corroboration, 2 supporting without evidence, 3 covered by one
    # page only (see _second_pages)
    urgency: int
    evidence_count: int


def _needs(plan: ResearchPlan, coverage: dict[str, QuestionCoverage]) -> list[_Need]:
    """Questions that still need work, most urgent first (mirrors the engine's finish gate)."""
    required = set(plan.required_question_ids)
    needs = []
    for order, question in enumerate(plan.questions):
        item = coverage.get(question.id)
        count = item.evidence_count if item else 0
        if question.id in required:
            if item is None or not item.covered:
                needs.append((0, count, order, _Need(question, 0, count)))
            elif (question.requires_primary and not item.has_primary) or (
                not item.has_primary and len(item.clusters) < 2
            ):
                needs.append((1, count, order, _Need(question, 1, count)))
        elif item is None or not item.covered:
            needs.append((2, count, order, _Need(question, 2, count)))
    return [need for *_, need in sorted(needs, key=lambda entry: entry[:3])]


def _breadth(
    plan: ResearchPlan, coverage: dict[str, QuestionCoverage], *, fetch_budget: int, used: int
) -> list[_Need]:
    """Required questions the gate counts as covered, while the run has used less than
    ``BREADTH_SHARE`` of its fetch budget.

    A first-party page meets the finish gate on its own, but documentation spreads an answer
    over pages (a guide and the reference it links to); the naive read-the-top-five baseline
    cites the page holding the answer more often than one read does. Such a question takes
    more reads — only of strong or top-ranked matches, never another search — so reading for
    breadth ends when those run out, and is bounded by the budget share either way.
    """
    if used >= BREADTH_SHARE * fetch_budget:
        return []
    # Every covered required question reads on, not only one resting on fewer pages than its
    # share of the budget: two questions answered by the same pages had stopped at five reads
    # of ten, with the page holding the answer among the unread top results.
    needs = []
    for question in plan.questions:
        item = coverage.get(question.id)
        if question.id in plan.required_question_ids and item:
            needs.append(_Need(question, 3, item.evidence_count))
    return needs


def _unlimited(remaining: Usage) -> bool:
    # A brief without a remaining budget (all zero) means the caller did not fill it in;
    # the engine stops research itself when a hard budget is really exhausted.
    return not any(
        (remaining.searches, remaining.fetched_sources, remaining.model_calls, remaining.iterations)
    )


def _path_words(path: str) -> str:
    """The words of an address path ("/docs/git-bisect.html" → "docs git bisect"), without
    the file type."""
    return " ".join(re.split(r"[^A-Za-z0-9]+", re.sub(r"\.[A-Za-z0-9]{1,5}$", "", path)))


class _CandidateRanker:
    """Scores unread search results against questions: term coverage of title, snippet and
    the address path's words, with a small bonus for preferred domains; and orders them by
    reciprocal-rank fusion of that score's ranking with the ranks the searches gave them."""

    def __init__(self, candidates: list[CandidateSummary]) -> None:
        self.terms = {
            c.source_id: frozenset(
                content_terms(f"{c.title} {c.snippet} {c.domain} {_path_words(c.path)}")
            )
            for c in candidates
        }
        self.weights = TermWeights(self.terms.values())
        self.rank = {c.source_id: place for place, c in enumerate(candidates)}
        self.search_ranks = {c.source_id: c.search_ranks for c in candidates}
        self._questions: dict[str, tuple[dict[str, float], set[str]]] = {}

    def top_ranked(self, candidate: CandidateSummary) -> bool:
        """Whether a search placed ``candidate`` among its ``ENGINE_TOP_PLACES`` best (never
        when the brief does not say how the searches ranked it)."""
        return min(self.search_ranks[candidate.source_id], default=0) in range(
            1, ENGINE_TOP_PLACES + 1
        )

    def fused(self, values: dict[str, float]) -> dict[str, float]:
        """Reciprocal-rank fusion of the term scores ``values`` (source id → score, ranked
        best first) with the best rank any search gave each source: a page the searches rank
        high and whose title matches beats one that does only one of the two. The best rank,
        not the sum over searches: the searches are made for different questions, so a page
        two of them return (a general page a second question's search also found) is not for
        that more relevant to the question reading it; a sum let such a page, fifth and
        second, outrank the first result of the question's own search. A brief that does not
        say how the searches ranked a result lists it in discovery order, which is each
        search's order for the results it found first, so that place stands in."""
        order = sorted(values, key=lambda source_id: (-values[source_id], self.rank[source_id]))
        return {
            source_id: reciprocal_rank([place])
            + reciprocal_rank([min(self.search_ranks[source_id] or [self.rank[source_id] + 1])])
            for place, source_id in enumerate(order, start=1)
        }

    def _terms_of(self, text: str) -> tuple[dict[str, float], set[str]]:
        """A question's terms and focus, without the words naming the kind of answer ("which
        date", "how long"): they say nothing about whether a title is on topic.

        Without the general-English discount (``background=False``): the results were
        returned for searches worded from the question, so its common words stand in many
        of them and the results' own idf already discounts them, unlike a page's passages,
        where a common word the page seldom uses looks rare (docs/llm.md, "Term
        specificity")."""
        if text not in self._questions:
            query, focus = question_terms(text, background=False)
            for term in answer_type_terms(text):
                query.pop(term, None)
            self._questions[text] = (query, focus)
        return self._questions[text]

    def score(
        self, question: PlanQuestion, candidate: CandidateSummary, *, need_focus: bool = True
    ) -> float:
        """How well ``candidate`` matches ``question``; 0 when it misses the question's focus
        (unless ``need_focus`` is false)."""
        query, focus = self._terms_of(question.text)
        terms = self.terms[candidate.source_id]
        misses_focus = bool(focus) and not focus & terms
        if not query or (need_focus and misses_focus):
            return 0.0
        value = self.weights.coverage(query, terms)
        if candidate.preferred:
            value += _PREFERRED_BONUS
        return value


def extractive_decision(brief: ResearchBrief) -> ResearchDecision:
    """Up to three actions: read the best unread result for each question still lacking
    evidence, or search for it with a query not yet tried; finish when nothing useful remains."""
    plan = brief.plan
    coverage = {item.question_id: item for item in brief.coverage}
    remaining = brief.remaining
    unlimited = _unlimited(remaining)
    # Pages the run has spent fetches on: read ones are in the brief as candidates, failed
    # ones as failed sources; with what remains they give the run's fetch budget. A brief
    # without a remaining budget is read as the standard preset's.
    used = sum(1 for c in brief.candidates if c.status != "candidate") + len(brief.failed_sources)
    fetch_budget = (
        BUDGET_PRESETS["standard"].fetched_sources
        if unlimited
        else used + remaining.fetched_sources
    )
    needs = _needs(plan, coverage) or _breadth(plan, coverage, fetch_budget=fetch_budget, used=used)
    if not needs:
        return ResearchDecision(
            actions=[FinishAction(rationale="Every question has the evidence the plan asks for.")]
        )
    searches_left = (
        MAX_SEARCHES_PER_DECISION
        if unlimited
        else min(MAX_SEARCHES_PER_DECISION, remaining.searches)
    )
    reads_left = MAX_ACTIONS if unlimited else min(MAX_ACTIONS, remaining.fetched_sources)

    unread = [c for c in brief.candidates if c.status == "candidate"]
    domains = {c.source_id: c.domain for c in brief.candidates}
    ranker = _CandidateRanker(brief.candidates)
    made = [fingerprint_query(query) for query in brief.recent_queries]
    tried = {fingerprint.key for fingerprint in made}
    tried_before = set(tried)
    # What the searches so far returned, for the second search's variant spellings
    # (:mod:`research.llm.feedback`); a read page's title is not in the brief.
    result_texts = [f"{c.title} {c.snippet} {_path_words(c.path)}" for c in unread]
    actions: list[SearchAction | ReadAction | FinishAction] = []
    chosen_sources: set[str] = set()
    chosen_domains: set[str] = set()

    def best_read(need: _Need) -> tuple[CandidateSummary, list[str], float] | None:
        question = need.question
        used_domains = {
            domains.get(source_id, "")
            for source_id in (coverage[question.id].source_ids if question.id in coverage else [])
        }
        eligible: dict[str, float] = {}
        for candidate in unread:
            if candidate.source_id in chosen_sources:
                continue
            # A question that has evidence but needs corroboration accepts a weaker match:
            # the decider cannot see page text, and a second site is what the gate asks for.
            # So does a question with no evidence once it has been searched, and its
            # candidates need not name what it asks: a reference page's title is short
            # ("Widget", "Pool settings") and a long question's terms dilute coverage,
            # so a title rarely reaches READ_THRESHOLD. Reading the best weak match (and
            # searching again beside it) beats searching until the budget runs out unread;
            # once its searches are used up, any candidate sharing a term will do.
            last_resort = need.urgency == 0 and need.question.id in searched
            value = ranker.score(question, candidate, need_focus=not last_resort)
            weak_ok = need.urgency == 1 or last_resort
            threshold = CORROBORATION_READ_THRESHOLD if weak_ok else READ_THRESHOLD
            if last_resort and question.id in searched_out:
                threshold = 0.0  # nothing left to search: the best match that shares a term
            strong = value >= threshold and (threshold > 0.0 or value > 0.0)
            # A search's top result sharing a term with the question is read on the search
            # engine's word (ENGINE_TOP_PLACES): the engine saw the page's text, the decider
            # sees a title, and a reference page's title rarely names the question's focus.
            top = ranker.top_ranked(candidate)
            if strong or (top and ranker.score(question, candidate, need_focus=False) > 0):
                eligible[candidate.source_id] = value
        if not eligible:
            return None
        fused = ranker.fused(eligible)
        options = []
        for candidate in unread:
            if candidate.source_id not in eligible:
                continue
            # A second source from a site already backing the question adds no independent
            # corroboration: a question that needs one prefers new sites, then the better
            # fused rank. Other questions take the better fused rank wherever it is, because
            # an answer's home site (a project's own documentation) holds its other pages too.
            fresh = need.urgency != 1 or (
                candidate.domain not in used_domains and candidate.domain not in chosen_domains
            )
            # Ties go to the earlier search result: source ids are random, discovery order is not.
            place = ranker.rank[candidate.source_id]
            options.append((not fresh, -fused[candidate.source_id], place, candidate))
        best = min(options)
        candidate = best[3]
        value = eligible[candidate.source_id]
        also = [
            other.question.id
            for other in needs
            if other.question.id != question.id
            and ranker.score(other.question, candidate) >= READ_THRESHOLD
        ]
        return candidate, [question.id, *also], value

    def wordings(question: PlanQuestion) -> list[str]:
        return search_queries(
            question.text, objective=plan.objective, requires_primary=question.requires_primary
        )

    def _first_query_tried(question: PlanQuestion) -> bool:
        queries = wordings(question)
        return bool(queries) and fingerprint_query(queries[0]).key in tried

    def next_query(need: _Need) -> str | None:
        queries = wordings(need.question)
        if need.urgency == 3:
            return None  # the gate is met: a second page is read only if one was found
        if need.urgency == 2:
            queries = queries[:1]  # supporting questions get one try, not the budget
        if len(queries) > 1 and fingerprint_query(queries[0]).key in tried:
            if fingerprint_query(queries[0]).key not in tried_before:
                return None  # the second search waits for the first one's results
            if feedback_used(queries):
                queries = [queries[0], *queries[2:]]
            else:
                queries[1] = feedback_query(queries[1], keywords(queries[0]), result_texts)
        for query in queries:
            key = fingerprint_query(query).key
            if key not in tried:
                return query
        return None

    def feedback_due(need: _Need) -> bool:
        queries = wordings(need.question)
        return (
            need.urgency == 0
            and len(queries) > 1
            and fingerprint_query(queries[0]).key in tried_before
            and not feedback_used(queries)
        )

    def feedback_used(queries: list[str]) -> bool:
        """Whether the second search was made: it is the second wording with the variant
        spellings the results showed, so a search asking all the second wording's terms that
        is not another of the wordings is it."""
        second = set(fingerprint_query(queries[1]).terms)
        others = {fingerprint_query(query).key for query in (queries[0], *queries[2:])}
        return any(
            second <= set(fingerprint.terms) and fingerprint.key not in others
            for fingerprint in made
        )

    # Questions whose searches were all made before this decision (a search proposed now may
    # still bring better results, so it does not count), and those searched at least once.
    searched_out = {need.question.id for need in needs if next_query(need) is None}
    searched = {need.question.id for need in needs if _first_query_tried(need.question)}
    for _ in range(MAX_ACTIONS):
        progressed = False
        for need in needs:
            if len(actions) >= MAX_ACTIONS:
                break
            question = need.question
            found = best_read(need) if reads_left > 0 else None
            if found is not None:
                candidate, question_ids, value = found
                actions.append(
                    ReadAction(
                        source_id=candidate.source_id,
                        question_ids=question_ids,
                        # The page title is the page's to choose, so progress names the site.
                        rationale=clip(
                            f"Reading source {candidate.source_id}"
                            f"{f' ({candidate.domain})' if candidate.domain else ''} "
                            f"for {question.id}: {question.text}",
                            400,
                        ),
                    )
                )
                chosen_sources.add(candidate.source_id)
                chosen_domains.add(candidate.domain)
                reads_left -= 1
                progressed = True
                # A strong match is read without searching again, except that a question
                # still without evidence always gets its second search once the first one's
                # results are in: the first results are what it is worded from.
                if len(actions) >= MAX_ACTIONS or (
                    value >= READ_THRESHOLD and not feedback_due(need)
                ):
                    continue
            query = next_query(need) if searches_left > 0 else None
            if query is not None:
                made.append(fingerprint_query(query))
                tried.add(made[-1].key)
                reason = (
                    "has no verified evidence yet"
                    if need.urgency != 1
                    else "needs a second independent or an official source"
                )
                actions.append(
                    SearchAction(
                        query=query,
                        question_ids=[question.id],
                        rationale=clip(f"Searching because {question.id} {reason}.", 400),
                    )
                )
                searches_left -= 1
                progressed = True
        if not progressed or len(actions) >= MAX_ACTIONS:
            break
    if actions:
        return ResearchDecision(actions=actions)
    if all(need.urgency == 3 for need in needs):
        return ResearchDecision(
            actions=[FinishAction(rationale="Every question has the evidence the plan asks for.")]
        )
    open_ids = ", ".join(need.question.id for need in needs)
    return ResearchDecision(
        actions=[
            FinishAction(
                rationale=clip(
                    f"No untried searches or promising unread sources remain for {open_ids}; "
                    "finishing with the evidence found.",
                    400,
                )
            )
        ]
    )
