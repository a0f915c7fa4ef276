"""Sentences that speak of the document rather than of the world it describes: a sentence
naming the document ("This page summarises …"), the author guiding the reader through the
text (metadiscourse), and the page's own publication data. The selector
(:mod:`research.llm.selection`) lowers the first two and keeps the third only for a question
about the publication."""

import re

from research.engine.text import stem

# Sentences about the document rather than the world ("This page summarises…").
_META = re.compile(
    r"^(?:this|the)\s+(?:page|article|note|report|section|document|post|paper|summary|chapter)\s+"
    r"(?:summari[sz]\w*|describ\w*|explain\w*|gives?|sets? out|presents?|covers?|looks? at|"
    r"reports?|is about)\b",
    re.IGNORECASE,
)
# Sentences in which the author guides the reader through the text rather than speaking of the
# world: the frame markers of metadiscourse (Hyland, *Metadiscourse*, 2005), a first person
# announcing or recalling a topic ("We'll talk about X in Chapter 19", "Let's look at X", "In
# this section we discuss X", "Recall the X we discussed"). They repeat the topic's words and
# say nothing about it.
_FRAME = re.compile(
    r"^(?:(?:in|for)\s+(?:this|the\s+next|the\s+following)\s+(?:chapter|section|part|tutorial|"
    r"guide|page|article)\s*,?\s+|(?:next|now|first|finally|then|later)\s*,?\s+)?"
    r"(?:we['’]ll|we\s+will|we['’]re\s+going\s+to|we\s+are\s+going\s+to|let['’]s|let\s+us|we)\s+"
    r"(?:now\s+|also\s+|briefly\s+|first\s+|then\s+|further\s+)?"
    r"(?:talk\s+about|discuss(?:ed)?|cover(?:ed)?|explor(?:e|ed)|look(?:ed)?\s+at|"
    r"learn(?:ed)?\s+about|examin(?:e|ed)|introduc(?:e|ed)|round\s+out|get\s+to|"
    r"return\s+to|come\s+back\s+to|revisit)\b"
    r"|^(?:as\s+an\s+example,\s+|as\s+)?(?:recall|remember)\s+(?:the|our|how|what)\b",
    re.IGNORECASE,
)
# A page's own publication data ("Published 1 December 2023 by the Buildings Division.",
# "Cite as: arXiv:2311.04567."): an answer only to a question about the publication.
_PUBLICATION_LINE = re.compile(
    r"^(?:(?:first\s+|originally\s+)?published|posted|updated|last\s+(?:updated|modified|"
    r"reviewed|edited)|written|filed|submitted|received|accepted|revised)\b"
    r"(?:\s+(?:on|by|in|at))?\s+(?:\d|[A-Z])"
    r"|^(?:cite\s+(?:this|as)|how\s+to\s+cite|doi|permalink)\b",
    re.IGNORECASE,
)
# The question words that ask about the publication itself, when its data line is an answer.
ABOUT_PUBLICATION = frozenset(
    stem(word) for word in ("published", "publication", "cite", "citation", "updated")
)


def about_the_document(passage: str) -> bool:
    """Whether ``passage`` speaks of its document or guides its reader, not of the world."""
    return bool(_META.match(passage) or _FRAME.match(passage))


def publication_line(passage: str) -> bool:
    """Whether ``passage`` is its page's publication data ("Published 1 December 2023 …")."""
    return bool(_PUBLICATION_LINE.match(passage))
