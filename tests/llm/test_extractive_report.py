"""The extractive report: quotations grouped by question, cited by evidence id, gaps stated."""

from research.engine.contracts import ContradictionCandidate, ContradictionPosition, ReportGap
from research.llm.extractive import ExtractiveModelClient
from tests.llm.factories import make_evidence, make_plan, synthesis_request

PLAN = make_plan(
    "What do heat pumps cost to run?",
    "What do gas boilers cost to run?",
    "How noisy are heat pumps?",
)
EVIDENCE = [
    make_evidence(
        "e1", "Heat pumps cost an average of 1,130 euros a year to run.", "q1", source_id="s1"
    ),
    make_evidence(
        "e2",
        "Heat pumps cost an average of 1,130 euros a year to run, the survey found.",
        "q1",
        source_id="s2",
    ),
    make_evidence(
        "e3",
        "On a time-of-use tariff heat pump owners paid 14 per cent less.",
        "q1",
        source_id="s1",
        relevance=0.7,
    ),
    make_evidence(
        "e4", "Gas boilers cost an average of 1,420 euros a year to run.", "q2", source_id="s3"
    ),
]


def _report(**extra):
    return ExtractiveModelClient().synthesize(synthesis_request(PLAN, EVIDENCE, **extra))


def test_the_report_is_labelled_extractive_and_quotes_the_evidence():
    result = _report()
    report = result.value

    assert report.mode == "extractive"
    assert report.title.startswith("Extractive report:")
    assert any("no language model" in line for line in report.methodology)
    texts = [s.text for s in report.statements() if s.kind == "finding"]
    assert "\u201cGas boilers cost an average of 1,420 euros a year to run.\u201d" in texts
    assert result.usage.model_calls == 1 and result.usage.output_tokens == 0


def test_it_cites_only_the_evidence_ids_it_was_given():
    report = _report().value

    given = {item.id for item in EVIDENCE}
    cited = {eid for statement in report.statements() for eid in statement.evidence_ids}
    cited |= {eid for item in report.contradictions for eid in item.evidence_ids}
    assert cited <= given
    assert all(s.evidence_ids for s in report.statements() if s.kind == "finding")
    assert "http" not in report.model_dump_json()


def test_sections_follow_the_questions_and_gaps_are_stated():
    report = _report().value

    assert [section.id for section in report.sections] == ["q1", "q2"]
    assert [(gap.question_id, gap.description) for gap in report.gaps] == [
        ("q3", "No verified evidence was found for: How noisy are heat pumps?")
    ]


def test_near_identical_quotes_from_two_sources_become_one_corroborated_finding():
    section = _report().value.sections[0]

    findings = [s for s in section.statements if s.kind == "finding"]
    # Equal quotes are ordered by their text, not by id (ids hash the run).
    assert sorted(findings[0].evidence_ids) == ["e1", "e2"]
    assert findings[0].confidence == "high"
    assert [sorted(s.evidence_ids) for s in findings] == [["e1", "e2"], ["e3"]]


def test_a_question_resting_on_one_source_gets_a_caveat():
    section = _report().value.sections[1]

    assert [s.kind for s in section.statements] == ["finding", "caveat"]
    assert "single source" in section.statements[1].text


def test_the_summary_holds_the_best_answer_of_each_required_question_or_its_gap():
    summary = _report().value.executive_summary

    # One statement per required question, in plan order: the question without evidence
    # is summarised by its gap sentence, never by another question's quotation.
    assert [sorted(s.evidence_ids) for s in summary] == [["e1", "e2"], ["e4"], []]
    assert [s.kind for s in summary] == ["finding", "finding", "caveat"]
    assert summary[2].text == "No verified evidence was found for: How noisy are heat pumps?"
    assert all(s.label == "" for s in summary)
    assert len({s.claim_id for s in _report().value.statements()}) == len(
        _report().value.statements()
    )


