import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from research.engine.contracts import (
    Block,
    EvidenceScope,
    Heading,
    PageSpan,
    PdfLocator,
    TextLocator,
)
from research.engine.ledger import (
    RejectedExcerpt,
    SnapshotIndex,
    VerifiedExcerpt,
    assign_independence_clusters,
    comparable_value,
    content_order,
    evidence_hash,
    find_contradictions,
    find_duplicate,
    normalize_claim_key,
    normalize_for_matching,
    snapshot_content_hash,
    to_basis_points,
    verify_candidates,
    verify_excerpt,
)
from tests.engine.factories import (
    make_candidate,
    make_document,
    make_evidence,
    make_source,
)

SNAPSHOT = (
    "Economy\n\n"
    "France’s gross domestic product reached   2.8 trillion euros in 2023 — a record.\n"
    "Outlook\n"
    "Growth is expected to slow in 2024.\u00a0Analysts  disagree."
)
HEADINGS = [
    Heading(offset=0, level=1, text="Economy"),
    Heading(offset=SNAPSHOT.index("Outlook"), level=2, text="Outlook"),
]


# Excerpt verification ---------------------------------------------------------------------------


def test_exact_excerpt_verifies_at_its_offsets() -> None:
    excerpt = "Growth is expected to slow in 2024."
    result = verify_excerpt(excerpt, SNAPSHOT, headings=HEADINGS)
    assert isinstance(result, VerifiedExcerpt)
    assert SNAPSHOT[result.start : result.end] == excerpt
    assert result.heading == "Outlook"


def test_whitespace_quotes_and_dashes_are_normalized_before_matching() -> None:
    excerpt = "France's gross domestic product\nreached 2.8 trillion euros in 2023 - a record."
    result = verify_excerpt(excerpt, SNAPSHOT, headings=HEADINGS)
    assert isinstance(result, VerifiedExcerpt)
    assert SNAPSHOT[result.start : result.end] == (
        "France’s gross domestic product reached   2.8 trillion euros in 2023 — a record."
    )
    assert (
        result.text
        == "France’s gross domestic product reached 2.8 trillion euros in 2023 — a record."
    )
    assert result.heading == "Economy"


def test_compatibility_forms_match_their_plain_equivalents() -> None:
    snapshot = "The ﬁnal ﬁgure was ５ percent … approximately."
    result = verify_excerpt("final figure was 5 percent ... approximately", snapshot)
    assert isinstance(result, VerifiedExcerpt)
    assert snapshot[result.start : result.end] == "ﬁnal ﬁgure was ５ percent … approximately"


def test_non_breaking_spaces_and_invisible_characters_are_ignored() -> None:
    snapshot = "Analysts\u00a0dis\u00adagree\u200b strongly."
    result = verify_excerpt("Analysts disagree strongly.", snapshot)
    assert isinstance(result, VerifiedExcerpt)
    assert (result.start, result.end) == (0, len(snapshot))


def test_excerpt_absent_from_snapshot_is_rejected() -> None:
    result = verify_excerpt("France's GDP reached 3.1 trillion euros in 2023.", SNAPSHOT)
    assert isinstance(result, RejectedExcerpt)
    assert not result.verified
    assert result.reason == "The excerpt does not occur in the stored snapshot."


def test_paraphrase_is_rejected() -> None:
    result = verify_excerpt("growth is expected to slow in 2024", SNAPSHOT)
    assert isinstance(result, RejectedExcerpt)


def test_empty_excerpt_is_rejected() -> None:
    assert isinstance(verify_excerpt(" \n\u200b ", SNAPSHOT), RejectedExcerpt)


def test_repeated_excerpt_resolves_to_the_occurrence_nearest_the_hint() -> None:
    snapshot = "alpha beta. gamma. alpha beta. delta."
    index = SnapshotIndex(snapshot)
    assert index.locate("alpha beta") == (0, 10)
    assert index.locate("alpha beta", near=25) == (19, 29)


def test_pdf_page_is_found_from_page_spans() -> None:
    snapshot = "Page one text. Page two says the deficit was 5.5 percent."
    pages = [PageSpan(page=1, start=0, end=15), PageSpan(page=2, start=15, end=len(snapshot))]
    result = SnapshotIndex(snapshot, pages=pages).verify("the deficit was 5.5 percent")
    assert isinstance(result, VerifiedExcerpt)
    assert result.page == 2


