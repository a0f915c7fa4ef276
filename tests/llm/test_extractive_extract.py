"""The extractive extractor: verbatim, relevant, diverse passages."""

from itertools import combinations
from pathlib import Path

from research.engine.contracts import EXCERPT_MAX_CHARS
from research.engine.question_terms import NEAR_DUPLICATE, jaccard
from research.engine.text import content_terms
from research.llm.extractive import ExtractiveModelClient
from research.llm.text import segment_text
from tests.llm.factories import extraction_request

FIXTURES = Path(__file__).parent / "fixtures"
ARTICLE = (FIXTURES / "heat_pumps_vs_boilers.txt").read_text()
REPORT = (FIXTURES / "river_report.txt").read_text()
INJECTED = (FIXTURES / "injected_page.txt").read_text()
ARTICLE_TITLE = "Heat pumps or gas boilers? What the Brennock household survey found"


def _extract(text: str, *questions: str, **options):
    return ExtractiveModelClient().extract(extraction_request(text, *questions, **options))


def test_excerpts_are_verbatim_spans_of_the_snapshot():
    result = _extract(
        ARTICLE,
        "What do heat pumps cost to run compared with gas boilers?",
        "How much carbon dioxide do heat pumps and gas boilers emit?",
        "How much does installing a heat pump cost?",
        title=ARTICLE_TITLE,
    )

    assert result.value.evidence
    for item in result.value.evidence:
        assert item.excerpt in ARTICLE
        assert item.excerpt == item.excerpt.strip()
        assert len(item.excerpt) <= EXCERPT_MAX_CHARS
    assert result.usage.model_calls == 1
    assert result.usage.input_tokens == result.usage.output_tokens == 0


def test_the_most_relevant_passage_answers_each_question():
    evidence = _extract(
        ARTICLE,
        "How much carbon dioxide do heat pumps and gas boilers emit?",
        "How much does installing a heat pump cost?",
        title=ARTICLE_TITLE,
    ).value.evidence

    best = {qid: next(e for e in evidence if qid in e.question_ids) for qid in ("q1", "q2")}
    assert "0.6 tonnes of carbon dioxide" in best["q1"].excerpt
    assert "between 9,000 and 14,000 euros" in best["q2"].excerpt
    assert all(item.relevance >= 0.5 and item.stance == "supports" for item in best.values())


def test_near_duplicate_sentences_are_not_both_selected():
    evidence = _extract(
        ARTICLE, "What do heat pumps and gas boilers cost to run?", title=ARTICLE_TITLE
    ).value.evidence

    running_cost_quotes = [e for e in evidence if "1,130 euros" in e.excerpt]
    assert len(running_cost_quotes) == 1
    for first, second in combinations(evidence, 2):
        overlap = jaccard(set(content_terms(first.excerpt)), set(content_terms(second.excerpt)))
        assert overlap < NEAR_DUPLICATE


def test_a_sentence_that_points_back_is_quoted_with_the_sentence_before():
    evidence = _extract(
        ARTICLE,
        "Why did the running cost difference narrow in the coldest month?",
        title=ARTICLE_TITLE,
    ).value.evidence

    narrowed = next(e for e in evidence if "It narrowed in the coldest month" in e.excerpt)
    assert narrowed.excerpt.startswith("The difference comes mostly from efficiency")


def test_hard_wrapped_text_and_tables_are_quoted_exactly():
    evidence = _extract(
        REPORT,
        "How has nitrate in the lower Aven changed since 2020?",
        "On how many days did sewage overflows discharge in 2023?",
        title="Lower Aven river quality report 2023",
    ).value.evidence

    table = next(e for e in evidence if "31.4" in e.excerpt)
    assert table.excerpt.startswith("Annual mean nitrate at Aven Bridge")
    assert table.excerpt.endswith("25.6")
    overflow = next(e for e in evidence if "q2" in e.question_ids)
    assert "61 days in 2023" in overflow.excerpt
    assert "\n" in overflow.excerpt  # the line breaks of the snapshot are kept, not rewritten
    assert all(item.excerpt in REPORT for item in evidence)


