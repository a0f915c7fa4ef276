"""Passages that ask and the passages that answer them (``research/engine/question_echo.py``)."""

from research.engine.question_echo import answer_pairs, asks, is_echo, restates_question
from tests.engine.factories import make_evidence


def test_a_passage_asks_when_its_last_sentence_is_a_question() -> None:
    assert asks("I rebased a branch last month. Is it still in the reflog?")
    assert not asks("Is it kept? Yes, 90 days.")
    assert not asks("Entries are kept for 90 days.")


def test_a_numbered_entry_in_the_askers_voice_is_an_echo_a_numbered_step_is_not() -> None:
    assert is_echo("(12) I deleted a lot of data but the file did not get any smaller.")
    assert is_echo("Q: My build fails after the upgrade.")
    assert not is_echo("1. Run the installer and choose a folder.")
    assert not is_echo("I prefer the second method.")


def test_the_answer_is_the_next_passage_holding_a_question_term() -> None:
    echo = make_evidence("Does the cache expire?", source_id="s1", start=0)
    byline = make_evidence("asked by someone", source_id="s1", start=40)
    answer = make_evidence("The cache expires after an hour.", source_id="s1", start=80)
    later = make_evidence("The cache can be cleared by hand.", source_id="s1", start=200)
    other_page = make_evidence("The cache expires daily.", source_id="s2", start=30)
    items = [later, other_page, answer, byline, echo]
    pairs = answer_pairs(items, lambda item: "cache" in item.excerpt)
    assert [(e.id, a.id) for e, a in pairs] == [(echo.id, answer.id)]


def test_a_code_sample_ending_in_a_question_mark_restates_no_question() -> None:
    sample = make_evidence("if [ -f x ]; then echo found?", source_id="s1", start=0)
    sample = sample.model_copy(
        update={"locator": sample.locator.model_copy(update={"code": True})}
    )
    after = make_evidence("The cache expires after an hour.", source_id="s1", start=40)
    assert is_echo(sample.excerpt) and not restates_question(sample)
    assert answer_pairs([sample, after], lambda item: True) == []
