"""A passage of a definition's description is ranked and shown under its term."""

from research.engine.contracts import Block
from research.llm.text import segment_blocks


def test_a_description_sentence_stands_under_section_and_term():
    parts = [
        ("OPTIONS", "heading"),
        ("--force-with-lease", "term"),
        ("This option overrides this restriction. It is safer.", "description"),
        ("A paragraph after the list.", "paragraph"),
    ]
    text, blocks = "", []
    for part, kind in parts:
        text += "\n\n" if text else ""
        blocks.append(Block(start=len(text), end=len(text) + len(part), kind=kind))
        text += part
    found = {text[s.start : s.end]: (s.kind, s.heading) for s in segment_blocks(text, blocks)}
    assert found["This option overrides this restriction."] == (
        "sentence",
        "OPTIONS › --force-with-lease",
    )
    assert found["It is safer."][1] == "OPTIONS › --force-with-lease"
    assert found["A paragraph after the list."] == ("sentence", "OPTIONS")
    assert found["--force-with-lease"] == ("item", "OPTIONS")