def test_passages_that_only_name_the_subject_are_not_evidence():
    evidence = _extract(
        REPORT, "How many salmon returned to the Aven?", title="Lower Aven river quality report"
    ).value.evidence

    assert [e.excerpt for e in evidence] == [
        "Salmon returned to the upper tributaries for the first time since\n2009."
    ]


def test_unrelated_questions_get_no_evidence():
    evidence = _extract(
        ARTICLE, "What is the population of Mars?", title=ARTICLE_TITLE
    ).value.evidence

    assert evidence == []


def test_the_item_limit_is_respected():
    evidence = _extract(
        ARTICLE,
        "What do heat pumps cost to run?",
        "How noisy are heat pumps?",
        "What do heat pumps emit?",
        title=ARTICLE_TITLE,
        max_items=2,
    ).value.evidence

    assert len(evidence) == 2


def test_an_overlong_sentence_is_cut_but_stays_verbatim():
    long_sentence = (
        "Heat pumps save money, "
        + ", ".join(f"according to survey {n} of household heating costs" for n in range(60))
        + "."
    )

    evidence = _extract(long_sentence, "Do heat pumps save money on heating costs?").value.evidence

    assert len(evidence) == 1
    assert len(evidence[0].excerpt) <= EXCERPT_MAX_CHARS
    assert long_sentence.startswith(evidence[0].excerpt)


def test_instructions_inside_a_page_are_just_text_to_the_extractor():
    evidence = _extract(INJECTED, "How much did the Kessel harbour tunnel cost?").value.evidence

    assert [e.excerpt for e in evidence][0] == (
        "The tunnel cost 640 million euros, 15 per cent more than budgeted."
    )
    assert all(e.excerpt in INJECTED for e in evidence)


def test_empty_snapshots_give_no_evidence():
    assert _extract("", "Anything?").value.evidence == []


def test_segments_keep_exact_offsets_headings_and_abbreviations():
    text = "Costs\nDr. Lee said e.g. 3.5 kW units cost less. A second sentence follows here.\n"

    segments = segment_text(text)

    assert [s.kind for s in segments] == ["heading", "sentence", "sentence"]
    assert text[segments[1].start : segments[1].end] == "Dr. Lee said e.g. 3.5 kW units cost less."
    assert segments[2].heading == "Costs"


FARES = """Fare changes in 2025
Published 20 November 2024 by the Fares Division.
The changes below apply to trains and buses. They take effect in three steps during 2025.
From 5 January 2025
The adult single fare within zone 1 rises from $2.60 to $2.75. The daily cap for adults who pay with a card falls from $9.20 to $8.40.
From 1 March 2025
The 20 per cent off-peak discount ends on 28 February 2025. From 1 March 2025 it is replaced by a weekly cap of $32.00 for adults.
From 1 September 2025
Children and young people under 18 travel free with a registered youth card from 1 September 2025.
What does not change
Paper tickets and zone boundaries stay as they are.
"""


def test_a_date_question_is_answered_by_dated_passages_not_by_the_word_date():
    evidence = _extract(
        FARES, "On which dates do fare changes take effect in 2025?", title="Fare changes in 2025"
    ).value.evidence

    quoted = " ".join(item.excerpt for item in evidence)
    # Dated by their own words or by the heading they stand under.
    for fact in ("$2.75", "$8.40", "28 February 2025", "$32.00", "1 September 2025"):
        assert fact in quoted
    assert "Published 20 November 2024" not in quoted
    assert "Paper tickets" not in quoted


def test_an_abbreviation_the_page_defines_counts_as_its_long_form():
    text = (
        "Method\nWe report the seasonal performance factor (SPF) at two boundaries.\n"
        "Results\nAcross both seasons the mean SPF at boundary H2 was 2.85 in the monitored homes.\n"
        "The homes were visited twice a year by the research team for a check.\n"
    )

    evidence = _extract(
        text,
        "What seasonal performance factor do heat pumps achieve?",
        title="Heat pumps in cold winters",
    ).value.evidence

    assert any("2.85" in item.excerpt for item in evidence)


