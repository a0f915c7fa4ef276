"""Passage units: windows of consecutive sentences and whole short blocks (docs/llm.md,
"Passage ranking")."""

from itertools import combinations

from research.engine.contracts import Block
from research.llm.passage_units import window_members
from research.llm.selection import QuestionText, select_passages
from research.llm.text import segment_blocks


def _page(*parts: tuple[str, str]) -> tuple[str, list[Block]]:
    text = "\n\n".join(part for _, part in parts)
    blocks, offset = [], 0
    for kind, part in parts:
        blocks.append(Block(start=offset, end=offset + len(part), kind=kind))
        offset += len(part) + 2
    return text, blocks


def _quoted(text: str, blocks: list[Block], question: str) -> list[str]:
    passages = select_passages(text, [QuestionText("q1", question)], blocks=blocks)
    for first, second in combinations(passages, 2):
        assert first.end <= second.start or second.end <= first.start  # never overlapping
    return [text[p.start : p.end] for p in passages]


def test_an_answer_stated_over_two_sentences_is_quoted_as_one_window() -> None:
    text, blocks = _page(
        ("heading", "Relay settings"),
        (
            "paragraph",
            "The spool limit caps the data a relay keeps on disk for one peer. When the cap "
            "is reached, new messages are dropped without any notice to the sender.",
        ),
        ("paragraph", "The colour option sets the colour of the log lines on the console."),
    )
    quoted = _quoted(text, blocks, "What happens to new messages when the spool limit is reached?")

    assert quoted[0] == text[text.index("The spool") : text.index("sender.") + len("sender.")]


def test_a_short_list_item_with_its_default_value_is_quoted_whole() -> None:
    item = (
        "spoolSize <number> Largest amount of data in bytes the queue keeps before it drops "
        "new messages. If exceeded, the oldest messages are discarded first. See the note on "
        "spooling. Default: 4096 * 1024."
    )
    text, blocks = _page(
        ("heading", "Queue options"),
        ("item", item),
        ("item", "colour <string> The colour of the log lines. Default: 'grey'."),
    )
    quoted = _quoted(text, blocks, "How much data does the queue keep before it drops messages?")

    assert item in quoted


def test_a_sentence_that_says_everything_is_quoted_alone() -> None:
    text, blocks = _page(
        ("heading", "Queue"),
        (
            "paragraph",
            "The queue keeps at most 4096 messages before it drops new ones. Log lines are "
            "written to the console in colour.",
        ),
    )
    quoted = _quoted(text, blocks, "How many messages does the queue keep before it drops new ones?")

    assert quoted[0] == "The queue keeps at most 4096 messages before it drops new ones."


def test_windows_stay_inside_one_block_and_respect_their_caps() -> None:
    text, blocks = _page(
        ("paragraph", "One short sentence here. Two short sentences here. Three here too."),
        ("paragraph", "Another block starts. It has two sentences."),
        ("code", "run --now"),
    )
    segments = segment_blocks(text, blocks)
    units = window_members(segments, max_sentences=2, max_chars=400, block_chars=400)

    for unit in units:
        assert len({segments[i].paragraph for i in unit}) == 1
        assert all(segments[i].kind != "code" for i in unit)
        assert list(unit) == list(range(unit[0], unit[-1] + 1))
    # Pairs of the first block, the whole first block (three sentences), the second block.
    assert units == {(0, 1): False, (0, 1, 2): True, (1, 2): False, (3, 4): True}
    assert list(window_members(segments, max_sentences=3, max_chars=55, block_chars=55)) == [
        (0, 1), (1, 2), (3, 4)
    ]