def test_index_is_built_once_and_reused_for_many_excerpts() -> None:
    index = SnapshotIndex(SNAPSHOT, headings=HEADINGS)
    found = [index.verify(e) for e in ["Economy", "a record.", "Analysts disagree.", "absent text"]]
    assert [item.verified for item in found] == [True, True, True, False]


_WORD = st.text(
    alphabet=st.sampled_from(list("abcXYZ’“”—–ﬁ５é\u0301…'\"-.,")), min_size=1, max_size=6
)
_GAP = st.text(
    alphabet=st.sampled_from([" ", "\n", "\t", "\u00a0", "\u2003", "\r", "\u3000"]),
    min_size=1,
    max_size=3,
)


@settings(max_examples=300, deadline=None)
@given(
    words=st.lists(_WORD, min_size=2, max_size=40),
    gaps=st.lists(_GAP, min_size=40, max_size=40),
    cut=st.tuples(st.integers(0, 39), st.integers(0, 39)),
    new_gaps=st.lists(_GAP, min_size=40, max_size=40),
)
def test_excerpt_cut_from_snapshot_verifies_at_its_offsets_whatever_the_whitespace(
    words: list[str], gaps: list[str], cut: tuple[int, int], new_gaps: list[str]
) -> None:
    # Each token carries a unique "#n:" marker so the excerpt occurs exactly once.
    tokens = [f"#{n}:{word}#" for n, word in enumerate(words)]
    first, last = sorted(index % len(tokens) for index in cut)
    starts: list[int] = []
    snapshot = ""
    for n, token in enumerate(tokens):
        starts.append(len(snapshot))
        snapshot += token + gaps[n]
    start, end = starts[first], starts[last] + len(tokens[last])
    # The excerpt is the same tokens with entirely different whitespace between them.
    excerpt = "".join(token + new_gaps[n] for n, token in enumerate(tokens[first : last + 1]))
    result = SnapshotIndex(snapshot).verify("\n " + excerpt)
    assert isinstance(result, VerifiedExcerpt)
    assert (result.start, result.end) == (start, end)
    assert normalize_for_matching(snapshot[result.start : result.end]) == normalize_for_matching(
        excerpt
    )


@settings(max_examples=200, deadline=None)
@given(snapshot=st.text(max_size=300), bounds=st.tuples(st.integers(0, 300), st.integers(0, 300)))
def test_any_slice_of_a_snapshot_verifies_to_an_equivalent_span(
    snapshot: str, bounds: tuple[int, int]
) -> None:
    low, high = sorted(bounds)
    excerpt = snapshot[low:high]
    result = SnapshotIndex(snapshot).verify(excerpt)
    if not normalize_for_matching(excerpt):
        assert isinstance(result, RejectedExcerpt)
        return
    assert isinstance(result, VerifiedExcerpt)
    assert normalize_for_matching(excerpt) in normalize_for_matching(
        snapshot[result.start : result.end]
    )


# Block rules ------------------------------------------------------------------------------------

BLOCKED = "Tasks\n\nIt is always released when doing I/O.\n\nPast efforts failed.\n\ndef f():\n    return 1\n\nNote\nIf the wait is cancelled, it stops.\n\nCell a\tCell b\nCell c\tCell d"


def _blocks(text: str, kinds: list[str], gaps: frozenset[int] = frozenset()) -> list[Block]:
    """Blocks at the non-separator runs of ``text`` (separators are \\n, \\n\\n and \\t)."""
    spans = [m.span() for m in re.finditer(r"[^\n\t]+", text)]
    assert len(spans) == len(kinds)
    return [
        Block(start=start, end=end, kind=kind, after_gap=number in gaps)
        for number, ((start, end), kind) in enumerate(zip(spans, kinds, strict=True))
    ]


BLOCK_KINDS_OF_BLOCKED = [
    "heading",
    "paragraph",
    "paragraph",
    "code",
    "code",
    "term",
    "paragraph",
    "cell",
    "cell",
    "cell",
    "cell",
]


