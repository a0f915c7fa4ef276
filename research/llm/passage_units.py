"""The units a page is scored in beyond its single sentences, and proximity inside a unit.

Passage retrieval scores fixed-size windows of consecutive sentences (Callan, SIGIR 1994) and
passages drawn from the document's structure (Kaszkiel & Zobel, SIGIR 1997). A window here
is 2 to ``max_sentences`` consecutive sentences (or sentences of one list item) of one
block, and a whole short block is one unit too however many sentences it has: an option's
description followed by its "Default: 1024 * 1024." is one list item. Units never cross a
block (segments of two blocks have different ``paragraph`` numbers), never hold a heading,
table or code block, and are exact spans of the snapshot from the first member's start to
the last member's end. Which unit is quoted is decided by the score in
:mod:`research.llm.selection`, where a length cost keeps a single sentence ahead of a window
that adds nothing to it.
"""

import math
from collections.abc import Collection, Iterable, Sequence

from research.llm.text import Segment

_JOINABLE = frozenset({"sentence", "item"})


def window_members(
    segments: Sequence[Segment],
    *,
    max_sentences: int,
    max_chars: int,
    block_chars: int,
    excluded_paragraphs: Collection[int] = (),
) -> dict[tuple[int, ...], bool]:
    """The units of more than one segment, as tuples of consecutive segment indices, each
    mapped to whether it is a whole block: every run of 2 to ``max_sentences`` sentences of
    one block spanning at most ``max_chars`` characters, and every whole block of several
    sentences spanning at most ``block_chars``. In page order, each unit once."""
    units: dict[tuple[int, ...], bool] = {}
    runs: list[list[int]] = []
    for index, segment in enumerate(segments):
        if segment.kind not in _JOINABLE or segment.paragraph in excluded_paragraphs:
            runs.append([])
            continue
        if runs and runs[-1] and segments[runs[-1][-1]].paragraph == segment.paragraph:
            runs[-1].append(index)
        else:
            runs.append([index])
    for run in runs:
        for first in range(len(run)):
            for last in range(first + 1, min(len(run), first + max_sentences)):
                if segments[run[last]].end - segments[run[first]].start > max_chars:
                    break
                units[tuple(run[first : last + 1])] = last - first + 1 == len(run)
        if len(run) > 1 and segments[run[-1]].end - segments[run[0]].start <= block_chars:
            units[tuple(run)] = True
    return {unit: units[unit] for unit in sorted(units, key=lambda unit: (unit[0], len(unit)))}


def min_cover_proximity(positions: dict[str, list[int]], query: Iterable[str]) -> float:
    """How close together the query terms found in a passage stand, 0–1: the number of
    distinct terms found, less one, over the length of the shortest window of term positions
    covering them all, less one (1 when they stand side by side). With one query term, 1 when
    it is found; with fewer than two found of several, 0."""
    wanted = [term for term in dict.fromkeys(query)]
    found = [term for term in wanted if term in positions]
    if len(wanted) == 1:
        return 1.0 if found else 0.0
    if len(found) < 2:
        return 0.0
    events = sorted((position, term) for term in found for position in positions[term])
    counts: dict[str, int] = {}
    best = math.inf
    left = 0
    for position, term in events:
        counts[term] = counts.get(term, 0) + 1
        while len(counts) == len(found):
            best = min(best, position - events[left][0] + 1)
            first = events[left][1]
            counts[first] -= 1
            if not counts[first]:
                del counts[first]
            left += 1
    return (len(found) - 1) / (best - 1) if best > 1 else 1.0