def test_known_gaps_contradictions_and_partial_runs_are_carried_over():
    contradiction = ContradictionCandidate(
        key="k1",
        claim_key="heat pump running cost",
        positions=[
            ContradictionPosition(value="1130", stance="supports", evidence_ids=["e1"], scopes=[]),
            ContradictionPosition(value="980", stance="supports", evidence_ids=["e9"], scopes=[]),
        ],
        evidence_ids=["e1", "e9"],
        scope_differences={"as_of": ["2023", "2021"]},
    )

    report = _report(
        partial=True,
        contradictions=[contradiction],
        gaps=[ReportGap(question_id="q3", description="Budget ran out before q3.")],
    ).value

    assert report.partial is True
    assert [gap.description for gap in report.gaps] == ["Budget ran out before q3."]
    assert report.contradictions[0].evidence_ids == ["e1"]
    assert (
        "1130" in report.contradictions[0].summary and "as_of" in report.contradictions[0].summary
    )
    assert any("partial" in line for line in report.methodology)


def test_no_evidence_at_all_gives_a_report_of_gaps():
    report = ExtractiveModelClient().synthesize(synthesis_request(PLAN, [])).value

    assert report.sections == []
    assert [gap.question_id for gap in report.gaps] == ["q1", "q2", "q3"]
    # The summary states each required question's gap: it implies no answer.
    assert [s.kind for s in report.executive_summary] == ["caveat"] * 3
    assert [s.text for s in report.executive_summary] == [g.description for g in report.gaps]


def test_long_question_ids_still_give_valid_claim_ids():
    long_id = "q" + "x" * 63
    plan = make_plan("What do heat pumps cost to run?")
    plan.questions[0].id = long_id
    evidence = [make_evidence("e1", "Heat pumps cost 1,130 euros a year.", long_id)]

    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value

    assert report.sections[0].id == long_id
    assert [s.claim_id for s in report.sections[0].statements] == ["s1-1", "s1-single-source"]


def test_a_heading_that_dates_a_quotation_is_quoted_before_it():
    plan = make_plan("What fare changes take effect in 2025, and on which dates?")
    evidence = [
        make_evidence(
            "e1",
            "The adult single fare within zone 1 rises from $2.60 to $2.75.",
            "q1",
            heading="From 5 January 2025",
        ),
        make_evidence(
            "e2",
            "Fares for the airport express are set separately.",
            "q1",
            heading="2.1 What does not change",
        ),
        make_evidence(
            "e3", "The off-peak discount ends on 28 February 2025.", "q1", heading="Fares 2025"
        ),
    ]

    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value

    texts = {s.evidence_ids[0]: s.text for s in report.sections[0].statements if s.evidence_ids}
    assert texts["e1"] == (
        "Under \u201cFrom 5 January 2025\u201d: "
        "\u201cThe adult single fare within zone 1 rises from $2.60 to $2.75.\u201d"
    )
    # A section number is not a figure, and a heading adding nothing stays out.
    assert texts["e2"] == "\u201cFares for the airport express are set separately.\u201d"
    assert texts["e3"] == "\u201cThe off-peak discount ends on 28 February 2025.\u201d"


def test_a_definition_quoted_without_its_term_is_quoted_under_it():
    plan = make_plan("Which function limits a value to a range, and what does it return?")
    section = (
        "Functions of the Tarn expression language, in the order the manual lists them, with "
        "their arguments and the values they return"
    )
    evidence = [
        make_evidence(
            "e1",
            "Returns the value moved into the range from lo to hi.",
            "q1",
            heading="Functions \u203a clamp(x, lo, hi)",
        ),
        make_evidence(
            "e2",
            "The function clamp(x, lo, hi) never raises an error.",
            "q1",
            heading="Functions \u203a clamp(x, lo, hi)",
        ),
        make_evidence(
            "e3",
            "Rounds the value to the nearest even integer.",
            "q1",
            heading=f"{section} \u203a round_even(x)",
        ),
    ]

    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value

    texts = {s.evidence_ids[0]: s.text for s in report.sections[0].statements if s.evidence_ids}
    assert texts["e1"] == (
        "Under \u201cFunctions \u203a clamp(x, lo, hi)\u201d: "
        "\u201cReturns the value moved into the range from lo to hi.\u201d"
    )
    # A description naming its term needs no heading.
    assert texts["e2"] == "\u201cThe function clamp(x, lo, hi) never raises an error.\u201d"
    # Section and term too long to show together: the term alone.
    assert texts["e3"] == (
        "Under \u201cround_even(x)\u201d: \u201cRounds the value to the nearest even integer.\u201d"
    )


