"""The report's gap check (research/engine/gaps.py): a question is answered only by quotations
that speak of everything it names, and a count only by a figure, not a release or a date."""

from research.engine.contracts import SourceSummary
from research.engine.gaps import stated_gap, unnamed_subject
from research.llm.extractive import ExtractiveModelClient
from tests.llm.factories import make_evidence, make_plan, synthesis_request


def _gaps(question: str, *excerpts: str) -> list[str]:
    plan = make_plan(question)
    evidence = [
        make_evidence(f"e{n}", excerpt, "q1", source_id=f"s{n}")
        for n, excerpt in enumerate(excerpts, start=1)
    ]
    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value
    return [gap.description for gap in report.gaps if gap.question_id == "q1"]


def test_a_comparison_with_a_side_no_quotation_names_is_a_gap():
    question = "Is Quillpad faster than Harborline for large exports?"
    assert _gaps(question, "Quillpad exports large notebooks in a few seconds.") == [
        "No quoted excerpt or source names Harborline, which the question asks about: " + question
    ]
    # Each side named by its own quotation: the two together answer the comparison.
    assert (
        _gaps(
            question,
            "Quillpad exports large notebooks in a few seconds.",
            "Harborline exports large notebooks in about a minute.",
        )
        == []
    )


def test_a_procedure_on_a_platform_never_named_is_a_gap():
    question = "How do I deploy a Quillpad server on Tallowbox?"
    gaps = _gaps(question, "To deploy a Quillpad server, run it behind a reverse proxy.")
    assert gaps == [
        f"No quoted excerpt or source names Tallowbox, which the question asks about: {question}"
    ]
    assert _gaps(question, "Deploy a Quillpad server on Tallowbox with its own image.") == []


def test_a_subject_named_only_in_evidence_left_unquoted_is_no_gap():
    question = "How do I deploy a Quillpad server on Tallowbox?"
    quoted = [make_evidence("e1", "To deploy a Quillpad server, use a reverse proxy.", "q1")]
    gathered = [make_evidence("e2", "Tallowbox runs any container image.", "q1")]
    sources = {"s1": SourceSummary(id="s1", title="Deploying", url="https://docs.example/d")}
    assert stated_gap(question, quoted, sources).startswith("No quoted excerpt or source names")
    assert stated_gap(question, quoted, sources, gathered) == ""


def test_a_release_the_question_names_must_be_spoken_of():
    question = "Does Quillpad 4 still run on Tallow 7?"
    assert _gaps(question, "Quillpad 4 runs on Tallow, on every supported release.") == [
        f"No quoted excerpt or source speaks of Tallow 7: {question}"
    ]
    assert _gaps(question, "Quillpad 4 no longer runs on Tallow 7 or older.") == []


def test_a_versioned_address_or_title_speaks_of_its_release():
    question = "Does Quillpad 4 still run on Tallow 7?"
    item = make_evidence("e1", "Quillpad no longer runs on Tallow 7 or older.", "q1")
    for title, url in (
        ("Platforms | Quillpad v4.2.0 documentation", "https://quillpad.example/p"),
        ("Platforms — Quillpad Documentation (4.x)", "https://quillpad.example/p"),
        ("Platforms", "https://quillpad.example/en/4.x/platforms.html"),
        ("Platforms", "https://quillpad.example/4.2.0/guide/platforms.html"),
        ("Quillpad version 4 platforms", "https://q.example/p"),
    ):
        sources = {"s1": SourceSummary(id="s1", title=title, url=url)}
        assert unnamed_subject(question, [item], sources) == "", title
    # Another release of the same subject is not this one.
    sources = {"s1": SourceSummary(id="s1", title="Quillpad 14 docs", url="https://q.example/")}
    assert unnamed_subject(question, [item], sources).startswith("No quoted excerpt or source")


def test_a_release_number_or_a_date_is_no_count():
    question = "How many commits does the Zircon repository have?"
    gap = [f"No quoted excerpt states a figure for: {question}"]
    assert _gaps(question, "Zircon 1.5.2 added signed commits to the repository.") == gap
    assert _gaps(question, "The Zircon repository moved its commits in October 2009.") == gap
    assert _gaps(question, "Zircon commits since 2.6.23-rc3 are signed in the repository.") == gap
    assert _gaps(question, "The Zircon repository holds 55733 commits.") == []


