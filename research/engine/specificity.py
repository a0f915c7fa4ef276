"""How specific a word of a question is, judged by how often general English uses it.

A question's terms are weighed by their inverse document frequency where they are matched:
over one page's passages, one run's search results or one question's excerpts. Those
collections are small, and a common English word a page seldom uses ("put", "away", "never"
in "Will the archiver also put away files I have created but never shelved?") looks as
telling there as a name, so the passages that share it by chance rise. Retrieval over small
collections borrows its statistics from a large reference collection for that reason (the
background model of language-model smoothing, Zhai & Lafferty, SIGIR 2001); here the
reference is the English word frequencies of ``wordfreq`` (Speer, 2022; Wikipedia, subtitles,
news, books, web text and more, combined), installed with the package, never downloaded.

A word's specificity is its background idf in log₁₀ units, 9 − Zipf (the Zipf scale is
log₁₀ of a word's frequency per billion words: Van Heuven, Mandera, Keuleers & Brysbaert,
*SUBTLEX-UK*, QJEP 67(6), 2014), capped where the scale's high-frequency words begin (Zipf 4,
once in 100,000 words) and divided by that cap: every word rarer than that, and every name and
code word general English lacks, counts fully; "file" (Zipf 5.1) counts 0.78, "put" (5.8) 0.65.
The weights are the question's (:func:`research.engine.question_terms.question_terms`), so the
same discount holds wherever the question is matched against passages.
"""

import math
from functools import cache

from wordfreq import get_frequency_dict

from research.engine.text import content_terms

# The Zipf scale's boundary between low- and high-frequency words (Van Heuven et al. 2014:
# 1–3 low, 4–7 high): a word used less often than once in 100,000 words of general English
# is a specific word, and the discount applies only to the words above it.
HIGH_FREQUENCY_ZIPF = 4.0
# Zipf is log₁₀ of a word's frequency per billion words, so 9 − Zipf is −log₁₀ of its
# probability, its idf against general English; a word reaches full weight at this idf.
_FULL = 9.0 - HIGH_FREQUENCY_ZIPF


@cache
def _frequencies() -> dict[str, float]:
    """The general-English frequency of each stemmed content term: the sum of its word forms'
    ("create", "created", "creates" are one term), from wordfreq's compact English list
    (every word down to Zipf 3, far below where the discount starts)."""
    found: dict[str, float] = {}
    for word, frequency in get_frequency_dict("en", wordlist="small").items():
        terms = content_terms(word)
        if len(terms) == 1:
            found[terms[0]] = found.get(terms[0], 0.0) + frequency
    return found


def specificity(term: str) -> float:
    """The share of its weight a stemmed content term keeps for being common in general
    English: 1 for a word rarer than :data:`HIGH_FREQUENCY_ZIPF` or unknown to English, down
    to about 0.4 for the commonest content words."""
    frequency = _frequencies().get(term, 0.0)
    return min(_FULL, -math.log10(frequency)) / _FULL if frequency > 0 else 1.0
