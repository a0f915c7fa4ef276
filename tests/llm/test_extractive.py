def test_alike_excerpts_with_different_figures_are_both_shown() -> None:
    from research.llm.extractive_report import _group_near_duplicates
    from tests.llm.factories import make_evidence

    text = "The Solvik heat pump market was worth SVC {} billion in 2023."
    low = make_evidence("ev-1", text.format("1.2"), "q1", source_id="s1")
    high = make_evidence("ev-2", text.format("1.9"), "q1", source_id="s2")
    same = make_evidence("ev-3", text.format("1.2") + " Analysts agree.", "q1", source_id="s3")
    groups = _group_near_duplicates([low, high, same])
    assert [[item.source_id for item in group] for group in groups] == [["s1", "s3"], ["s2"]]