def _blocked_index(gaps: frozenset[int] = frozenset()) -> SnapshotIndex:
    blocks = _blocks(BLOCKED, BLOCK_KINDS_OF_BLOCKED, gaps)
    # The two lines of the code sample are one block.
    code = [b for b in blocks if b.kind == "code"]
    merged = Block(start=code[0].start, end=code[1].end, kind="code")
    blocks = [b for b in blocks if b.kind != "code"]
    blocks.insert(3, merged)
    return SnapshotIndex(BLOCKED, blocks=blocks)


def test_excerpt_running_into_the_next_block_as_one_sentence_is_refused() -> None:
    result = _blocked_index().verify("always released when doing I/O. Past efforts")
    assert isinstance(result, RejectedExcerpt)
    assert "one block of the page into the next" in result.reason


def test_excerpt_of_consecutive_blocks_that_keeps_the_break_is_stored_with_it() -> None:
    result = _blocked_index().verify("Note\nIf the wait is cancelled")
    assert isinstance(result, VerifiedExcerpt)
    assert result.text == "Note\nIf the wait is cancelled"
    table = _blocked_index().verify("Cell a Cell b\nCell c\tCell d")
    assert isinstance(table, RejectedExcerpt)  # the cell break is missing after "Cell a"
    table = _blocked_index().verify("Cell a\tCell b\nCell c\tCell d")
    assert isinstance(table, VerifiedExcerpt)
    assert table.text == "Cell a\tCell b\nCell c\tCell d"


def test_excerpt_inside_one_block_verifies_as_before() -> None:
    result = _blocked_index().verify("released when  doing I/O.")
    assert isinstance(result, VerifiedExcerpt)
    assert result.text == "released when doing I/O."
    assert result.code is False


def test_code_is_evidence_only_as_a_whole_block() -> None:
    whole = _blocked_index().verify("def f():\n  return 1")
    assert isinstance(whole, VerifiedExcerpt)
    assert whole.code is True
    assert whole.text == "def f():\n    return 1"
    part = _blocked_index().verify("return 1")
    assert isinstance(part, RejectedExcerpt)
    assert "code is quoted whole" in part.reason
    mixed = _blocked_index().verify("Past efforts failed.\ndef f():\n    return 1")
    assert isinstance(mixed, RejectedExcerpt)


def test_excerpt_across_left_out_text_is_refused_even_with_a_break() -> None:
    index = _blocked_index(gaps=frozenset({2}))
    result = index.verify("doing I/O.\nPast efforts failed.")
    assert isinstance(result, RejectedExcerpt)
    assert "not next to each other" in result.reason


def test_a_later_occurrence_inside_one_block_is_taken_when_the_first_crosses_blocks() -> None:
    text = "alpha beta\n\ngamma alpha\n\nbeta gamma alpha beta"
    index = SnapshotIndex(text, blocks=_blocks(text, ["paragraph"] * 3))
    result = index.verify("alpha beta gamma")
    assert isinstance(result, RejectedExcerpt)
    result = index.verify("gamma alpha beta")
    assert isinstance(result, VerifiedExcerpt)
    assert text[result.start : result.end] == "gamma alpha beta"
    assert result.start == text.rindex("gamma alpha beta")


def test_code_excerpt_gets_a_code_locator() -> None:
    blocks = _blocked_index()._blocks
    document = make_document(BLOCKED, blocks=blocks)
    outcome = verify_candidates(
        [make_candidate("def f():\n    return 1"), make_candidate("return 1")],
        run_id="run-1",
        source_id="src-1",
        document=document,
    )
    assert [item.locator.code for item in outcome.evidence] == [True]
    assert outcome.rejected_count == 1


# Evidence construction --------------------------------------------------------------------------


def test_verified_candidates_become_evidence_with_locators() -> None:
    document = make_document(SNAPSHOT, headings=HEADINGS)
    outcome = verify_candidates(
        [
            make_candidate("Growth is expected to slow in 2024.", claim_key="France growth 2024"),
            make_candidate("An invented sentence."),
        ],
        run_id="run-1",
        source_id="s1",
        document=document,
    )
    (evidence,) = outcome.evidence
    assert outcome.rejected_count == 1
    assert isinstance(evidence.locator, TextLocator)
    assert evidence.locator.heading == "Outlook"
    assert evidence.locator.snapshot_hash == document.content_hash
    assert SNAPSHOT[evidence.locator.start : evidence.locator.end] == evidence.excerpt
    assert evidence.claim_key == "france_growth_2024"
    assert (evidence.relevance_bp, evidence.confidence_bp) == (9000, 8000)
    assert evidence.id == f"ev-{evidence.evidence_hash[:20]}"