def test_a_cross_reference_to_a_part_of_a_document_is_no_figure():
    question = "How many threads can receive from one Zircon channel?"
    gap = [f"No quoted excerpt states a figure for: {question}"]
    assert _gaps(question, "Zircon channels, as you'll recall from Chapter 16, are queues.") == gap
    assert _gaps(question, "See Listing 16-3 and Section 2.4 on Zircon channel receivers.") == gap
    assert _gaps(question, "A Zircon channel's receivers are described on page 12.") == gap
    assert _gaps(question, "A Zircon channel can have 2 receiving threads at most.") == []


def test_the_number_of_a_section_or_a_step_is_no_figure():
    """"2. Details" labels a part of the page and "3. Attach …" a step, as "Chapter 16" does."""
    question = "How many databases can one Zircon connection attach?"
    gap = [f"No quoted excerpt states a figure for: {question}"]
    limit = "There is a limit to the databases one Zircon connection can attach."
    evidence = make_evidence("e1", limit, "q1", heading="2. Details")
    report = ExtractiveModelClient().synthesize(
        synthesis_request(make_plan(question), [evidence])
    ).value
    assert [g.description for g in report.gaps if g.question_id == "q1"] == gap
    assert _gaps(question, "3. Attach the Zircon databases one connection needs.") == gap
    assert _gaps(question, "IV. Zircon connections attach databases on demand.") == gap
    assert _gaps(question, "A Zircon connection can attach 10 databases by default.") == []
    assert _gaps(question, "10. A Zircon connection can attach 12 databases.") == []


def test_a_date_or_a_release_is_no_length_of_time():
    question = "How long does Zircon keep old drafts before pruning them?"
    gap = [f"No quoted excerpt states a length of time for: {question}"]
    assert _gaps(question, "Zircon drafts: pruning old ones, asked 12 June 2023.") == gap
    assert _gaps(question, "Zircon 2.4.1 prunes old drafts on start-up.") == gap
    assert _gaps(question, "Zircon prunes old drafts after 90 days.") == []
    assert _gaps(question, "Zircon keeps old drafts for a week before pruning them.") == []


def test_a_head_noun_asking_an_amount_wants_a_figure():
    # "the maximum …" and "the size of …" ask an amount as "how many" does (question_kind)
    for question in (
        "What is the maximum delay the Zircon scheduler accepts?",
        "What is the size of a Zircon repository pack?",
    ):
        gap = [f"No quoted excerpt states a figure for: {question}"]
        assert _gaps(question, "The Zircon scheduler accepts a delay for each repository pack.") == gap
        assert _gaps(question, "A Zircon repository pack and a scheduler delay hold at most 4096 units.") == []


def test_a_question_whose_subject_no_evidence_names_labels_no_answer():
    question = "How do I deploy a Quillpad server on Tallowbox?"
    plan = make_plan(question)
    evidence = [
        make_evidence("e1", "To deploy a Quillpad server, run it behind a reverse proxy.", "q1"),
        make_evidence("e2", "Deploy the Quillpad server with its own image.", "q1", source_id="s2"),
    ]
    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value
    labels = [s.label for section in report.sections for s in section.statements if s.label]
    assert labels and "Answer" not in labels
    # The summary states the gap instead of leading with a quotation.
    assert [s.kind for s in report.executive_summary] == ["caveat"]
    assert "Tallowbox" in report.executive_summary[0].text


def test_a_release_of_a_name_the_question_names_is_no_count():
    question = "How many commits does the Zircon repository have?"
    excerpt = "Tests on merge commits from Zircon 2.6 development found fewer conflicts."
    assert _gaps(question, excerpt) == [f"No quoted excerpt states a figure for: {question}"]
    # A figure beside the release still counts.
    assert _gaps(question, "Zircon 2.6 development had 41,000 commits in its repository.") == []


def test_what_is_asked_may_stand_in_the_page_address_of_the_quotation():
    from research.engine.gaps import unanswered

    question = "Which Ferrite version do I need for the examples in the Ferrite book?"
    item = make_evidence("e1", "This text assumes you are using Ferrite 2.4 or later.", "q1")
    elsewhere = {"s1": SourceSummary(id="s1", title="Ferrite", url="https://ferrite.dev/")}
    on_the_book = {"s1": SourceSummary(id="s1", title="Ferrite", url="https://ferrite.dev/book/")}
    assert unanswered(question, [item], elsewhere).startswith("No quoted excerpt states")
    assert unanswered(question, [item], on_the_book) == ""
