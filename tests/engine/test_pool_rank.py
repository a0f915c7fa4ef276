"""The report-time order of a question's evidence pool (``research/engine/pool_rank.py``)."""

from research.engine.contracts import (
    PlanQuestion,
    ResearchPlan,
    SourceSummary,
    SynthesisRequest,
)
from research.engine.pool_rank import rank_pool
from research.engine.quoted_report import write_extractive_report
from tests.engine.factories import make_evidence

SOURCES = {
    "s1": SourceSummary(id="s1", title="Zorbo manual: exec", url="https://zorbo.example/exec"),
    "s2": SourceSummary(
        id="s2", title="Zorbo manual: child processes", url="https://zorbo.example/child"
    ),
    "s3": SourceSummary(id="s3", title="A book on trees", url="https://trees.example/cycles"),
}


def _request(question: str, evidence) -> SynthesisRequest:
    plan = ResearchPlan(
        objective=question,
        questions=[PlanQuestion(id="q1", text=question, priority="required")],
    )
    return SynthesisRequest(plan=plan, evidence=evidence, sources=list(SOURCES.values()))


def _cited(report) -> set[str]:
    return {
        eid
        for section in report.sections
        for statement in section.statements
        for eid in statement.evidence_ids
    }


def test_a_passage_naming_the_subject_outranks_a_stronger_one_naming_none() -> None:
    question = "Why does Zorbo print a listener warning?"
    elsewhere = make_evidence(
        "When we print the counts in the leaf, we see a warning count of two.",
        source_id="s3",
        relevance_bp=9000,
    )
    answer = make_evidence(
        "By default Zorbo emitters print a warning if more than 10 listeners are added.",
        source_id="s2",
        relevance_bp=3700,
    )
    ranking = rank_pool(question, [elsewhere, answer], SOURCES, {})
    assert [item.id for item in ranking.ordered] == [answer.id, elsewhere.id]
    assert ranking.names_subject(answer) and not ranking.names_subject(elsewhere)


def test_pool_relevance_is_bm25_over_the_pools_best() -> None:
    question = "What happens when Zorbo exec output exceeds maxBuffer?"
    best = make_evidence(
        "If maxBuffer is exceeded, the Zorbo child is terminated and the output is truncated.",
        source_id="s2",
        relevance_bp=3700,
    )
    other = make_evidence("Zorbo runs commands.", source_id="s1", relevance_bp=9000)
    ranking = rank_pool(question, [other, best], SOURCES, {})
    assert ranking.pool_relevance[best.id] == 1.0
    assert ranking.relevance(best) == 1.0
    assert ranking.relevance(other) == 0.9  # the selector's own figure is the better one


def test_an_answer_the_selector_scored_low_on_its_page_is_still_quoted() -> None:
    """Two passages the selector scored high on their page no longer push out the one the
    question's pool ranks best: relevance is page-local, the pool's BM25 is not."""
    question = "What happens when Zorbo exec output exceeds maxBuffer?"
    strong = [
        make_evidence("Zorbo exec runs a command in a shell.", source_id="s1", relevance_bp=9000),
        make_evidence(
            "Zorbo exec passes what the command printed to the callback.",
            source_id="s1",
            relevance_bp=8000,
            start=100,
        ),
    ]
    answer = make_evidence(
        "If maxBuffer is exceeded, the Zorbo child is terminated and the output is truncated.",
        source_id="s2",
        relevance_bp=3700,
    )
    report = write_extractive_report(_request(question, [*strong, answer]))
    assert answer.id in _cited(report)
    labels = {tuple(s.evidence_ids): s.label for s in report.sections[0].statements}
    assert labels[(answer.id,)] == "Answer"


def test_a_question_whose_subject_no_passage_names_still_states_a_gap() -> None:
    question = "Why does Zorbo print a listener warning?"
    elsewhere = make_evidence(
        "When we print the counts in the leaf, we see a warning count of two.",
        source_id="s3",
        relevance_bp=9000,
    )
    report = write_extractive_report(_request(question, [elsewhere]))
    assert [gap.question_id for gap in report.gaps] == ["q1"]
    assert report.executive_summary[0].kind == "caveat"


def _under(item, heading: str):
    """``item`` standing under ``heading``."""
    return item.model_copy(update={"locator": item.locator.model_copy(update={"heading": heading})})


FORUM = SourceSummary(
    id="s4",
    title="How long does Zorbo keep old log entries before pruning them?",
    url="https://forum.example/questions/17",
)


