"""The program's own targeted searches: the follow-up of conflicting evidence and the gap
search for a required question the finish gate does not accept (docs/engine.md, *Finish
gate* and *Contradictions*)."""

from collections.abc import Callable, Collection, Iterable, Sequence

from research.engine.contracts import SearchAction
from research.engine.guards import (
    ActionVerdict,
    action_dedupe_key,
    fingerprint_query,
    unmet_questions,
)
from research.engine.run.context import GAP_KEY_PREFIX, RunContext, View
from research.engine.run.progress import display_text
from research.engine.steps import StepPayload

__all__ = ["GAP_QUALIFIERS", "follow_up_query", "gap_search"]

_FOLLOW_UP_QUALIFIERS = (
    "official figures",
    "official statistics",
    "primary source",
    "methodology",
    "latest data",
)


# Qualifiers of the search the program makes for a required question the finish gate does
# not accept when the decider asks to finish without another action (see ``gap_search``):
# the gate asks for a primary or official source or a second independent one, so the words
# ask for those kinds of source — the publisher's own pages ("official", "documentation") or
# original work ("primary source", "study").
GAP_QUALIFIERS = ("official", "documentation", "primary source", "study")


def follow_up_query(
    question_text: str,
    seen_fingerprints: Iterable[str],
    qualifiers: Sequence[str] = _FOLLOW_UP_QUALIFIERS,
) -> str | None:
    """A targeted search for a question whose evidence conflicts (or, with
    ``GAP_QUALIFIERS``, that the finish gate does not accept yet), or ``None``.

    Built from the plan's question text (which the user approved) and a qualifier asking
    for authoritative figures; never from page text, so a page cannot steer the search. The
    first variant not equivalent to an earlier search wins.
    """
    seen = set(seen_fingerprints)
    base = display_text(question_text.rstrip("?"), 240)
    for qualifier in qualifiers:
        query = f"{base} {qualifier}"
        fingerprint = fingerprint_query(query)
        if not fingerprint.empty and fingerprint.key not in seen:
            return query
    return None


def program_search(run: RunContext, action: SearchAction, reason: str) -> ActionVerdict:
    """The accepted verdict of a search the program makes itself (a conflict's follow-up, a
    gap search), deduplicated like the decider's searches of this iteration."""
    fingerprint = fingerprint_query(action.query)
    return ActionVerdict(
        action=action,
        accepted=True,
        reason=reason,
        dedupe_key=action_dedupe_key(
            run.id, action, iteration=run.state.iteration, fingerprint=fingerprint
        ),
        fingerprint=fingerprint,
    )


def gap_search(
    run: RunContext, view: View, done: Collection[str], *, mark_done: Callable[[str], None]
) -> tuple[ActionVerdict, StepPayload] | None:
    """The decider asks to finish with nothing else to do while the finish gate still
    refuses: one targeted search (its step reads the best new result) for the first required
    question the gate does not accept whose key (``GAP_KEY_PREFIX`` and its id) is not in
    ``done``. The decider stops when its own wordings are used up, which can leave most of
    the budget unspent; a search asking for the kind of source the gate wants is the last
    cheap chance before a partial report. Each question gets one, so a question with no
    answer anywhere still ends partial after one more search. A question whose every
    variant was searched already is marked done with ``mark_done``."""
    for qid, _ in unmet_questions(run.plan, view.coverage):
        key = f"{GAP_KEY_PREFIX}{qid}"
        question = run.plan.question(qid)
        if key in done or question is None:
            continue
        query = follow_up_query(question.text, run.state.query_fingerprints, GAP_QUALIFIERS)
        if query is None:
            mark_done(key)
            continue
        action = SearchAction(
            query=query[:300],
            question_ids=[qid],
            rationale=f"Searching once more because the finish gate does not accept {qid}.",
        )
        verdict = program_search(run, action, "Search for a source the finish gate asks for.")
        payload = StepPayload(
            query=action.query,
            question_ids=[qid],
            fingerprint=verdict.fingerprint.key if verdict.fingerprint else "",
            follow_up=key,
            program=True,
        )
        return verdict, payload
    return None
