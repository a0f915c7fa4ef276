"""The no-model planner on technical wording: names kept out of the scope, comparisons split
into well-formed questions per side, statements kept as context (research/llm/decompose.py,
research/llm/scope.py)."""

import pytest

from research.llm.decompose import decompose, split_context
from research.llm.scope import find_geographies, find_timeframe, is_technical_name


@pytest.mark.parametrize(
    "question",
    [
        "What changed in Python 3.11?",
        "How are sessions stored in Zircon 2.3?",
        "What is the identity map in MegaORM?",
        "How do I read a file in Node.js?",
        "How do I install it on macOS?",
        "Which version do I need for the examples in The Tarn Programming Language book?",
        "Is there a garbage collector in C++?",
        "How are modules resolved in the Tarn 2021 edition?",
        "What does the retry flag do in Brisk v18?",
    ],
)
def test_technical_names_are_not_places(question):
    assert find_geographies(question) == []


@pytest.mark.parametrize(
    ("question", "places"),
    [
        ("How many heat pumps were sold in France and Germany?", ["France", "Germany"]),
        ("How did ridership change in Paris last year?", ["Paris"]),
        ("What is the minimum wage in the UK since 2019?", ["UK"]),
        ("In 2023, how many trams ran in Lisbon?", ["Lisbon"]),
    ],
)
def test_places_are_still_places(question, places):
    assert find_geographies(question) == places


def test_versions_and_editions_are_not_time_frames():
    assert find_timeframe("What is new in the Tarn 2021 edition?") is None
    assert find_timeframe("What changed in Python 3.11?") is None
    assert find_timeframe("How many trams ran in 2023?") == ("2023", "2023")
    assert find_timeframe("In 2023, how many trams ran?") == ("2023", "2023")


def test_a_name_modifying_a_noun_is_technical_but_one_before_a_clause_word_is_not():
    assert is_technical_name("Zircon", " docs say")
    assert not is_technical_name("France", " and Germany")
    assert not is_technical_name("Paris", " last year")


def _texts(question: str) -> list[str]:
    return [sub.text for sub in decompose(question).questions]


def test_a_comparative_with_than_is_a_comparison_per_side():
    assert _texts("Is zircon rebase safer than a plain merge? What is the difference?") == [
        "How safe is zircon rebase?",
        "How safe is a plain merge?",
        "Which is safer, zircon rebase or a plain merge?",
        # "What is the difference?" asks how they differ, which "which is safer" does not.
        "How does zircon rebase differ from a plain merge?",
    ]


def test_a_follow_up_to_a_comparison_keeps_what_it_adds():
    # "Why?" after a yes/no comparison asks the reason for its answer.
    assert _texts("Is zircon rebase safer than a plain merge? Why?")[-1] == (
        "Why is zircon rebase safer than a plain merge?"
    )
    # "each" stands for both sides.
    assert _texts(
        "What is the difference between zircon merge and zircon rebase, and when should I use each?"
    )[-1] == ("When should I use each of zircon merge and zircon rebase?")
    # After a difference question, "how do they differ" adds nothing.
    assert _texts("How does Widget.spin() differ from Widget.halt()? What is the difference?") == [
        "What is Widget.spin()?",
        "What is Widget.halt()?",
        "How does Widget.spin() differ from Widget.halt()?",
    ]
    # A second side that is only the first side's preposition phrase shares its head.
    assert _texts("Which is faster, reading a file with streams or with Quill.read()?")[:2] == [
        "How fast is reading a file with streams?",
        "How fast is reading a file with Quill.read()?",
    ]


def test_follow_ups_name_what_they_ask_about():
    # "it" is what the asker acts on, not the asker.
    assert _texts("How do I show the queries that Quillpad sends? Can I log it to a file?") == [
        "How do I show the queries that Quillpad sends?",
        "Can I log the queries that Quillpad sends to a file?",
    ]
    # A negation ends the thing a clause is about.
    assert (
        _texts("Why is my Quillpad file not smaller after I delete notes? How do I shrink it?")[1]
        == "How do I shrink my Quillpad file?"
    )
    # "If not, …" asks on the answer to the question before it.
    assert _texts("Is Widget safe to share across threads? If not, what should I use instead?") == [
        "Is Widget safe to share across threads?",
        "Is Widget safe to share across threads? If not, what should I use instead?",
    ]
    # A bare "why" after a yes/no question asks the reason; the same words, another question.
    assert _texts("Is Quillpad free? Why?") == ["Is Quillpad free?", "Why is Quillpad free?"]


