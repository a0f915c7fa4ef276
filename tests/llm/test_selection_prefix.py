"""Right-hand truncation in the extractive selection: a question's word that begins a page's
word the stemmer keeps apart ("const" of "constants") matches it at a partial credit."""

from research.engine.question_terms import PREFIX_MIN_CHARS, prefix_matches
from research.engine.text import stem
from research.llm.passage_page import PassagePage
from research.llm.selection import QuestionText, _score_question

PAGE_TITLE = "Zircon Handbook: Bindings"
PAGE = (
    "Zircon Handbook: Bindings\n\n"
    "Bindings\n\n"
    "A binding made with bind is fixed once its value is set.\n\n"
    "Constants can be declared in any scope, including the outermost scope of a module.\n\n"
    "The compiler reports an unused const as a warning when the module is built.\n\n"
    "Bindings are checked for shadowing when a second bind reuses the name."
)


def test_a_question_term_matches_the_longer_words_it_begins():
    found = prefix_matches(["const", "bind"], ["constant", "constraint", "const", "binding"])

    # The page words "const" begins, itself left out (an exact match needs no truncation).
    assert found == {"const": frozenset({"constant", "constraint"})}


def test_short_terms_name_parts_and_codes_are_not_truncated():
    assert PREFIX_MIN_CHARS == 5
    # "time" of "timeout", "set" of "settings": too short to be distinctive.
    assert prefix_matches(["time", "set"], ["timeout", "settings"]) == {}
    # A part of a compound name ("async" of "runAsync") is not the question's own word.
    assert prefix_matches(["async"], ["asyncio"], whole={"async"}) == {}
    # A name is matched whole: "Flask" is not "Flaskr".
    assert prefix_matches(["flask"], ["flaskr"], whole={"flask"}) == {}
    # A code token or a number is matched as it is, and matched by no truncation.
    assert prefix_matches(["max_b", "12345"], ["max_buffer", "123456"]) == {}
    assert prefix_matches(["string"], ["string::from"]) == {}


def test_stemmer_keeps_the_abbreviation_apart():
    # The vocabulary mismatch the truncation is for: Snowball joins neither pair.
    assert stem("const") != stem("constants")
    assert stem("const").startswith(stem("const")) and stem("constants").startswith("const")


def test_a_passage_with_a_word_the_question_term_begins_scores_higher():
    page = PassagePage.build(PAGE, PAGE_TITLE)
    assert page is not None
    question = QuestionText("q1", "Where may a const be declared in a module?")
    relevance, _ = _score_question(page, question)
    constants = next(i for i in page.usable if page.passage(i).startswith("Constants can"))

    # The sentence about constants answers and is kept: "const" begins "constants".
    assert constants in relevance
    assert relevance[constants] == max(relevance.values())