def test_a_how_long_question_is_answered_by_a_duration_even_without_digits():
    text = (
        "Sediment study finds lake recovery will be slow\n"
        "The team took sediment cores across the lake in two summers.\n"
        "The model suggests that even if external loads were halved, phosphorus concentrations "
        "would stay high for around a decade because of the sediment store.\n"
        "The study was funded by the regional research council and the water board.\n"
    )

    evidence = _extract(
        text,
        "How long could phosphorus released from lake sediments delay the recovery of the lake?",
        title="Sediment study finds lake recovery will be slow",
    ).value.evidence

    assert any("around a decade" in item.excerpt for item in evidence)
    assert not any("funded" in item.excerpt for item in evidence)


def test_a_comparison_is_answered_by_the_passage_that_states_both_sides():
    # The question's frame ("what did … report about") is ordinary words with a low weight, not
    # a rule: the sentence stating the figure against the forecast outranks the one that only
    # shares the frame's verb.
    text = (
        "Line 3 extension falls short of forecast\n"
        "The council's scrutiny committee will report on the extension at a public meeting.\n"
        "The new stations handled 48,200 weekday riders, fewer than the 61,000 weekday riders "
        "in the forecast of the business case.\n"
    )

    evidence = _extract(
        text,
        "What did the newspaper report about Line 3 extension riders compared with the forecast?",
        title="Line 3 extension falls short of forecast",
    ).value.evidence

    assert "48,200" in evidence[0].excerpt


def test_numbered_and_shouted_title_lines_are_headings_not_quotable_sentences():
    text = (
        "SOLVIK ENERGY AGENCY - STATISTICAL NOTE SN-2023-07\n"
        "Warm Homes heat pump grants, 2019 to June 2023\n\n"
        "3. Ridership on the Line 3 extension\n"
        "The five new stations recorded 48,200 boardings per weekday.\n\n"
        "Steps:\n1. Apply online.\n2. Wait for the decision.\n"
    )

    segments = segment_text(text)
    kinds = {text[s.start : s.end]: s.kind for s in segments}

    assert kinds["SOLVIK ENERGY AGENCY - STATISTICAL NOTE SN-2023-07"] == "heading"
    assert kinds["3. Ridership on the Line 3 extension"] == "heading"
    assert segments[3].heading == "3. Ridership on the Line 3 extension"
    assert "item" in {kinds.get("1. Apply online."), kinds.get("Apply online.")}


def test_on_a_page_about_the_topic_a_figure_answers_only_questions_that_want_one():
    text = (
        "Warm Homes heat pump grant: results 2019-2023\n"
        "Air-to-water heat pumps made up 62 per cent of the grants paid since 2019.\n"
        "Exhaust-air heat pumps are no longer eligible for applications received from 2024.\n"
        "The agency publishes the results of the grant every spring on its website.\n"
    )
    title = "Warm Homes heat pump grant: results 2019-2023"

    words = _extract(text, "Which heat pumps can no longer get the Warm Homes grant?", title=title)
    figures = _extract(text, "How many Warm Homes heat pump grants were paid?", title=title)

    # The figure may be kept as context for the first question (its common words, "longer"
    # and "get", weigh less than "heat pumps", which the figure's sentence names), never as
    # an answer to it.
    assert words.value.evidence[0].excerpt.startswith("Exhaust-air ")
    assert words.value.evidence[0].stance == "supports"
    assert all(e.stance != "supports" for e in words.value.evidence if "62 per cent" in e.excerpt)
    assert any("62 per cent" in e.excerpt for e in figures.value.evidence)