def test_loose_matches_fill_the_room_the_answers_leave_after_them():
    plan = make_plan("How much does the grant pay?")
    loose = make_evidence("e0", "Our experts explain how much the grant pays.", "q1", relevance=0.45)
    evidence = [
        loose,
        make_evidence("e1", "The grant pays 25 per cent of the installed cost.", "q1"),
        make_evidence("e2", "The maximum grant is SVC 4,000 per home.", "q1", source_id="s2"),
    ]

    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value

    findings = [s for s in report.sections[0].statements if s.kind == "finding"]
    # Two answers leave room in a section of ten: the loose match is shown, after them, and
    # is no answer.
    assert [s.evidence_ids[0] for s in findings][-1] == "e0"
    assert {s.evidence_ids[0] for s in findings} == {"e0", "e1", "e2"}
    assert findings[-1].label != "Answer"

    # Ten answers fill the section: no room is left for the loose match.
    answers = [
        make_evidence(f"a{n}", f"Survey {n} found the grant pays {n},130 euros.", "q1", source_id=f"s{n}")
        for n in range(1, 11)
    ]
    full = ExtractiveModelClient().synthesize(synthesis_request(plan, [loose, *answers])).value
    cited = {e for s in full.sections[0].statements for e in s.evidence_ids}
    assert "e0" not in cited


def test_a_report_with_one_question_shows_more_of_its_quotations():
    plan = make_plan("What do heat pumps cost to run?")
    evidence = [
        make_evidence(f"e{n}", f"Survey {n} found running costs of {n},130 euros a year.", "q1")
        for n in range(1, 13)
    ]

    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value

    findings = [s for s in report.sections[0].statements if s.kind == "finding"]
    assert len(findings) == 10


def test_a_full_section_passes_quotations_to_another_question_they_answer():
    plan = make_plan(
        "What fare changes take effect in 2025?", "On which dates do fare changes take effect?"
    )
    evidence = [
        make_evidence(
            f"e{n}", f"From {n} March 2025 the fare for zone {n} rises by {n} cents.", "q1", "q2"
        )
        for n in range(1, 10)
    ]

    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value

    shown = {e for section in report.sections for s in section.statements for e in s.evidence_ids}
    assert shown == {item.id for item in evidence}


def _gaps_for(question: str, excerpt: str) -> list[str]:
    plan = make_plan(question)
    evidence = [make_evidence("e1", excerpt, "q1", source_id="s1")]
    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value
    return [gap.description for gap in report.gaps if gap.question_id == "q1"]


def test_quotations_without_the_value_asked_for_are_reported_as_a_gap():
    assert _gaps_for(
        "On what date was Zircon 4 released?", "Zircon 4 brings a new parser and faster builds."
    ) == ["No quoted excerpt states a date for: On what date was Zircon 4 released?"]
    # "may" is the modal verb unless a day or a year stands beside it.
    assert _gaps_for(
        "On what date was Zircon 4 released?", "Zircon 4 may be released soon, the team says."
    ) == ["No quoted excerpt states a date for: On what date was Zircon 4 released?"]
    assert _gaps_for("On what date was Zircon 4 released?", "Zircon 4 was released on 3 May.") == []
    assert (
        _gaps_for("On what date was Zircon 4 released?", "Zircon 4 was released on 3 March 2021.")
        == []
    )


def test_the_digits_of_an_address_a_footnote_or_a_manual_section_are_no_value():
    question = "How large can a repository be on Zircon's free plan?"
    gap = [f"No quoted excerpt states a figure for: {question}"]
    assert (
        _gaps_for(question, "[2] https://zircon.example/docs/v3/limits The Zircon protocol") == gap
    )
    assert _gaps_for(question, "Zircon's plan pages are listed in zircon-plans(7).") == gap
    assert _gaps_for(question, "Apply Zircon patches with git-am(1) from zircon.example/r2.") == gap
    assert _gaps_for(question, "Zircon repositories on the free plan can hold 5 GB.") == []