def test_pdf_evidence_gets_a_page_locator() -> None:
    text = "Intro. The deficit was 5.5 percent."
    document = make_document(
        text,
        kind="pdf",
        pages=[PageSpan(page=1, start=0, end=7), PageSpan(page=2, start=7, end=len(text))],
    )
    (evidence,) = verify_candidates(
        [make_candidate("The deficit was 5.5 percent.")],
        run_id="r",
        source_id="s",
        document=document,
    ).evidence
    assert isinstance(evidence.locator, PdfLocator)
    assert evidence.locator.page == 2


def test_evidence_for_questions_outside_the_plan_is_rejected() -> None:
    outcome = verify_candidates(
        [make_candidate("Economy", question_ids=["q7"])],
        run_id="r",
        source_id="s",
        document=make_document(SNAPSHOT),
        question_ids={"q1", "q2"},
    )
    assert outcome.evidence == []
    assert outcome.rejected[0].reason == "The evidence names no question of the plan."


def test_re_extraction_after_resume_does_not_duplicate_evidence() -> None:
    document = make_document(SNAPSHOT)
    candidates = [make_candidate("Growth is expected to slow in 2024.")]
    first = verify_candidates(candidates, run_id="r", source_id="s", document=document)
    again = verify_candidates(
        [make_candidate("Growth  is expected to slow in 2024.")] + candidates,
        run_id="r",
        source_id="s",
        document=document,
        known_hashes={e.evidence_hash for e in first.evidence},
    )
    assert again.evidence == []
    assert again.duplicates == 2


def test_evidence_hash_is_stable_over_whitespace_and_claim_key_spelling() -> None:
    one = evidence_hash("r", "s", "Growth is  expected.", "France Growth")
    two = evidence_hash("r", "s", "Growth is expected.\n", "france_growth")
    assert one == two
    assert evidence_hash("other-run", "s", "Growth is expected.", "france growth") != one
    assert evidence_hash("r", "other-source", "Growth is expected.", "france growth") != one
    assert evidence_hash("r", "s", "Growth is expected.", "germany growth") != one


def test_claim_keys_and_scores_are_normalized() -> None:
    assert normalize_claim_key("France GDP (2023)") == "france_gdp_2023"
    assert normalize_claim_key("  ") is None
    assert to_basis_points(0.12345) == 1234
    assert to_basis_points(1.7) == 10_000


# Duplicates and independence -----------------------------------------------------------------


def test_content_hash_ignores_layout_whitespace() -> None:
    assert snapshot_content_hash("a  b\n\nc") == snapshot_content_hash("a b c")
    assert snapshot_content_hash("a b c") != snapshot_content_hash("a b d")


def test_same_canonical_url_is_a_duplicate() -> None:
    original = make_source("s1", "https://example.org/story")
    document = make_document("Different text", url="https://example.org/story?utm_source=x")
    match = find_duplicate(document, [original], source_id="s2")
    assert match is not None and (match.source_id, match.reason) == ("s1", "canonical_url")


def test_mirrored_content_is_a_duplicate() -> None:
    text = "Identical article body."
    original = make_source("s1", "https://news.example.org/a", content=text)
    mirror = make_document(text, url="https://mirror.example.net/copy")
    match = find_duplicate(mirror, [original], source_id="s2")
    assert match is not None and match.reason == "content_hash"


def test_candidates_and_the_document_itself_are_not_duplicates() -> None:
    document = make_document("Body", url="https://example.org/story")
    own = make_source("s1", "https://example.org/story")
    candidate = make_source("s2", "https://example.org/story", status="candidate")
    assert find_duplicate(document, [own, candidate], source_id="s1") is None


def test_subdomains_of_one_site_form_one_cluster() -> None:
    clusters = assign_independence_clusters(
        [
            make_source("s1", "https://news.example.org/a"),
            make_source("s2", "https://data.example.org/b"),
        ]
    )
    assert clusters == {"s1": "domain:example.org", "s2": "domain:example.org"}


