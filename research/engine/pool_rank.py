"""The report-time order of one question's evidence pool: which quotations answer it best.

Each excerpt's relevance (``relevance_bp``) was scored by the selector against the other
passages of its own page, normalised by that page's best: a page about something else still
has a best passage, so across pages the figure is poorly calibrated. Here the question's
gathered passages are ranked against each other instead:

* **pool BM25** (``bm25s``): the question's terms scored over the pool's passages, each with
  its heading and its source's title, so the inverse document frequency is that of the pool;
* fused by **reciprocal-rank fusion** (Cormack, Clarke and Büttcher, 2009) with the
  selector's ranking (``relevance_bp``) and the report's idf-weighted coverage of the
  question's terms (its affinity): no single scale decides, and a passage ranked well by
  several rankings leads;
* the same BM25 over each passage's **page title and heading** alone, a fourth ranking: a
  page about the question (its title names the question's terms) outranks one that only
  mentions them in passing;
* the same BM25 over each passage's **own text** (its excerpt and the heading it stands
  under, without the page's title and address), a fifth ranking: over the whole context a
  passage on a page whose title repeats the question rides on that title, and an answer on
  a page titled otherwise ("Bytes and Scalar Values", "Asynchronous I/O") loses to passages
  that merely sit under it. Weighting a passage's own field above its page's is BM25F's
  field weighting (Robertson, Zaragoza and Taylor, CIKM 2004): the excerpt counts in this
  ranking and the context one, the page's title in the context one and the title-and-heading
  one, so neither field alone decides;
* **subject agreement** first: a passage whose excerpt, heading, source title and address
  name none of the subjects the question names (:func:`research.engine.quality.subject_names`)
  ranks below every passage that names one. A page found for the question's words that is
  about another subject still says nothing of the question's subject. A passage of a page
  whose other pooled passages name the subject names it too: a sentence need not repeat the
  name its page gives it ("The default … for dev is therefore 0.").
* **the answer after the question** (:mod:`research.engine.question_echo`): a FAQ entry or a
  forum question restating the question matches it best yet answers nothing; the passage
  that follows it on its page under the same heading (its answer) inherits its fused rank and
  pool relevance, and ranks before it (FAQ retrieval's question–answer pairs, Burke et al.
  1997; Jijkoun and de Rijke 2005).

The pool-level BM25 score divided by the pool's best is also a second relevance scale
(:func:`PoolRanking.relevance`), the better of the passage in its context against the
pool's best in context and its own text against the pool's best own text (each field
normalised by its own best, so a page title repeating the question does not set the bar
for passages on pages titled otherwise), comparable to the selector's page-local one (which is also
normalised by a best). Being relative, it always crowns some passage, so the report trusts it
only together with its own answer checks (a passage of the kind of value asked for, naming
the subject), never alone; and a passage whose excerpt holds none of the question's terms
has none, however well its page title and heading match: a line that says nothing of what
is asked (a byline, a date line, a caption) is no answer merely because its page is about
the question.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import bm25s

from research.engine.contracts import BASIS_POINTS, Evidence, SourceSummary
from research.engine.guards import reciprocal_rank
from research.engine.ledger import content_order
from research.engine.quality import fold_name, subject_names
from research.engine.question_echo import answer_pairs, restates_question
from research.engine.question_terms import question_terms
from research.engine.text import content_terms

# An empty document for bm25s, which cannot index a passage without terms.
_EMPTY = "\x00"


def said(item: Evidence, sources: Mapping[str, SourceSummary]) -> str:
    """Where a quotation names its subject: its excerpt, heading, source title and address."""
    source = sources.get(item.source_id)
    where = f"{source.title} {source.url}" if source is not None else ""
    return f"{item.excerpt}\n{item.locator.heading or ''}\n{where}"


def names_subject(
    item: Evidence, names: frozenset[str], sources: Mapping[str, SourceSummary]
) -> bool:
    """Whether ``item`` names one of the subjects ``names`` (folded); True when there are none."""
    if not names:
        return True
    text = fold_name(said(item, sources))
    return any(name in text for name in names)


def _where(item: Evidence, sources: Mapping[str, SourceSummary]) -> str:
    """Where a quotation stands: its source's title and the heading above it."""
    source = sources.get(item.source_id)
    return f"{source.title if source is not None else ''}\n{item.locator.heading or ''}"


def _own(item: Evidence) -> str:
    """What a passage says itself: its excerpt and the heading it stands under."""
    return f"{item.excerpt}\n{item.locator.heading or ''}"