def test_a_value_about_something_else_than_what_is_asked_is_no_answer():
    question = "How large is the otter population of Lake Vellmar?"
    assert _gaps_for(
        question, "Lake Vellmar has been sampled for nitrogen every month since 1998."
    ) == [f"No quoted excerpt states a figure for: {question}"]
    assert (
        _gaps_for(question, "About 40 otters live around Lake Vellmar, the 2021 survey found.")
        == []
    )


def test_quotations_that_never_name_the_subject_asked_about_are_reported_as_a_gap():
    gaps = _gaps_for(
        "Does Quillpad keep old drafts forever?", "Old drafts are pruned after ninety days."
    )
    assert gaps and gaps[0].startswith("No quoted excerpt or source names")
    assert (
        _gaps_for(
            "Does Quillpad keep old drafts forever?",
            "Quillpad prunes old drafts after ninety days.",
        )
        == []
    )


def _code_evidence(evidence_id: str, code: str, question_id: str = "q1"):
    item = make_evidence(evidence_id, code, question_id, source_id="s2")
    return item.model_copy(update={"locator": item.locator.model_copy(update={"code": True})})


def _write(plan, evidence):
    return ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value


def test_the_passage_answering_the_question_leads_its_section_labelled():
    plan = make_plan("On what date was Zircon 4 released?")
    evidence = [
        make_evidence("e1", "Zircon 4 brings a new parser and faster builds.", "q1", relevance=0.9),
        make_evidence("e2", "Zircon 4 was released on 3 March 2021.", "q1", relevance=0.7),
    ]

    report = _write(plan, evidence)

    findings = [s for s in report.sections[0].statements if s.kind == "finding"]
    # The stronger keyword match carries no date: the dated passage answers, so it leads.
    assert [(s.label, s.evidence_ids) for s in findings] == [
        ("Answer", ["e2"]),
        ("Supporting", ["e1"]),
    ]
    assert [s.evidence_ids for s in report.executive_summary] == [["e2"]]


def test_without_a_direct_answer_the_summary_states_the_gap():
    plan = make_plan("On what date was Zircon 4 released?")
    evidence = [make_evidence("e1", "Zircon 4 brings a new parser and faster builds.", "q1")]

    report = _write(plan, evidence)

    assert [s.label for s in report.sections[0].statements if s.kind == "finding"] == ["Supporting"]
    assert [(s.kind, s.text) for s in report.executive_summary] == [
        ("caveat", "No quoted excerpt states a date for: On what date was Zircon 4 released?")
    ]


def test_a_comparison_question_shows_one_block_per_side():
    plan = make_plan("Which is cheaper to run, heat pumps or gas boilers?")
    evidence = [
        make_evidence("e1", "Gas boilers cost 1,420 euros a year to run.", "q1", source_id="s1"),
        make_evidence("e2", "Heat pumps cost 1,130 euros a year to run.", "q1", source_id="s2"),
        make_evidence(
            "e3", "Heat pumps are cheaper to run than gas boilers.", "q1", source_id="s3"
        ),
    ]

    section = _write(plan, evidence).sections[0]

    labels = {s.evidence_ids[0]: s.label for s in section.statements if s.kind == "finding"}
    assert labels == {"e3": "Answer", "e2": "heat pumps", "e1": "gas boilers"}
    assert [s.label for s in section.statements][:1] == ["Answer"]


def test_code_is_quoted_as_code_only_for_a_usage_question():
    code = "PRAGMA foreign_keys = ON;"
    prose = "Foreign key constraints are disabled by default in SQLite."
    evidence = [
        make_evidence("e1", prose, "q1", source_id="s1"),
        _code_evidence("e2", code),
    ]

    usage = _write(make_plan("How do I enable foreign keys in SQLite?"), evidence)
    other = _write(make_plan("Are foreign keys enforced by default in SQLite?"), evidence)

    usage_texts = [s.text for s in usage.sections[0].statements if s.kind == "finding"]
    assert code in usage_texts  # the code as the page has it, not in quotation marks
    other_cited = {e for s in other.statements() for e in s.evidence_ids}
    assert "e2" not in other_cited and "e1" in other_cited


