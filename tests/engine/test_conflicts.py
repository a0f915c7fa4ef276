"""Value conflicts found in the excerpts themselves: one quantity, values that disagree.

Every sentence here was written for this test; the quantities are chosen so that the same
words carry a different quantity (freezing against boiling) and the same quantity comes in
other words and units."""

from research.engine.conflicts import find_value_conflicts
from tests.engine.factories import make_evidence


def item(text: str, source: str, question: str = "q1"):
    return make_evidence(text, source_id=source, question_ids=[question])


BOILS = item("At sea level, water boils at 100 °C (212 °F).", "s1")
BOILS_AGAIN = item("Pure water boils at 100 degrees Celsius at sea level.", "s2")
BOILS_ROUNDED = item("The boiling point of water at sea level is 99.97 °C.", "s3")
BOILS_WRONG = item("Water at sea level boils at 42 degrees Celsius.", "s4")
FREEZES = item("Water freezes at 0 °C at sea level.", "s5")
CLUSTERS = {"s1": "domain:a.test", "s2": "domain:b.test", "s3": "domain:c.test"}
CLUSTERS |= {"s4": "domain:d.test", "s5": "domain:e.test"}


def test_incompatible_values_of_one_quantity_are_a_conflict_with_their_sites():
    (conflict,) = find_value_conflicts(
        [BOILS, BOILS_AGAIN, BOILS_ROUNDED, BOILS_WRONG, FREEZES], CLUSTERS
    )
    majority, lone = conflict.positions
    assert majority.value in ("100 °C", "100 degrees Celsius")
    assert set(majority.evidence_ids) == {BOILS.id, BOILS_AGAIN.id, BOILS_ROUNDED.id}
    assert len(majority.clusters) == 3
    assert lone.value == "42 degrees Celsius" and lone.clusters == ["domain:d.test"]
    assert FREEZES.id not in conflict.evidence_ids
    assert conflict.question_ids == ["q1"]


def test_a_conflict_lists_its_evidence_in_the_same_order_in_every_run():
    """Evidence ids hash the run id, which is random: the same excerpts in two runs must still
    be listed in one order (content order), since the report quotes a conflict's evidence in
    it."""
    texts = [(BOILS.excerpt, "s1"), (BOILS_WRONG.excerpt, "s4"), (BOILS_AGAIN.excerpt, "s2")]

    def excerpts_listed(run_id: str) -> list[str]:
        evidence = [
            make_evidence(text, run_id=run_id, source_id=source, question_ids=["q1"])
            for text, source in texts
        ]
        by_id = {item.id: item.excerpt for item in evidence}
        (conflict,) = find_value_conflicts(evidence, CLUSTERS)
        return [by_id[evidence_id] for evidence_id in conflict.evidence_ids]

    orders = {tuple(excerpts_listed(f"run-{n}")) for n in range(12)}
    assert len(orders) == 1
    assert len(next(iter(orders))) == 3


def test_a_mirror_is_not_a_second_site():
    mirrored = {**CLUSTERS, "s2": "domain:a.test"}
    (conflict,) = find_value_conflicts([BOILS, BOILS_AGAIN, BOILS_WRONG], mirrored)
    (hundred,) = [p for p in conflict.positions if BOILS.id in p.evidence_ids]
    assert hundred.clusters == ["domain:a.test"]


def test_values_rounded_differently_agree():
    assert find_value_conflicts([BOILS, BOILS_ROUNDED], CLUSTERS) == []


def test_a_different_quantity_in_similar_words_is_no_conflict():
    assert find_value_conflicts([BOILS, FREEZES], CLUSTERS) == []


def test_other_units_and_other_questions_are_not_compared():
    fahrenheit = item("Water at sea level boils at 100 °F.", "s4")
    elsewhere = item("Water at sea level boils at 42 degrees Celsius.", "s4", question="q2")
    assert find_value_conflicts([BOILS_AGAIN, fahrenheit], CLUSTERS) == []
    assert find_value_conflicts([BOILS, elsewhere], CLUSTERS) == []


def test_one_source_disagreeing_with_itself_is_not_a_conflict_between_sources():
    same = item("Water at sea level boils at 42 degrees Celsius.", "s1")
    assert find_value_conflicts([BOILS, same], CLUSTERS) == []


def test_a_clause_with_a_range_does_not_say_which_value_it_is_about():
    ranged = item("At sea level water boils between 90 °C and 110 °C in these tests.", "s4")
    assert find_value_conflicts([BOILS, ranged], CLUSTERS) == []


def test_money_and_percentages_are_measures_too():
    cost = item("The bridge cost $1.2 billion to build, the city council said.", "s1")
    other = item("The city council said the bridge cost $2.9 billion to build.", "s2")
    (conflict,) = find_value_conflicts([cost, other], CLUSTERS)
    assert {p.value for p in conflict.positions} == {"$1.2 billion", "$2.9 billion"}