def test_a_difference_asks_what_each_side_is_and_how_they_differ():
    assert _texts("What is the difference between Widget.spin() and Widget.halt() in Brisk?") == [
        "What is Widget.spin() in Brisk?",
        "What is Widget.halt() in Brisk?",
        "How does Widget.spin() differ from Widget.halt() in Brisk?",
    ]


def test_a_leading_setting_joins_the_end_instead_of_becoming_a_question():
    texts = _texts("In MegaORM, what is the difference between lazy joins and eager joins?")
    assert texts[-1] == "How do lazy joins differ from eager joins in MegaORM?"
    assert not any("known about In" in text for text in texts)


def test_statements_before_the_question_stay_with_every_part():
    assert split_context("My build fails with “error E12”. What does that mean?") == (
        "My build fails with “error E12”",
        "What does that mean?",
    )
    assert _texts(
        "I removed half the files but the archive is as big as before. Why, and how do I shrink it?"
    ) == [
        "I removed half the files but the archive is as big as before: why?",
        "I removed half the files but the archive is as big as before: how do I shrink it?",
    ]
    # an ellipsis is not the end of a sentence
    assert split_context("Since which release can I write INSERT ... ON CONFLICT?")[0] == ""


def test_a_follow_up_to_a_clause_keeps_the_first_question_instead_of_gluing_it():
    texts = _texts(
        "Which Zircon version lets me write async handlers, and do I need anything extra?"
    )
    assert texts == [
        "Which Zircon version lets me write async handlers?",
        "Which Zircon version lets me write async handlers? Do I need anything extra?",
    ]
    assert not any("in the case of" in text for text in texts)


def test_listed_items_do_not_repeat_the_preposition_or_take_a_second_predicate():
    assert _texts("What level does Tarn use for debug builds and for release builds?") == [
        "What level does Tarn use for debug builds?",
        "What level does Tarn use for release builds?",
    ]
    assert _texts(
        "How can I open a database that lives only in memory and never touches the disk?"
    ) == ["How can I open a database that lives only in memory and never touches the disk?"]


def test_a_statement_joined_by_so_is_context_not_a_malformed_question():
    texts = _texts(
        "Ferrite variables are immutable by default, so what do I gain from declaring a "
        "const instead of a plain let?"
    )
    assert texts == [
        "Ferrite variables are immutable by default: what do I gain from declaring a const "
        "instead of a plain let?"
    ]
    assert _texts("Quill pools are shared, but why does Zircon lock them?") == [
        "Quill pools are shared: why does Zircon lock them?"
    ]
    # a question before the connective is no statement
    assert not split_context("What is Quill, so what?")[0]


def test_what_one_side_does_that_the_other_does_not_is_asked_of_each_side():
    texts = _texts("What does Pool.drain() do that Pool.close() doesn't, and the other way round?")
    assert texts == [
        "What does Pool.drain() do?",
        "What does Pool.close() do?",
        "What does Pool.drain() do that Pool.close() doesn't?",
    ]
    assert _texts("How does Ferrite differ from Zircon, and vice versa?")[-1] == (
        "How does Ferrite differ from Zircon?"
    )


def test_a_connective_asking_the_converse_is_no_search_word():
    from research.llm.search_queries import search_queries

    for question in (
        "Why does Quill retry a job and the other way round?",
        "Does Ferrite lock Zircon tables, or vice versa?",
    ):
        words = " ".join(search_queries(question, objective=question)).casefold().split()
        assert not {"way", "round", "vice", "versa"} & set(words)