def test_a_question_with_only_code_for_a_non_usage_question_is_a_gap():
    plan = make_plan("Are foreign keys enforced by default?")

    report = _write(plan, [_code_evidence("e1", "PRAGMA foreign_keys = ON;")])

    assert report.sections == []
    assert report.gaps[0].description.startswith("The evidence found is code")


def test_code_printing_the_quoted_error_is_quoted_for_a_why_question():
    """A session that prints the message the question quotes shows where it comes from, and
    the code around it (the call that changes the limit) answers what to do about it."""
    plan = make_plan('Why does Zorbo print "Possible listener leak detected"?')
    session = (
        "> emitter.setLimit(1);\n> emitter.on('x', f);\n> emitter.on('x', g);\n"
        "(zorbo) Warning: Possible listener leak detected. 2 x listeners added."
    )
    other_code = "emitter.on('x', f);"
    evidence = [
        make_evidence("e1", "Zorbo emitters warn when many listeners are added.", "q1"),
        _code_evidence("e2", session),
        _code_evidence("e3", other_code),
    ]

    report = _write(plan, evidence)

    texts = [s.text for s in report.sections[0].statements if s.kind == "finding"]
    assert session in texts  # shown as code, as the page has it
    cited = {e for s in report.statements() for e in s.evidence_ids}
    assert "e3" not in cited  # code without the quoted string stays out of a why question


def test_the_passage_holding_the_quoted_message_leads_the_section():
    plan = make_plan('My Zorbo script fails with "quota ledger sealed" when it starts: why?')
    # The holder does not name Zorbo and the selector scored it low: the pool ranks it last.
    holder = make_evidence(
        "e0",
        "The error quota ledger sealed means another process holds it.",
        "q1",
        source_id="s0",
        relevance=0.3,
    )
    others = [
        make_evidence(
            f"e{n}",
            f"Zorbo script {n} fails when it starts, and the Zorbo script starts again.",
            "q1",
            source_id=f"s{n}",
            relevance=0.9,
        )
        for n in range(1, 13)
    ]

    report = _write(plan, [*others, holder])

    findings = [s for s in report.sections[0].statements if s.kind == "finding"]
    assert findings[0].evidence_ids == ["e0"]


def test_a_quotation_is_shown_with_the_siblings_its_page_lists_in_the_same_words():
    plan = make_plan("How long does Zorbo keep old ledger entries?")
    evidence = [
        make_evidence(
            "e1", "zorbo expire removes ledger entries older than this; defaults to 90 days.", "q1"
        ),
        # The same frame on the same page, for the entries no branch reaches: it matches the
        # question less well than the loose passages below and alone would not be shown.
        make_evidence(
            "e2",
            "zorbo expire removes ledger entries older than this that no branch reaches, "
            "whichever store holds them; defaults to 30 days.",
            "q1",
            relevance=0.2,
        ),
        make_evidence("e3", "Zorbo keeps old ledger entries for a while.", "q1", source_id="s2"),
        make_evidence("e4", "Zorbo ledger entries are kept in a log.", "q1", source_id="s3"),
    ]

    section = _write(plan, evidence).sections[0]

    cited = [s.evidence_ids for s in section.statements if s.kind == "finding"]
    assert ["e1"] in cited and ["e2"] in cited


def _placed(item, start: int):
    locator = item.locator.model_copy(update={"start": start, "end": start + len(item.excerpt)})
    return item.model_copy(update={"locator": locator})


def test_a_lead_in_ending_in_a_colon_is_shown_with_the_passages_it_announces():
    plan = make_plan("Which ledgers does Zorbo check at start-up?")
    lead = "Zorbo checks the following ledgers at start-up:"
    evidence = [
        _placed(make_evidence("e1", lead, "q1", heading="Start-up"), 0),
        # The list's items repeat none of the question's words; alone they would not be shown.
        _placed(
            make_evidence("e2", "The open ledger.", "q1", relevance=0.1, heading="Start-up"), 60
        ),
        _placed(
            make_evidence("e3", "The spare ledger.", "q1", relevance=0.1, heading="Start-up"), 90
        ),
        make_evidence("e4", "Zorbo checks ledgers often.", "q1", source_id="s2"),
        make_evidence("e5", "Zorbo start-up is fast.", "q1", source_id="s3"),
    ]

    section = _write(plan, evidence).sections[0]

    cited = [s.evidence_ids[0] for s in section.statements if s.kind == "finding"]
    assert cited[cited.index("e1") + 1 : cited.index("e1") + 3] == ["e2", "e3"]