def _pool_bm25(query: Sequence[str], texts: Sequence[str]) -> list[float]:
    """The BM25 score of each of ``texts`` for ``query``, idf over the pool."""
    if not texts or not query:
        return [0.0 for _ in texts]
    retriever = bm25s.BM25()
    retriever.index([content_terms(text) or [_EMPTY] for text in texts], show_progress=False)
    return [float(score) for score in retriever.get_scores(list(query))]


def _share(score: float, best: float) -> float:
    """``score`` relative to the pool's ``best``, 0 when nothing scored."""
    return score / best if best > 0 else 0.0


def _ranks(scores: Sequence[float]) -> list[int]:
    """The rank (1 = best) of each score, ties sharing the better rank."""
    ordered = sorted(set(scores), reverse=True)
    place = {score: ordered.index(score) + 1 for score in ordered}
    return [place[score] for score in scores]


@dataclass(frozen=True)
class PoolRanking:
    """One question's evidence pool, best answer first, and each item's pool relevance."""

    ordered: list[Evidence]
    pool_relevance: dict[str, float]
    naming: frozenset[str]

    def relevance(self, item: Evidence) -> float:
        """How well ``item`` answers the question, 0–1: the better of the selector's
        page-local relevance and the pool BM25 score relative to the pool's best."""
        return max(item.relevance_bp / BASIS_POINTS, self.pool_relevance.get(item.id, 0.0))

    def names_subject(self, item: Evidence) -> bool:
        return item.id in self.naming


def rank_pool(
    question: str,
    items: Sequence[Evidence],
    sources: Mapping[str, SourceSummary],
    affinity: Mapping[str, float],
) -> PoolRanking:
    """``items`` (the evidence gathered for ``question``) ranked for the report: those naming
    the question's subject first, then by the reciprocal-rank fusion of pool BM25 (over the
    passage in its context, over its page title and heading, over its own text), the
    selector's relevance and ``affinity`` (item id → idf-weighted coverage of the question)."""
    items = list(items)
    query = list(question_terms(question)[0])
    bm25 = _pool_bm25(query, [said(item, sources) for item in items])
    best = max(bm25, default=0.0)
    # What the passage says itself (excerpt and heading): a ranking of its own, and a second
    # scale of pool relevance, so an answer on a page titled otherwise is measured against
    # the pool's best own text, not against a passage carried by its page's title.
    own = _pool_bm25(query, [_own(item) for item in items])
    best_own = max(own, default=0.0)
    # The excerpt's own share of the match: without a question term of its own a passage has
    # no pool relevance, whatever its title and heading say.
    excerpt_bm25 = _pool_bm25(query, [item.excerpt for item in items])
    pool_relevance = {
        item.id: max(_share(score, best), _share(mine, best_own)) if alone > 0 else 0.0
        for item, score, mine, alone in zip(items, bm25, own, excerpt_bm25, strict=True)
    }
    rankings = (
        _ranks(bm25),
        _ranks([float(item.relevance_bp) for item in items]),
        _ranks([affinity.get(item.id, 0.0) for item in items]),
        # The page a passage stands on: its title and heading against the question's terms,
        # so a page about the question ranks its passages above a page that mentions it.
        _ranks(_pool_bm25(query, [_where(item, sources) for item in items])),
        # What the passage says itself, so its own words weigh more than its page's.
        _ranks(own),
    )
    fused = {
        item.id: reciprocal_rank(ranking[place] for ranking in rankings)
        for place, item in enumerate(items)
    }
    # The answer of a FAQ entry or forum question takes the question's place: it inherits the
    # echo's fused rank and pool relevance, and a passage restating a question follows its equals.
    holds_terms = {item.id: alone > 0 for item, alone in zip(items, excerpt_bm25, strict=True)}
    for echo, answer in answer_pairs(items, lambda item: holds_terms[item.id]):
        fused[answer.id] = max(fused[answer.id], fused[echo.id])
        pool_relevance[answer.id] = max(pool_relevance[answer.id], pool_relevance[echo.id])
    names = subject_names([question])
    naming = frozenset(item.id for item in items if names_subject(item, names, sources))
    # A passage names its page's subject when another passage of that page does: "The
    # default … for dev is therefore 0" on a page whose other passages name the subject
    # speaks of it as they do (the passage read in its document's context, as in Callan 1994).
    pages = {item.source_id for item in items if item.id in naming}
    naming = frozenset(item.id for item in items if item.source_id in pages)
    ordered = sorted(
        items,
        key=lambda e: (e.id not in naming, -fused[e.id], restates_question(e), content_order(e)),
    )
    return PoolRanking(ordered=ordered, pool_relevance=pool_relevance, naming=naming)
