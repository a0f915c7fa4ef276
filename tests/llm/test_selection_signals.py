"""Passage signals of the extractive selection: pointing back, and a definition's subject."""

from research.llm.passage_page import PassagePage
from research.llm.selection import (
    STRONG_RELEVANCE,
    QuestionText,
    explain_question,
    select_passages,
)

PAGE_TITLE = "kiln-press(1) Manual Page"
PAGE = (
    "kiln-press(1) Manual Page\n\n"
    "DESCRIPTION\n\n"
    "This command uses a pressure curve to find which batch in the firing log cracked a glaze.\n\n"
    "You start it by naming a cracked batch and a sound batch from the log.\n\n"
    "This means the log must hold at least two firings of the same clay.\n\n"
    "OPTIONS\n\n"
    "The press reads the curve file before every firing of the kiln.\n\n"
    "It defaults to the curve file in the current workshop folder."
)


def _index(page: PassagePage, opening: str) -> int:
    return next(i for i in page.usable if page.passage(i).startswith(opening))


def test_a_demonstrative_with_its_noun_opening_a_paragraph_does_not_dangle():
    page = PassagePage.build(PAGE, PAGE_TITLE)
    assert page is not None

    # "This command" names what it points at: the page's subject, under its heading.
    assert not page.dangling(_index(page, "This command uses"))
    # A bare demonstrative or a pronoun with nothing before it to quote still dangles.
    assert page.dangling(_index(page, "This means the log"))
    assert page.dangling(_index(page, "It defaults to"))


def test_the_sentence_opening_the_description_is_quoted_for_the_question_it_answers():
    question = QuestionText("q1", "How do I find which batch cracked a glaze?")
    passages = select_passages(PAGE, [question], title=PAGE_TITLE)

    # It loses nothing for opening with "This": it answers as strongly as its words say.
    best = passages[0]
    assert PAGE[best.start : best.end].startswith("This command uses a pressure curve")
    assert best.relevance >= STRONG_RELEVANCE


def test_a_definition_of_what_is_asked_about_ranks_above_a_sentence_that_only_has_a_copula():
    text = (
        "Glaze firing\n\n"
        "The usual way a glaze crack shows is when the kiln cools faster than the clay, and "
        "slow glaze firing is the cure for it.\n\n"
        "Slow firing refers to raising the kiln temperature by less than fifty degrees an hour.\n\n"
        "The kiln door stays shut until the clay is cold."
    )
    question = QuestionText("q1", "What is slow firing of a glaze?")
    passages = select_passages(text, [question], title="Glaze firing")

    best = text[passages[0].start : passages[0].end]
    assert best.startswith("Slow firing refers to")


def test_a_definition_is_quoted_with_the_sentence_after_it_in_its_paragraph():
    text = (
        "Kiln loading\n\n"
        "Cold loading refers to pots placed in the kiln before it is lit. When the kiln is "
        "first lit, the burner stays low for an hour so that the pots warm evenly.\n\n"
        "Hot loading of pots into a lit kiln cracks most of them."
    )
    question = QuestionText("q1", "What is cold loading of a kiln?")
    passages = select_passages(text, [question], title="Kiln loading")

    best = text[passages[0].start : passages[0].end]
    assert best.startswith("Cold loading refers to")
    assert best.endswith("warm evenly.")


def test_the_definition_of_what_is_asked_about_is_picked_first_on_a_page_rich_in_its_words():
    """Sentences repeating every word of the question, in a copula, outscore the definition
    that lacks the name; the definition is still the question's first pick."""
    others = " ".join(
        (
            "Stoneware fired in the Potterly slow glaze kiln overnight is the norm for bowls.",
            "Potterly users find the studio's slow glaze kiln is the quietest machine.",
            "Each weekend the Potterly workshop rents its slow glaze kiln out to students.",
            "A Potterly manual says the slow glaze kiln keeps their cups from crazing.",
        )
    )
    text = (
        "Glaze kilns\n\n"
        f"{others}\n\n"
        "A slow glaze kiln is a kiln whose burner raises the heat by fifty degrees an hour.\n\n"
        "The kiln door stays shut until the clay is cold."
    )
    question = QuestionText("q1", "What is a slow glaze kiln in Potterly?")
    passages = select_passages(text, [question], title="Glaze kilns", max_items=1)

    assert any(
        text[p.start : p.end].startswith("A slow glaze kiln is a kiln") for p in passages
    )