def test_a_reported_statement_keeps_its_clause_and_leaves_the_situation_out():
    question = (
        "After a checkout of an old label Quill tells me I am in 'loose mode'. Why, and will I "
        "lose the drafts I save there?"
    )
    plan = decompose(question)
    assert [sub.text for sub in plan.questions] == [
        "I am in 'loose mode': why?",
        "I am in 'loose mode': will I lose the drafts I save there?",
    ]
    assert all("checkout of an old label" in sub.rationale for sub in plan.questions)
    # a statement reporting nothing stays whole, and "says hello" reports no clause
    assert _texts("Ferrite says hello on start. Why?") == ["Ferrite says hello on start: why?"]
    assert _texts("The Zircon docs say that pools are shared. Why?") == ["Pools are shared: why?"]


def test_a_list_inside_brackets_is_an_aside_not_items_to_split():
    question = (
        "Can several hosts share one Quill file that sits on a network drive (NFS or SMB share)?"
    )
    assert _texts(question) == [question]
    assert _texts("What does Tarn do on pay, housing and commuting?") == [
        "What does Tarn do on pay?",
        "What does Tarn do on housing?",
        "What does Tarn do on commuting?",
    ]


def test_alternatives_named_before_which_should_i_use_are_a_choice():
    assert _texts(
        "Pool.take or Pool.drain: which should I use in Quill, and how do they differ?"
    ) == [
        "What are the strengths and weaknesses of using Pool.take in Quill?",
        "What are the strengths and weaknesses of using Pool.drain in Quill?",
        "Pool.take or Pool.drain: which should I use in Quill?",
        "How does Pool.take differ from Pool.drain?",
    ]


def test_a_statement_after_the_question_is_kept_in_the_rationale_not_asked():
    plan = decompose("What does Pool.drain actually do in Quill? I see it in every tutorial.")
    assert [question.text for question in plan.questions] == [
        "What does Pool.drain actually do in Quill?"
    ]
    assert "I see it in every tutorial" in plan.questions[0].rationale
    # an instruction or a question after the question is still asked
    assert _texts("What is Quill? Explain its history.") == [
        "What is Quill?",
        "What is known about Quill's history?",
    ]
    assert _texts("What is Quill? Why is it slow?") == ["What is Quill?", "Why is Quill slow?"]


def test_an_adverb_after_the_question_word_is_no_part_of_the_subject():
    assert _texts("What exactly is a vault in Quill, and is it a separate process?") == [
        "What exactly is a vault in Quill?",
        "Is a vault in Quill a separate process?",
    ]
    # a question opening with a degree adverb is still a question
    assert _texts("Roughly how many jobs per second can one Tarn worker run?") == [
        "Roughly how many jobs per second can one Tarn worker run?"
    ]
    # "only" and "early" are not such adverbs: "What early …" keeps its words
    assert _texts("What early versions of Tarn had a pool, and is it still there?")[1] != (
        "Is versions of Tarn had a pool still there?"
    )


def test_a_pronoun_whose_subject_is_a_clause_follows_the_first_question():
    # no verb we know ends "Quill versions come with Ferrite": "it" is left as asked
    assert _texts("Which Quill versions come with Ferrite, and is it switched on by default?") == [
        "Which Quill versions come with Ferrite?",
        "Which Quill versions come with Ferrite? Is it switched on by default?",
    ]
    # the daemon listens, not the port: "it" is not "TCP port does the Tarn daemon listen on"
    assert _texts(
        "Which TCP port does the Tarn daemon listen on, and how many clients can it serve?"
    ) == [
        "Which TCP port does the Tarn daemon listen on?",
        "Which TCP port does the Tarn daemon listen on? How many clients can it serve?",
    ]
    # a subject cut at a verb we know is still put in place of "it"
    assert _texts("How does the Tarn pool handle stale connections, and can I turn it off?") == [
        "How does the Tarn pool handle stale connections?",
        "Can I turn the Tarn pool off?",
    ]
    assert _texts("Which tax rules change in 2027, and who drafted them?")[1] == (
        "Who drafted tax rules?"
    )


def test_how_many_without_a_noun_counts_what_the_first_part_counted():
    assert _texts(
        "How many threads can write to one Zircon queue, and how many can read from it?"
    ) == [
        "How many threads can write to one Zircon queue?",
        "How many threads can write to one Zircon queue? How many threads can read from it?",
    ]


def test_a_question_asked_of_each_side_is_asked_of_both_sides_in_turn():
    assert _texts("quill log a..b versus quill log a...b: which entries does each one list?") == [
        "Which entries does quill log a..b list?",
        "Which entries does quill log a...b list?",
        "How does quill log a..b differ from quill log a...b?",
    ]