def test_a_line_with_no_question_term_of_its_own_has_no_pool_relevance() -> None:
    """A byline under a heading that repeats the question matches the question only through
    its page: it has no pool relevance, while the answer stating the terms itself has."""
    question = "How long does Zorbo keep old log entries before pruning them?"
    byline = _under(
        make_evidence("asked 12 June 2023 by pkowal", source_id="s4", relevance_bp=4700),
        FORUM.title,
    )
    answer = make_evidence(
        "Zorbo prunes log entries older than this time; defaults to 90 days.",
        source_id="s1",
        relevance_bp=4700,
        start=50,
    )
    sources = {**SOURCES, "s4": FORUM}
    ranking = rank_pool(question, [byline, answer], sources, {})
    assert ranking.pool_relevance[byline.id] == 0.0
    assert ranking.pool_relevance[answer.id] > 0.0


def test_a_passage_stating_the_terms_itself_outranks_one_carried_by_its_page_title() -> None:
    """The title-matching forum line and the answer tie on every ranking but the passage's own
    text; there the answer, whose own words hold the question's terms, leads."""
    question = "How long does Zorbo keep old log entries before pruning them?"
    forum_line = make_evidence("Anyone seen this before?", source_id="s4", relevance_bp=4700)
    answer = make_evidence(
        "Zorbo prunes log entries older than this time; defaults to 90 days.",
        source_id="s1",
        relevance_bp=5000,
        start=50,
    )
    sources = {**SOURCES, "s4": FORUM}
    affinity = {answer.id: 0.4, forum_line.id: 0.0}
    ranking = rank_pool(question, [forum_line, answer], sources, affinity)
    assert [item.id for item in ranking.ordered] == [answer.id, forum_line.id]


def test_a_passage_names_the_subject_its_page_names_in_another_passage() -> None:
    question = "What optimisation level does Zorbo use by default for debug builds?"
    book = SourceSummary(id="s5", title="Build profiles", url="https://book.example/profiles")
    sources = {**SOURCES, "s5": book}
    naming = make_evidence(
        "Zorbo has two main profiles: dev and release.", source_id="s5", relevance_bp=3000
    )
    answer = make_evidence(
        "The default level for dev is therefore 0.", source_id="s5", relevance_bp=2600, start=90
    )
    elsewhere = make_evidence(
        "The default level of the tree is 0.", source_id="s3", relevance_bp=2600
    )
    ranking = rank_pool(question, [elsewhere, answer, naming], sources, {})
    assert ranking.names_subject(answer)
    assert not ranking.names_subject(elsewhere)
    assert ranking.ordered[-1].id == elsewhere.id


def test_an_answer_naming_its_subject_only_through_its_page_is_quoted() -> None:
    question = "What optimisation level does Zorbo use by default for debug builds?"
    book = SourceSummary(id="s5", title="Build profiles", url="https://book.example/profiles")
    strong = [
        make_evidence(
            "Zorbo has two main profiles: dev and release.", source_id="s5", relevance_bp=8000
        ),
        make_evidence(
            "Zorbo builds the dev profile when you run zorbo build.",
            source_id="s5",
            relevance_bp=8000,
            start=40,
        ),
    ]
    answer = make_evidence(
        "The default optimisation level for debug builds is therefore 0.",
        source_id="s5",
        relevance_bp=2600,
        start=90,
    )
    plan = ResearchPlan(
        objective=question,
        questions=[PlanQuestion(id="q1", text=question, priority="required")],
    )
    request = SynthesisRequest(plan=plan, evidence=[*strong, answer], sources=[book])
    assert answer.id in _cited(write_extractive_report(request))


def test_pool_relevance_measures_a_passages_own_text_against_the_best_own_text() -> None:
    """The forum line leads the pool in context only through its page's title; the answer's
    own text is the pool's best own text, so its pool relevance is full."""
    question = "How long does Zorbo keep old log entries before pruning them?"
    forum_line = make_evidence("My Zorbo log is gone.", source_id="s4", relevance_bp=4700)
    answer = make_evidence(
        "Zorbo prunes old log entries after 90 days.", source_id="s3", relevance_bp=4700
    )
    sources = {**SOURCES, "s4": FORUM}
    ranking = rank_pool(question, [forum_line, answer], sources, {})
    assert ranking.pool_relevance[forum_line.id] == 1.0
    assert ranking.pool_relevance[answer.id] == 1.0


FAQ = SourceSummary(id="s6", title="Zorbo FAQ", url="https://zorbo.example/faq")