def test_different_sites_are_independent() -> None:
    clusters = assign_independence_clusters(
        [make_source("s1", "https://insee.fr/a"), make_source("s2", "https://oecd.org/b")]
    )
    assert len({clusters[s] for s in ["s1", "s2"]}) == 2


def test_same_publisher_on_two_domains_is_one_cluster() -> None:
    clusters = assign_independence_clusters(
        [
            make_source("s1", "https://lemonde.fr/a", publisher="Le Monde"),
            make_source("s2", "https://lemonde-archive.com/b", publisher="le monde"),
        ]
    )
    assert len({clusters[s] for s in ["s1", "s2"]}) == 1


def test_syndicated_copy_declaring_a_canonical_elsewhere_joins_the_original() -> None:
    clusters = assign_independence_clusters(
        [
            make_source("s1", "https://wire.example.com/story"),
            make_source(
                "s2",
                "https://localpaper.example.net/story",
                declared_canonical_url="https://wire.example.com/story",
            ),
        ]
    )
    assert clusters["s1"] == clusters["s2"] == "domain:example.com"


def test_mirrors_never_raise_the_independent_count() -> None:
    text = "The same press release."
    sources = [
        make_source("s1", "https://agency.example.org/release", content=text),
        make_source("s2", "https://mirror-one.example.net/x", content=text),
        make_source("s3", "https://mirror-two.example.com/y", content=text),
        make_source("s4", "https://copy.example.info/z", duplicate_of="s1"),
    ]
    clusters = assign_independence_clusters(sources)
    assert len({clusters[s] for s in ["s1", "s2", "s3", "s4"]}) == 1


def test_clusters_are_transitive_and_order_independent() -> None:
    sources = [
        make_source("s1", "https://a.example.org/x", publisher="Wire"),
        make_source("s2", "https://b.example.net/y", publisher="Wire"),
        make_source("s3", "https://c.example.net/z"),
    ]
    forward = assign_independence_clusters(sources)
    backward = assign_independence_clusters(list(reversed(sources)))
    assert forward == backward
    assert len(set(forward.values())) == 1


def test_two_copies_of_a_paper_are_one_cluster() -> None:
    # The publisher's page and the arXiv preprint: other sites, other bytes, one work.
    clusters = assign_independence_clusters(
        [
            make_source(
                "s1",
                "https://nordic-heat-journal.example/articles/defrost",
                work_ids=["doi:10.5555/nhj.2024.0107", "arxiv:2403.01234"],
            ),
            make_source("s2", "https://arxiv.org/pdf/2403.01234v2"),
            make_source("s3", "https://doi.org/10.5555/NHJ.2024.0107"),
            make_source(
                "s4", "https://other-journal.example/articles/x", work_ids=["doi:10.5555/x"]
            ),
        ]
    )
    assert clusters["s1"] == clusters["s2"] == clusters["s3"]
    assert len({clusters[s] for s in ["s1", "s2", "s3", "s4"]}) == 2


def test_different_papers_on_one_repository_or_in_one_journal_stay_independent() -> None:
    clusters = assign_independence_clusters(
        [
            make_source("s1", "https://arxiv.org/abs/2403.01234"),
            make_source("s2", "https://arxiv.org/abs/2311.04567"),
            make_source("s3", "https://doi.org/10.5555/jgbs.2021.033"),
            make_source("s4", "https://doi.org/10.5555/bsr.2021.118"),
            make_source(
                "s5", "https://journal.example/a", publisher="Journal", work_ids=["doi:10.5555/a"]
            ),
            make_source(
                "s6", "https://journal.example/b", publisher="Journal", work_ids=["doi:10.5555/b"]
            ),
        ]
    )
    assert len({clusters[s] for s in ["s1", "s2", "s3", "s4", "s5", "s6"]}) == 6


# Contradictions -----------------------------------------------------------------------------------
# Contradictions -----------------------------------------------------------------------------------


def test_conflicting_values_are_kept_side_by_side() -> None:
    first = make_evidence(
        "GDP grew 1.1%.", claim_key="fr_gdp_growth_2023", value="1.1%", source_id="s1"
    )
    second = make_evidence(
        "GDP grew 0.9%.", claim_key="fr_gdp_growth_2023", value="0.9%", source_id="s2"
    )
    (contradiction,) = find_contradictions([first, second])
    values = sorted(position.value or "" for position in contradiction.positions)
    assert values == ["0.9%", "1.1%"]
    assert contradiction.key == "claim:fr_gdp_growth_2023"
    assert contradiction.evidence_ids == [second.id, first.id]  # content order: 'GDP grew 0…' first
    assert "1.0%" not in str(contradiction.model_dump())


