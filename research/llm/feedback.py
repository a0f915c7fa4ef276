"""Feedback from the first search's results to the second: the words the results spell
differently from the question.

A web search engine matches the words it is given, often without stemming: a question asking
how to "test" views misses a page titled "Testing …", and one about "a database" misses
"In-Memory Databases". The results of the first search show how the pages that discuss the
question's words spell them, so the second search adds those spellings (query expansion with
inflectional variants found in the top results: a form of pseudo-relevance feedback, after
Xu and Croft, "Corpus-based stemming using co-occurrence of word variants", 1998, and Peng et
al., "Context sensitive stemming for web search", 2007). Only forms sharing a question word's
stem are added, so the second search still asks what the question asks; no synonym is
guessed.
"""

from collections import Counter
from collections.abc import Iterable, Sequence

from research.engine.text import fold, keywords, stem

# At most this many variant spellings join the second search: each extra word dilutes the
# question's own words in the engine's ranking, and the most used forms come first.
FEEDBACK_VARIANTS = 3


def inflection_variants(
    words: Sequence[str], texts: Iterable[str], *, limit: int = FEEDBACK_VARIANTS
) -> list[str]:
    """Spellings in ``texts`` (titles, snippets, address words of search results) that share
    the stem of one of ``words`` but are not among them, most frequent first (ties in order of
    appearance); numbers and code tokens are left alone."""
    stems = {stem(fold(word)) for word in words}
    spelled = {fold(word) for word in words}
    counts: Counter[str] = Counter()
    for text in texts:
        for word in dict.fromkeys(fold(word) for word in keywords(text)):
            if word.isalpha() and word not in spelled and stem(word) in stems:
                counts[word] += 1
    return [word for word, _ in counts.most_common(limit)]


def feedback_query(query: str, words: Sequence[str], texts: Iterable[str]) -> str:
    """``query`` with the variant spellings of ``words`` the results ``texts`` use."""
    variants = inflection_variants(words, texts)
    return " ".join([query, *variants]) if variants else query