def test_x_versus_y_asking_only_the_difference_is_a_difference_not_a_choice():
    assert _texts("Quill vs Ferrite in Tarn: what's the difference?") == [
        "What is Quill in Tarn?",
        "What is Ferrite in Tarn?",
        "How does Quill differ from Ferrite in Tarn?",
    ]


def test_a_spaced_dash_before_the_question_separates_it_like_a_colon():
    assert _texts("Quill vs Ferrite - which is faster?") == [
        "What are the strengths and weaknesses of Quill?",
        "What are the strengths and weaknesses of Ferrite?",
        "Which is faster, Quill or Ferrite?",
    ]


def test_three_sides_named_with_versus_are_three_sides():
    assert _texts("plain Quill vs Quill FAST vs Quill SAFE in Tarn - what's the difference?") == [
        "What is plain Quill in Tarn?",
        "What is Quill FAST in Tarn?",
        "What is Quill SAFE in Tarn?",
        "How do plain Quill, Quill FAST and Quill SAFE differ in Tarn?",
    ]
    assert _texts("Quill vs Ferrite vs Zircon: which queries does each one run?") == [
        "Which queries does Quill run?",
        "Which queries does Ferrite run?",
        "Which queries does Zircon run?",
        "How do Quill, Ferrite and Zircon differ?",
    ]


def test_a_statement_joined_by_so_needs_no_auxiliary_to_be_context():
    assert _texts(
        "Quill<T> and Tarn<T> both own their data, so what is the difference in how Ferrite "
        "checks borrowing for them?"
    ) == [
        "Quill<T> and Tarn<T> both own their data: what is the difference in how Ferrite "
        "checks borrowing for them?"
    ]


@pytest.mark.parametrize(
    ("question", "asked"),
    [
        ("OK, so what is a Quill frame?", "What is a Quill frame?"),
        ("Hi, how do I reset a Ferrite pool?", "How do I reset a Ferrite pool?"),
        ("Well, why does Zircon drop frames?", "Why does Zircon drop frames?"),
        ("So what does Tarn do with stale locks?", "What does Tarn do with stale locks?"),
        ("Hello! Which port does Quill listen on?", "Which port does Quill listen on?"),
        ("Um... what is Ferrite?", "What is Ferrite?"),
        ("Hi - how does Tarn merge?", "How does Tarn merge?"),
    ],
)
def test_an_opening_interjection_or_greeting_is_no_part_of_the_question(question, asked):
    assert _texts(question) == [asked]


def test_words_that_only_look_like_an_interjection_stay():
    # "Well" and "So" open the question's own words here: no punctuation or question follows.
    assert _texts("So-called Quill frames: what are they?") == [
        "So-called Quill frames: what are they?"
    ]
    assert _texts("Well water in Tarn: is it safe?") == ["Well water in Tarn: is it safe?"]


def test_a_topic_before_a_colon_is_context_every_part_keeps():
    assert _texts("Export to CSV in Quill: are column names included?") == [
        "Export to CSV in Quill: are column names included?"
    ]
    assert _texts("Tarn merges: how do they work, and why do they fail?") == [
        "Tarn merges: how do they work?",
        "Tarn merges: why do they fail?",
    ]
    # sides before the colon are still a comparison
    assert _texts("Quill vs Tarn: which is faster?")[-1] == "Which is faster, Quill or Tarn?"


def test_several_statements_before_the_question_keep_their_full_stops():
    # "… anywhere Others work fine" had run two sentences together, and "Others" read as a name.
    assert _texts(
        "Some of my Quill jobs never run, with no error anywhere. Others work fine. Why?"
    ) == ["Some of my Quill jobs never run, with no error anywhere. Others work fine: why?"]


def test_a_question_opening_with_code_keeps_its_case():
    texts = _texts("pool.drain() or pool.close(): which should I call in Tarn, and how do they differ?")
    assert "pool.drain() or pool.close(): which should I call in Tarn?" in texts
    assert _texts("setMaxTasks(): what does it limit in Quill?") == [
        "setMaxTasks(): what does it limit in Quill?"
    ]