def test_the_answer_after_a_faq_entry_takes_the_entrys_place() -> None:
    """A numbered FAQ entry told in the asker's voice restates the question and answers
    nothing; the passage after it on its page is its answer and ranks first, with the entry's
    pool relevance."""
    question = "I deleted many rows from my Zorbo store but its file is as big as before: why?"
    entry = make_evidence(
        "(12) I deleted a lot of rows but the Zorbo store file did not get any smaller.",
        source_id="s6",
        relevance_bp=5500,
        start=100,
    )
    answer = make_evidence(
        "No. Deleted space goes to an internal free-list and is reused for new data.",
        source_id="s6",
        relevance_bp=3100,
        start=entry.locator.end + 17,
    )
    other = make_evidence(
        "Zorbo store files grow when rows are added.", source_id="s1", relevance_bp=4000
    )
    sources = {**SOURCES, "s6": FAQ}
    ranking = rank_pool(question, [other, entry, answer], sources, {})
    assert [item.id for item in ranking.ordered[:2]] == [answer.id, entry.id]
    assert ranking.pool_relevance[answer.id] == ranking.pool_relevance[entry.id]


def test_a_forum_questions_answer_is_found_past_its_byline() -> None:
    """The byline between a forum question and its answer holds no question term and is
    passed over; the answer, not the question, leads."""
    question = "How long does Zorbo keep old log entries before pruning them?"
    asked = _under(
        make_evidence(
            "My Zorbo log lost entries from last month. Does it prune old log entries?",
            source_id="s4",
            relevance_bp=5900,
            start=59,
        ),
        FORUM.title,
    )
    byline = _under(
        make_evidence("asked 12 June 2023 by pkowal", source_id="s4", relevance_bp=4700, start=227),
        FORUM.title,
    )
    answer = _under(
        make_evidence(
            "Log entries are pruned when cleanup runs.", source_id="s4", relevance_bp=3000, start=257
        ),
        FORUM.title,
    )
    sources = {**SOURCES, "s4": FORUM}
    ranking = rank_pool(question, [asked, byline, answer], sources, {})
    assert ranking.ordered[0].id == answer.id
    assert ranking.ordered.index(answer) < ranking.ordered.index(asked)


def test_a_passage_far_after_a_question_or_under_another_heading_inherits_nothing() -> None:
    question = "How long does Zorbo keep old log entries before pruning them?"
    asked = make_evidence(
        "Does Zorbo prune old log entries?", source_id="s6", relevance_bp=5900, start=0
    )
    far = make_evidence(
        "Zorbo log files are rotated.", source_id="s6", relevance_bp=2000, start=5000
    )
    elsewhere = _under(
        make_evidence("Zorbo log levels are five.", source_id="s6", relevance_bp=2000, start=40),
        "Levels",
    )
    sources = {**SOURCES, "s6": FAQ}
    ranking = rank_pool(question, [asked, far, elsewhere], sources, {})
    assert ranking.ordered[0].id == asked.id


def test_a_faq_entrys_answer_is_quoted_though_ten_passages_match_better() -> None:
    """The entry restating the question leads the pool; its answer, which the selector scored
    low on its page, is quoted in a section of ten ahead of loose matches."""
    question = "I deleted many rows from my Zorbo store but its file is as big as before: why?"
    entry = make_evidence(
        "(12) I deleted a lot of rows but the Zorbo store file did not get any smaller.",
        source_id="s6",
        relevance_bp=5500,
        start=100,
    )
    answer = make_evidence(
        "No. Deleted space goes to an internal free-list and is reused for new data.",
        source_id="s6",
        relevance_bp=2500,
        start=entry.locator.end + 17,
    )
    loose = [
        make_evidence(
            f"Zorbo store file number {n} keeps rows before the file is deleted.",
            source_id="s1",
            relevance_bp=4000,
            start=2000 + 100 * n,
        )
        for n in range(12)
    ]
    plan = ResearchPlan(
        objective=question,
        questions=[PlanQuestion(id="q1", text=question, priority="required")],
    )
    request = SynthesisRequest(
        plan=plan, evidence=[*loose, entry, answer], sources=[*SOURCES.values(), FAQ]
    )
    assert answer.id in _cited(write_extractive_report(request))


def test_the_definition_of_what_a_question_asks_about_is_quoted_first() -> None:
    """Passages repeating a word of a definition question ("exactly") ranked high on their
    pages do not push out the passage that says what the thing is."""
    question = "What exactly is a zorblet in Zorbo?"
    repeating = [
        make_evidence(
            f"Zorbo exec option {n} works exactly like the zorblet flag of the shell.",
            source_id="s1",
            relevance_bp=9000 - 100 * n,
            start=100 * n,
        )
        for n in range(12)
    ]
    definition = make_evidence(
        "A zorblet in Zorbo is not a plugin because it is not actually an application.",
        source_id="s2",
        relevance_bp=3000,
    )
    report = write_extractive_report(_request(question, [*repeating, definition]))
    first = report.sections[0].statements[0]
    assert first.evidence_ids == [definition.id]
