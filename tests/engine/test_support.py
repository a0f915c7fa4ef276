"""Deterministic support checks: a finding must say what its cited excerpts say.

Every case here was written for this test (none copied from fixture pages). Each adversarial
kind is one mutation of a correct statement; the paraphrases restate the excerpt in other
words and formats and must pass, so the checks are not a blanket refusal."""

import pytest

from research.engine.support import check_support, clean_statement

EXCERPTS = {
    "boil": "At sea level, water boils at 100 °C (212 °F); the boiling point falls as altitude rises.",
    "pool": "The pool holds at most 20 connections, and a request waits 30 seconds before it fails.",
    "attach": "The maximum number of attached databases is 10 by default and cannot exceed 125.",
    "release": "Version 2.3.0 was released on 25 April 2023 and dropped support for Python 3.7.",
    "rc": "Rc<T> is not safe to share across threads; use Arc<T> when several threads own a value.",
    "budget": "The city approved a budget of $1,200,000 for the bridge, 15% more than last year.",
    "group": "When one task in an asyncio.TaskGroup fails, the remaining tasks are cancelled.",
    "order": "The migration must run before the new workers start, otherwise the queue is lost.",
    "lease": "A worker renews its lease every 10 seconds and gives it up after 3 missed renewals.",
    "limit": "Uploads larger than 25 MB are refused; smaller files are stored for 30 days.",
}

PARAPHRASES = [
    ("boil", "Water boils at 100 °C at sea level."),
    ("boil", "At sea level the boiling point of water is 100 °C."),
    ("boil", "The boiling point of water at sea level is 212 °F."),
    ("boil", "Water's boiling point falls as altitude rises."),
    ("pool", "The pool holds no more than 20 connections."),
    ("pool", "A request waits 30 seconds before it fails."),
    ("pool", "At most 20 connections are held by the pool."),
    ("pool", "Requests fail after waiting 30 s."),
    ("attach", "By default at most 10 databases can be attached."),
    ("attach", "The number of attached databases cannot exceed 125."),
    ("attach", "Attached databases are limited to 10 by default."),
    ("release", "Version 2.3.0 was released on 2023-04-25."),
    ("release", "Version 2.3.0 came out on April 25, 2023."),
    ("release", "The 2.3.0 release dropped support for Python 3.7."),
    ("release", "Support for Python 3.7 was dropped in version 2.3.0, released in 2023."),
    ("rc", "Rc<T> is not safe to share across threads."),
    ("rc", "Use Arc<T> when several threads own a value."),
    ("rc", "Sharing Rc<T> across threads is not safe; Arc<T> is for values several threads own."),
    ("budget", "The city approved a budget of $1.2 million for the bridge."),
    ("budget", "The bridge budget the city approved is $1200000."),
    ("budget", "The approved bridge budget is 15 percent more than last year."),
    ("budget", "The city approved 1.2 million dollars for the bridge."),
    ("group", "The remaining tasks are cancelled when one task in an asyncio.TaskGroup fails."),
    ("group", "If a task of an asyncio.TaskGroup fails, the other remaining tasks get cancelled."),
    ("order", "The migration must run before the new workers start."),
    ("order", "Otherwise the queue is lost: the migration has to run before new workers start."),
    ("lease", "A worker renews its lease every 10 seconds."),
    ("lease", "After 3 missed renewals a worker gives up its lease."),
    ("lease", "Every 10 s the worker renews its lease."),
    ("limit", "Uploads larger than 25 MB are refused."),
    ("limit", "Smaller files are stored for 30 days."),
    ("limit", "Files over 25 megabytes are refused as uploads."),
    ("limit", "Smaller uploaded files are stored for 30 days."),
    ("attach", "It cannot exceed 125 attached databases."),
    ("pool", "The pool holds at most twenty connections, 20 in all."),
    ("boil", "Water boils at 100 °C at sea level, and the boiling point falls with altitude."),
    ("release", "Version 2.3.0, released 25 April 2023, dropped Python 3.7 support."),
    ("budget", "The city approved a bridge budget 15% more than last year."),
    ("group", "One failing task in an asyncio.TaskGroup makes the remaining tasks be cancelled."),
    ("lease", "The lease is given up after 3 missed renewals."),
]