def test_code_extracted_for_two_questions_is_shown_under_the_usage_one():
    plan = make_plan(
        "What does the foreign_keys pragma do?", "How do I enable the foreign_keys pragma?"
    )
    code = _code_evidence("e2", "PRAGMA foreign_keys = ON;")
    code = code.model_copy(update={"question_ids": ["q1", "q2"]})
    evidence = [
        make_evidence("e1", "The foreign_keys pragma enables foreign key checks.", "q1"),
        code,
    ]

    report = _write(plan, evidence)

    cited = {s.id: {e for x in s.statements for e in x.evidence_ids} for s in report.sections}
    assert cited == {"q1": {"e1"}, "q2": {"e2"}}


def test_the_value_asked_for_must_stand_in_a_quotation_about_the_subject():
    plan = make_plan("On what date was Zircon 4 released?")
    evidence = [
        make_evidence("e1", "Zircon 4 brings a new parser and faster builds.", "q1"),
        make_evidence("e2", "Basalt 2 was released on 3 March 2022 with a new linker.", "q1"),
    ]
    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value
    assert [gap.description for gap in report.gaps if gap.question_id == "q1"] == [
        "No quoted excerpt states a date for: On what date was Zircon 4 released?"
    ]


def test_a_quotation_its_own_section_has_no_room_for_is_shown_under_another_it_answers():
    """The quotation about winter costs speaks to the winter question most, but that section
    is full of better-ranked ones; it was extracted for the yearly question too, whose section
    has room, so it is shown there rather than not at all."""
    plan = make_plan(
        "What does the Zorbo heater cost per year?",
        "What does the Zorbo heater cost to run in winter?",
    )
    towns = ["Arlo", "Bexa", "Cira", "Dovo", "Ebro", "Fenn"]
    winter = [
        make_evidence(
            f"w{n}",
            f"Running the Zorbo heater in winter costs {n + 2} euros a day in {town}.",
            "q2",
            source_id=f"s{n}",
        )
        for n, town in enumerate(towns)
    ]
    yearly = [
        make_evidence(
            f"y{n}",
            f"The Zorbo heater costs {300 + n} euros per year in {town}.",
            "q1",
            source_id=f"t{n}",
        )
        for n, town in enumerate(["Gala", "Hume"])
    ]
    both = make_evidence(
        "x",
        "The Zorbo heater costs 40 euros a month in winter.",
        "q1",
        "q2",
        source_id="s9",
        relevance=0.9,
    )
    report = (
        ExtractiveModelClient().synthesize(synthesis_request(plan, [*winter, *yearly, both])).value
    )

    shown = {
        section.id: [s.evidence_ids for s in section.statements if s.kind == "finding"]
        for section in report.sections
    }
    assert ["x"] not in shown["q2"] and len(shown["q2"]) == 6
    assert ["x"] in shown["q1"]


def test_a_quotation_that_ends_by_asking_is_no_answer():
    plan = make_plan("How long does Quillpad keep deleted notes?")
    evidence = [
        make_evidence(
            "e1",
            "I deleted a Quillpad note last month. How long does Quillpad keep deleted notes?",
            "q1",
            relevance=0.95,
        ),
        make_evidence(
            "e2", "Quillpad keeps deleted notes in the bin for 30 days.", "q1", source_id="s2"
        ),
    ]
    report = ExtractiveModelClient().synthesize(synthesis_request(plan, evidence)).value
    labels = {s.evidence_ids[0]: s.label for s in report.sections[0].statements if s.label}
    assert labels == {"e1": "Supporting", "e2": "Answer"}
    assert report.executive_summary[0].evidence_ids == ["e2"]
