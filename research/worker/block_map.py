"""The stored form of a snapshot's block map (``ResearchSource.snapshot_blocks``)."""

from collections.abc import Sequence
from typing import Any

from research.engine.contracts import Block


def encode_blocks(blocks: Sequence[Block]) -> list[list[int | str]]:
    """A block map in its stored form: ``[start, end, kind]``, plus ``1`` for a block after
    left-out text. A page has thousands of blocks; field names in every entry would double
    the size of the row."""
    return [
        [block.start, block.end, block.kind, *([1] if block.after_gap else [])] for block in blocks
    ]


def decode_blocks(stored: Sequence[Sequence[Any]] | None) -> list[Block]:
    """The stored block map as contracts (see :func:`encode_blocks`)."""
    return [
        Block(
            start=entry[0], end=entry[1], kind=entry[2], after_gap=len(entry) > 3 and bool(entry[3])
        )
        for entry in stored or ()
    ]
