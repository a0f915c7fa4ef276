"""Diversity among the passages chosen from one page: maximal marginal relevance over term
overlap (Carbonell & Goldstein, SIGIR 1998), near-duplicate facts and overlapping spans."""

import math
from collections.abc import Iterable, Sequence

from research.engine.question_terms import NEAR_DUPLICATE, jaccard


def mmr_order(
    candidates: Sequence[int],
    scores: dict[int, float],
    terms: dict[int, frozenset[str]],
    *,
    limit: int,
    taken: Iterable[int] = (),
    spans: dict[int, tuple[int, int]] | None = None,
    weight: float,
) -> list[int]:
    """Maximal marginal relevance: up to ``limit`` candidates, each the best trade-off between
    its score (share ``weight``) and its overlap with those already taken; near-duplicates,
    and with ``spans`` candidates whose span overlaps one taken (a window and a sentence in
    it), are skipped."""
    chosen: list[int] = []
    already = list(taken)
    pool = list(candidates)
    while pool and len(chosen) < limit:
        best, best_value = None, -math.inf
        for index in pool:
            overlap = max((jaccard(terms[index], terms[other]) for other in already), default=0.0)
            if any(near_duplicate(terms[index], terms[other]) for other in already):
                continue
            if spans is not None and any(overlap_of(spans, index, other) for other in already):
                continue
            value = weight * scores[index] - (1 - weight) * overlap
            if value > best_value:
                best, best_value = index, value
        if best is None:
            break
        chosen.append(best)
        already.append(best)
        pool.remove(best)
    return chosen


def overlap_of(spans: dict[int, tuple[int, int]], first: int, second: int) -> bool:
    """Whether the quoted spans of two units share a character: no two kept passages do."""
    return spans[first][0] < spans[second][1] and spans[second][0] < spans[first][1]


def near_duplicate(first: frozenset[str], second: frozenset[str]) -> bool:
    """Whether two passages say nearly the same thing: they share most terms (Jaccard) and
    the figures of one are among those of the other. "defaults to 90 days" and "defaults to
    30 days" for two settings are two facts, as the quoted report already holds for alike
    excerpts; a sentence repeating one figure of another is not."""
    if jaccard(first, second) < NEAR_DUPLICATE:
        return False
    figures = [{term for term in terms if term[0].isdigit()} for terms in (first, second)]
    return figures[0] <= figures[1] or figures[1] <= figures[0]