def test_a_contradiction_lists_its_evidence_in_the_same_order_in_every_run() -> None:
    """Evidence ids hash the run id, which is random: the same two excerpts in two runs must
    still be listed in one order, since the report quotes a conflict's evidence in it."""

    def excerpts_listed(run_id: str) -> list[str]:
        evidence = [
            make_evidence(text, run_id=run_id, claim_key="k", value=value, source_id=source)
            for text, value, source in (
                ("Sales rose 4%.", "4%", "s1"),
                ("Sales rose 9%.", "9%", "s2"),
            )
        ]
        by_id = {item.id: item.excerpt for item in evidence}
        (contradiction,) = find_contradictions(evidence)
        return [by_id[evidence_id] for evidence_id in contradiction.evidence_ids]

    runs = [f"run-{n}" for n in range(12)]
    assert {tuple(excerpts_listed(run)) for run in runs} == {("Sales rose 4%.", "Sales rose 9%.")}


def test_equal_values_written_differently_do_not_conflict() -> None:
    first = make_evidence("a", claim_key="k", value="3.10 %", source_id="s1")
    second = make_evidence("b", claim_key="k", value="3.1%", source_id="s2")
    third = make_evidence("c", claim_key="k", value="3.1%", source_id="s3")
    assert find_contradictions([first, second, third]) == []
    assert comparable_value("1,000 people") == comparable_value("1000 people")


def test_opposite_stances_on_one_claim_conflict() -> None:
    supports = make_evidence("Yes.", claim_key="policy_works", stance="supports", source_id="s1")
    contradicts = make_evidence(
        "No.", claim_key="policy_works", stance="contradicts", source_id="s2"
    )
    context = make_evidence("Maybe.", claim_key="policy_works", stance="context", source_id="s3")
    (contradiction,) = find_contradictions([supports, contradicts, context])
    assert {position.stance for position in contradiction.positions} == {"supports", "contradicts"}
    assert context.id not in contradiction.evidence_ids


def test_scope_differences_are_reported() -> None:
    first = make_evidence(
        "a",
        claim_key="unemployment",
        value="7.3%",
        scope=EvidenceScope(as_of="2023", geography="France", definition="ILO"),
    )
    second = make_evidence(
        "b",
        claim_key="unemployment",
        value="8.1%",
        source_id="s2",
        scope=EvidenceScope(as_of="2022", geography="France", definition="national"),
    )
    (contradiction,) = find_contradictions([first, second])
    assert contradiction.scope_differences == {
        "as_of": ["2022", "2023"],
        "definition": ["ILO", "national"],
    }


def test_evidence_without_claim_keys_never_conflicts() -> None:
    assert find_contradictions([make_evidence("a", value="1"), make_evidence("b", value="2")]) == []


@pytest.mark.parametrize("value", ["abc", "12 million", "-3.5 %"])
def test_comparable_value_is_stable(value: str) -> None:
    assert comparable_value(value) == comparable_value(comparable_value(value))


def test_the_same_sentence_on_two_copies_of_a_page_is_ordered_by_page_not_by_run():
    """Two copies of one page quote a sentence at the same place: the tie goes to the page
    (its snapshot hash), so every run leads with the same copy although ids differ per run."""
    excerpt = "Quill keeps one writer at a time; readers never wait."

    def ordered(run_id: str) -> list[str]:
        copies = [
            make_evidence(excerpt, run_id=run_id, source_id=page, start=120)
            for page in ("zircon-mirror", "quill-docs")
        ]
        assert copies[0].id != copies[1].id
        return [item.locator.snapshot_hash for item in sorted(copies, key=content_order)]

    runs = [ordered(f"run-{n}") for n in range(8)]
    ids = {
        make_evidence(excerpt, run_id=f"run-{n}", source_id="quill-docs", start=120).id
        for n in range(8)
    }
    assert len(ids) == 8  # the ids do differ from run to run
    assert all(run == runs[0] for run in runs)