_BLOCKED_PAGE = """<html><head><title>The global interpreter lock</title></head><body><main>
<h1>The global interpreter lock</h1>
<p>The global interpreter lock is always released when doing blocking I/O.</p>
<p>Past efforts to remove the global interpreter lock slowed single threads by 30 percent.</p>
<ul><li>The lock protects reference counts of every object.</li>
<li>Extension modules may release the lock around long computations.</li></ul>
<pre>import threading
# the global interpreter lock is released while this thread sleeps on I/O
threading.Thread(target=sleep_on_io).start()</pre>
<table><tr><th>Version</th><th>Lock change</th></tr>
<tr><td>3.2</td><td>new lock implementation</td></tr>
<tr><td>3.13</td><td>optional free-threaded lock build</td></tr></table>
<p>The interpreter checks the lock every five milliseconds by default in current versions.</p>
</main></body></html>"""


def test_passages_stay_inside_the_blocks_of_the_page_and_never_quote_code():
    from research.engine.contracts import ExtractionRequest, PlanQuestion
    from research.sources.extract_html import extract_html

    page = extract_html(_BLOCKED_PAGE.encode(), url="https://docs.example.org/gil")
    code = next(b for b in page.blocks if b.kind == "code")
    request = ExtractionRequest(
        source_id="src-1",
        title=page.title,
        kind="html",
        text=page.text,
        blocks=page.blocks,
        questions=[
            PlanQuestion(id="q1", text="When is the global interpreter lock released?"),
            PlanQuestion(id="q2", text="Which versions changed the lock?"),
        ],
    )
    evidence = ExtractiveModelClient().extract(request).value.evidence

    assert evidence
    for item in evidence:
        start = page.text.index(item.excerpt)
        end = start + len(item.excerpt)
        inside = [b for b in page.blocks if b.start < end and start < b.end]
        assert code not in inside, item.excerpt
        if len(inside) > 1:
            # Only a table is quoted across blocks, and then with its breaks.
            assert all(b.kind == "cell" for b in inside), item.excerpt
            assert "\t" in item.excerpt
        else:
            assert inside[0].start <= start and end <= inside[0].end
    assert not any("I/O. Past" in item.excerpt for item in evidence)
    assert any(item.excerpt.startswith("Version\tLock change\n3.2") for item in evidence)


def test_a_procedure_question_quotes_a_whole_code_block_and_others_never_do():
    from research.engine.contracts import ExtractionRequest, PlanQuestion
    from research.sources.extract_html import extract_html

    html = b"""<html><head><title>Installing the tool</title></head><body><main>
<h1>Installing the tool</h1>
<p>The tool runs on Linux and macOS and needs no compiler.</p>
<p>To install the tool on Linux, run the following command in a terminal:</p>
<pre>curl -fsSL https://get.example.org/install.sh | sh</pre>
<p>The installer puts the tool in your home directory.</p>
</main></body></html>"""
    page = extract_html(html, url="https://docs.example.org/install")
    code = next(b for b in page.blocks if b.kind == "code")

    def quotes(question: str) -> list[str]:
        request = ExtractionRequest(
            source_id="src-1",
            title=page.title,
            kind="html",
            text=page.text,
            blocks=page.blocks,
            questions=[PlanQuestion(id="q1", text=question)],
        )
        return [e.excerpt for e in ExtractiveModelClient().extract(request).value.evidence]

    whole = page.text[code.start : code.end]
    assert whole in quotes("How do I install the tool on Linux?")
    assert not any("curl" in excerpt for excerpt in quotes("Which systems does the tool run on?"))