ADVERSARIAL = [
    ("wrong number", "boil", "Water boils at 7 °C at sea level."),
    ("wrong number", "pool", "The pool holds at most 50 connections."),
    ("wrong number", "attach", "The maximum number of attached databases is 12 by default."),
    ("wrong number", "budget", "The city approved a budget of $2,200,000 for the bridge."),
    ("wrong number", "budget", "The budget is 25% more than last year."),
    ("wrong unit", "boil", "Water boils at 100 °F at sea level."),
    ("wrong unit", "pool", "A request waits 30 minutes before it fails."),
    ("wrong unit", "limit", "Uploads larger than 25 GB are refused."),
    ("wrong unit", "budget", "The city approved a budget of €1,200,000 for the bridge."),
    ("flipped negation", "rc", "Rc<T> is safe to share across threads."),
    ("flipped negation", "attach", "The number of attached databases can exceed 125."),
    (
        "flipped negation",
        "group",
        "When one task in an asyncio.TaskGroup fails, the remaining tasks are not cancelled.",
    ),
    ("flipped comparison", "order", "The migration must run after the new workers start."),
    ("flipped comparison", "budget", "The city approved a budget 15% less than last year."),
    ("flipped comparison", "limit", "Uploads smaller than 25 MB are refused."),
    (
        "swapped entity",
        "group",
        "When one task in an asyncio.Barrier fails, the remaining tasks are cancelled.",
    ),
    ("swapped entity", "rc", "Box<T> is not safe to share across threads."),
    ("swapped entity", "release", "Version 2.3.0 dropped support for Ruby 3.7."),
    ("wrong year", "release", "Version 2.3.0 was released on 25 April 2022."),
    ("wrong year", "release", "Version 2.3.0 was released in 2021."),
    ("wrong version", "release", "Version 2.4.0 was released on 25 April 2023."),
    ("unrelated excerpt", "lease", "Water boils at a lower temperature on mountains."),
    ("unrelated excerpt", "boil", "Uploaded files are kept for a month before deletion."),
]


@pytest.mark.parametrize(("key", "statement"), PARAPHRASES)
def test_a_correct_paraphrase_is_supported(key, statement):
    support = check_support(statement, [EXCERPTS[key]])
    assert support.supported, support.mismatches


def test_paraphrases_are_kept_at_least_95_percent_of_the_time():
    kept = sum(check_support(s, [EXCERPTS[k]]).supported for k, s in PARAPHRASES)
    assert kept / len(PARAPHRASES) >= 0.95


@pytest.mark.parametrize(("kind", "key", "statement"), ADVERSARIAL)
def test_a_statement_its_excerpt_does_not_bear_out_is_refused(kind, key, statement):
    support = check_support(statement, [EXCERPTS[key]])
    assert not support.supported, kind
    assert support.mismatches[0]  # a sentence naming what does not match


def test_names_from_the_plan_need_no_excerpt():
    excerpt = "The remaining tasks are cancelled when one of them fails."
    statement = "In Python, the remaining tasks are cancelled when one of them fails."
    assert not check_support(statement, [excerpt]).supported
    assert check_support(
        statement, [excerpt], known_text=["How do Python task groups fail?"]
    ).supported


def test_any_cited_excerpt_may_carry_a_number():
    support = check_support(
        "The pool holds at most 20 connections and water boils at 100 °C.",
        [EXCERPTS["pool"], EXCERPTS["boil"]],
    )
    assert support.supported, support.mismatches


@pytest.mark.parametrize(
    ("text", "expected", "removed"),
    [
        ("Water boils at 100 °C [3].", "Water boils at 100 °C.", 1),
        ("See http://evil.example/x for more.", "See for more.", 1),
        ("It is **always** <b>on</b> by default [1, 2].", "It is always on by default.", 5),
        ("Plain text stays as it is.", "Plain text stays as it is.", 0),
        ("Click javascript:alert(1) now", "Click now", 1),
    ],
)
def test_statement_text_loses_addresses_markers_and_markup(text, expected, removed):
    assert clean_statement(text) == (expected, removed)