SECTIONED_TITLE = "Kiln press manual"
SECTIONED = (
    "Kiln press manual\n\n"
    "Spreadsheets\n\n"
    "The press can export the glaze log of every firing to a spreadsheet file.\n\n"
    "The tally option adds the batch labels.\n\n"
    "Bags\n\n"
    "Clay bags are kept dry on the shelf.\n\n"
    "The tally option adds the batch labels."
)


def test_a_passage_in_the_section_about_the_question_ranks_above_its_twin_elsewhere():
    """The same sentence in two sections, neither heading naming the question's words: the
    one whose section is about exporting the glaze log answers "how do I export …"."""
    question = QuestionText("q1", "How do I export the glaze log with the batch labels?")
    scored = explain_question(SECTIONED, question, title=SECTIONED_TITLE)
    twin = "The tally option adds the batch labels."
    first = SECTIONED.index(twin)
    second = SECTIONED.index(twin, first + 1)
    relevance = {passage.start: passage.relevance for passage in scored}

    assert relevance[first] > relevance[second]


FAQ_TITLE = "Kiln press frequently asked questions"
FAQ = (
    "Kiln press frequently asked questions\n\n"
    "(4) I emptied most of the glaze log but the log file did not get any shorter.\n\n"
    "No. Emptied entries are marked free and their room is reused for later firings. "
    "Run the compact command to rewrite the file at its new length.\n\n"
    "(5) Can two kilns share one press?\n\n"
    "Yes, when each kiln has its own curve file."
)


def test_the_answer_after_a_faq_entry_shares_the_entry_s_relevance():
    """The FAQ entry restates the asker's question and matches it best; the sentence after
    it answers in other words and is chosen with it."""
    question = QuestionText("q1", "I emptied the glaze log but the file is no shorter: why?")
    passages = select_passages(FAQ, [question], title=FAQ_TITLE)
    quoted = [FAQ[p.start : p.end] for p in passages]

    assert any("marked free and their room is reused" in text for text in quoted)
    entry = next(p for p in passages if FAQ[p.start : p.end].startswith("(4)"))
    answer = next(p for p in passages if "marked free" in FAQ[p.start : p.end])
    assert answer.relevance >= entry.relevance


GUIDE_TITLE = "Kiln press guide: pressure curves"
GUIDE = (
    "Kiln press guide: pressure curves\n\n"
    "We'll talk about pressure curves and glaze batches in Chapter 9.\n\n"
    "Let's look at how the press reads pressure curves for each glaze batch.\n\n"
    "A pressure curve holds one reading per second of a firing, and the press rejects a glaze "
    "batch whose curve has a gap."
)


def test_a_sentence_guiding_the_reader_ranks_below_one_about_the_subject():
    """Metadiscourse ("We'll talk about X in Chapter 9", "Let's look at X") repeats the
    question's words and says nothing about them."""
    question = QuestionText("q1", "What are pressure curves in a kiln press?")
    scored = explain_question(GUIDE, question, title=GUIDE_TITLE)
    relevance = {GUIDE[p.start : p.end].split()[0]: p.relevance for p in scored}

    assert relevance["A"] > relevance["We'll"]
    assert relevance["A"] > relevance["Let's"]


def test_a_passage_sharing_the_questions_common_words_ranks_below_one_sharing_its_specific_ones():
    # One page's passages are too few for idf to know "put" and "away" are common words:
    # each stands in one passage, as "untracked" and "files" do. Weighed by how often general
    # English uses them, the passage naming the untracked files is the better match.
    page = (
        "Archiver manual\n\n"
        "Shelving changes\n\n"
        "The archiver shelves tracked changes when you run archiver shelve.\n\n"
        "Untracked files are shelved as well when you pass the --untracked option to archiver "
        "shelve.\n\n"
        "Put the box away before the label is dry.\n\n"
        "The archiver keeps each shelf in the shelf list until you drop it."
    )
    question = QuestionText("q1", "Will the archiver put away untracked files?")
    relevance = {
        page[p.start : p.end]: p.relevance
        for p in explain_question(page, question, title="Archiver manual")
    }
    answer = next(v for text, v in relevance.items() if text.startswith("Untracked files"))
    decoy = relevance["Put the box away before the label is dry."]
    assert answer > decoy