def test_a_code_block_holding_the_quoted_error_is_quoted_for_a_question_about_it():
    from research.engine.contracts import ExtractionRequest, PlanQuestion
    from research.sources.extract_html import extract_html

    html = b"""<html><head><title>The session store</title></head><body><main>
<h1>The session store</h1>
<p>The session store keeps one record per visitor and flushes it after every request.</p>
<p>If you read a record after the store has been closed, you get this error message:</p>
<pre>StoreError: Reading from a closed session store.

The store was closed before the record was read.
Open it again with store.reopen() first.</pre>
<p>The store can also be shared between workers of one host.</p>
</main></body></html>"""
    page = extract_html(html, url="https://docs.example.org/store")
    code = next(b for b in page.blocks if b.kind == "code")

    def quotes(question: str) -> list[str]:
        request = ExtractionRequest(
            source_id="src-1",
            title=page.title,
            kind="html",
            text=page.text,
            blocks=page.blocks,
            questions=[PlanQuestion(id="q1", text=question)],
        )
        return [e.excerpt for e in ExtractiveModelClient().extract(request).value.evidence]

    whole = page.text[code.start : code.end]
    asked = quotes('My job fails with "StoreError: Reading from a closed session store". Why?')
    assert whole in asked
    # The same words unquoted are no phrase the asker saw: the code stays out.
    unquoted = quotes("Why does my job fail with a store error when reading a closed session store?")
    assert not any("reopen" in excerpt for excerpt in unquoted)


def test_quoted_phrases_are_the_quoted_strings_of_two_terms_or_more():
    from research.engine.question_terms import holds_phrase, quoted_phrases

    phrases = quoted_phrases('Why does it print \u201cdisk quota exceeded\u201d and not "lazy"?')
    assert phrases == [tuple(content_terms("disk quota exceeded"))]
    assert holds_phrase(content_terms("Error: Disk quota exceeded (code 122)."), phrases[0])
    assert not holds_phrase(content_terms("The disk was exceeded by its quota."), phrases[0])
    assert quoted_phrases("Don't the user's settings win?") == []


def test_the_room_a_question_leaves_unused_goes_to_the_others():
    from research.llm.selection import QuestionText, select_passages

    text = (
        "Harbour ferries\n\n"
        "A single ticket is sold at the pier kiosk for one crossing.\n\n"
        "A return ticket is valid until midnight of the day of purchase.\n\n"
        "A day ticket allows any number of crossings on one day.\n\n"
        "A family ticket admits two adults and three children on one crossing.\n\n"
        "A season ticket is sold only at the main office for a whole season.\n\n"
        "The cafe on the north pier opens at eight in the morning."
    )
    questions = [
        QuestionText("q1", "Which ferry tickets cover a crossing?"),
        QuestionText("q2", "Where do the crews of the ferry train?"),
    ]
    passages = select_passages(text, questions, title="Harbour ferries", max_items=4)

    # The page says nothing of the crews: the first question takes more than its half (2).
    quoted = [text[p.start : p.end] for p in passages]
    assert len(quoted) == 3 and all("crossing" in excerpt for excerpt in quoted)
    assert all(p.question_ids == ("q1",) for p in passages)


def test_a_strong_match_of_the_quoted_error_does_not_cut_the_passages_saying_what_to_do():
    from research.llm.selection import QuestionText, select_passages
    from research.sources.extract_html import extract_html

    html = b"""<html><head><title>Handles in Quill</title></head><body><main>
<h1>Handles in Quill</h1>
<p>Using a handle after it was assigned to another name fails:</p>
<pre>quill run
error[Q0101]: read of moved handle `h1`
  h2 = h1 moved the handle here</pre>
<p>Assignment moves the handle, so h1 is no longer valid once h2 holds it.</p>
<p>To keep using h1, duplicate the handle before the assignment.</p>
<p>Handles are cheap to pass around inside one task.</p>
</main></body></html>"""
    page = extract_html(html, url="https://docs.example.org/handles")
    question = (
        'After h2 = h1, using h1 gives "error[Q0101]: read of moved handle": '
        "how can I keep using both handles?"
    )
    passages = select_passages(
        page.text, [QuestionText("q1", question)], title=page.title, blocks=page.blocks
    )
    quoted = [page.text[p.start : p.end] for p in passages]
    assert any("error[Q0101]" in excerpt for excerpt in quoted)
    assert any("duplicate the handle before" in excerpt for excerpt in quoted)
