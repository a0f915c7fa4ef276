"""Term matching from code and document structure: compound code names split into parts, and
the text of a definition standing under its term."""

from research.engine.answer_order import comparison_sides
from research.engine.contracts import Block, Heading
from research.engine.ledger.excerpts import SnapshotIndex
from research.engine.question_terms import question_terms
from research.engine.specificity import specificity
from research.engine.text import content_terms, name_part_terms, stem, term_under, under_term


def test_a_camel_case_name_gives_its_whole_and_its_parts():
    terms = content_terms("Call setMaxListeners on the emitter")
    assert "setmaxlisten" in terms
    assert {"set", "max", "listen"} <= set(terms)
    # The prose a name's documentation uses meets the name's parts.
    assert set(content_terms("more than 10 listeners are added")) & set(terms) == {"listen"}


def test_joined_names_keep_their_joins_and_give_their_parts():
    terms = content_terms("the max_buffer option of child_process.exec() and std::vector")
    assert {"max_buffer", "child_process.exec", "std::vector"} <= set(terms)
    assert {"max", "buffer", "child", "process", "exec", "std", "vector"} <= set(terms)
    assert content_terms("XMLHttpRequest")[1:] == ["xml", "http", "request"]


def test_ordinary_words_versions_and_initials_do_not_split():
    assert content_terms("e.g. Python 3.11 on an iPhone, URLs and APIs") == [
        "python",
        "3.11",
        "iphon",
        "url",
        "api",
    ]
    assert content_terms("the x_axis") == ["axi"]
    # Two sentences run together are no dotted name.
    assert content_terms("the end.The start") == ["end", "start"]
    assert name_part_terms("plain words only") == frozenset()


def test_a_part_weighs_less_in_a_question_than_a_word_of_its_own():
    query, _ = question_terms("What does the max_buffer option limit?", background=False)
    assert query["max_buffer"] == 1.0
    assert query["buffer"] == query["max"] == 0.5
    both, _ = question_terms("How big is the buffer that max_buffer limits?", background=False)
    assert both["buffer"] == 1.0  # the question's own word


def test_names_sharing_a_part_are_still_two_sides():
    assert comparison_sides("What is the difference between alloc and allocUnsafe?") == (
        "alloc",
        "allocUnsafe",
    )


def test_under_term_joins_section_and_a_shortened_term():
    assert under_term("OPTIONS", "--force") == "OPTIONS › --force"
    assert under_term(None, "--force") == "--force"
    long = "subprocess.run(args, *, stdin=None, input=None, stdout=None, stderr=None, shell=False)"
    shown = under_term("Functions", long)
    assert shown.startswith("Functions › subprocess.run(args") and shown.endswith("…")
    assert len(shown) <= 120
    # The term is read back from the heading as shown; a plain heading names none.
    assert term_under(shown) == shown.split(" › ", 1)[1]
    assert term_under(under_term("OPTIONS", "--force")) == "--force"
    assert term_under("Installation") is None


def _definition_page() -> SnapshotIndex:
    parts = [
        ("OPTIONS", "heading"),
        ("The options are these.", "paragraph"),
        ("-f", "term"),
        ("--force", "term"),
        ("Usually, the command refuses to update a remote ref.", "description"),
        ("This option overrides this restriction.", "description"),
        ("A paragraph after the list.", "paragraph"),
    ]
    text, blocks = "", []
    for part, kind in parts:
        text += "\n\n" if text else ""
        blocks.append(Block(start=len(text), end=len(text) + len(part), kind=kind))
        text += part
    return SnapshotIndex(text, headings=[Heading(text="OPTIONS", level=2, offset=0)], blocks=blocks)


def test_a_description_stands_under_its_section_and_its_terms():
    index = _definition_page()
    at = index.text.index
    assert index.heading_at(at("This option overrides")) == "OPTIONS › -f, --force"
    assert index.verify("This option overrides this restriction.").heading == (
        "OPTIONS › -f, --force"
    )
    # Text outside the definition list keeps the section's heading.
    assert index.heading_at(at("A paragraph after")) == "OPTIONS"
    assert index.heading_at(at("The options are")) == "OPTIONS"
    assert index.heading_at(at("--force")) == "OPTIONS"


def test_a_template_word_inside_a_noun_compound_is_a_term():
    query, _ = question_terms("Does it check foreign key constraints automatically?")
    assert {"foreign", "key", "constraint"} <= query.keys()
    for filler in (
        "What is the key difference between locks and latches?",
        "What are Python's main features?",
        "What kind of lock does it take?",
        "Which is faster, the key, or the value?",
    ):
        query, _ = question_terms(filler)
        assert not {"key", "main", "kind", "differ"} & query.keys(), filler


def test_a_verb_of_the_templates_is_filler_even_between_names():
    query, _ = question_terms("How does Postgres compare with DuckDB, Postgres vs DuckDB?")
    assert not {"compar", "vs"} & query.keys()


def test_british_isation_meets_american_ization():
    assert content_terms("optimisation levels") == content_terms("optimization level")
    assert stem("organisations") == stem("organization")
    assert stem("precise") != stem("precize")  # the verb's "-ise" is left alone


def test_a_dimensional_adjective_meets_its_comparative_and_superlative():
    assert content_terms("entries older than 30 days") == content_terms("entries old, 30 days")
    assert stem("largest") == stem("larger") == stem("large")
    assert stem("user") != stem("use") and stem("number") == "number"  # no "-er" stripped


def test_since_and_unless_are_connectives_like_until_and_if():
    assert content_terms("since version 3, unless changed") == content_terms(
        "until version 3, if changed"
    )


def test_a_word_common_in_general_english_weighs_less_than_a_specific_one():
    # wordfreq's English frequencies: "put" and "never" are among the commonest content
    # words, "file" is common, "shelved" and "untracked" are not, nor is a code name.
    assert specificity("put") < specificity("file") < specificity("shelv") == 1.0
    assert specificity("untrack") == specificity("max_buffer") == 1.0
    assert 0.4 < specificity("never") < 0.7
    question = "Will the archiver also put away files I have created but never shelved?"
    query, _ = question_terms(question)
    assert query["shelv"] == 1.0
    assert query["put"] < query["file"] < query["shelv"]
    plain, _ = question_terms(question, background=False)
    assert set(plain.values()) == {1.0}
