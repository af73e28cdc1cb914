"""RuleReflector: how a session went, from what was said, summarised in the session's own words."""

from __future__ import annotations

import re

import pytest

from cairn.adapters.local.rule_reflect import RuleReflector
from cairn.ports.facts import Utterance
from cairn.ports.reflection import ReflectionDraft, Reflector

REFLECTOR: Reflector = RuleReflector()


def say(n: int, role: str, text: str) -> Utterance:
    return Utterance(str(n), role, role, text)


FIXED = [
    say(1, "user", "My pytest run fails with ImportError: cannot import name 'Settings'."),
    say(2, "assistant", "The module was renamed. Import Settings from cairn.config instead."),
    say(3, "user", "That worked, thanks!"),
]
BROKEN = [
    say(1, "user", "The deploy to staging failed with a 502 error."),
    say(2, "assistant", "Try restarting the gateway service."),
    say(3, "user", "I restarted it and it is still broken. Can you look at the nginx logs?"),
]
HALF_DONE = [
    say(1, "user", "Please rename the config keys and fix the failing test."),
    say(2, "assistant", "I renamed the keys in settings.py."),
    say(3, "user", "Thanks, the keys look good. The test is still broken though."),
]
DECIDED = [
    say(1, "user", "I prefer dark mode in every editor."),
    say(2, "assistant", "Noted, I will remember that you prefer dark mode."),
    say(3, "user", "We decided to use Postgres for the billing service."),
]


def reflect(utterances: list[Utterance], title: str | None = None) -> ReflectionDraft:
    draft = REFLECTOR.reflect(title, utterances)
    assert draft is not None
    return draft


def test_the_reflector_is_named_rules() -> None:
    assert REFLECTOR.name == "rules"


@pytest.mark.parametrize(
    "utterances",
    [
        [],
        [say(1, "user", "Hi!"), say(2, "assistant", "Hello! How can I help?")],
        [say(1, "system", "You are a coding agent with many tools and a long memory of projects.")],
        [say(1, "tool", "ERROR: build failed with exit code 2 after compiling 31 modules.")],
        [say(1, "user", "# Weekly planning notes")],  # a heading names a topic; it says nothing
        [say(1, "assistant", "# Transcript 2026-12-05 13:40 UTC")],
    ],
)
def test_a_session_without_substance_has_no_reflection(utterances: list[Utterance]) -> None:
    assert REFLECTOR.reflect("Empty", utterances) is None


def test_a_message_led_by_a_heading_is_read_past_its_heading() -> None:
    draft = REFLECTOR.reflect(
        None,
        [
            say(1, "user", "# Notes\n\nThe deploy to staging failed with a 502 error."),
            say(2, "assistant", "## Fix\nRestart the gateway service."),
            say(3, "user", "# Update\nThat worked, thanks!"),
        ],
    )
    assert draft is not None and draft.outcome == "success"
    assert "502" in draft.summary and "#" not in draft.summary


def test_a_problem_reported_then_fixed_is_a_success() -> None:
    draft = reflect(FIXED, "Import error")
    assert draft.outcome == "success"
    assert draft.retry_feedback is None
    assert draft.should_record_episode
    assert draft.summary == (
        "Import error. The user's pytest run fails with ImportError: cannot import name 'Settings'. "
        "Import Settings from cairn.config instead. Outcome: success."
    )


def test_an_error_never_fixed_is_a_failure_quoting_what_went_wrong() -> None:
    draft = reflect(BROKEN)
    assert draft.outcome == "failure"
    assert draft.retry_feedback == (
        'What went wrong: "The deploy to staging failed with a 502 error." '
        'Last reported: "I restarted it and it is still broken." '
        'Unresolved request: "Can you look at the nginx logs?"'
    )
    assert draft.highlights[-1] == 'Open: "Can you look at the nginx logs?"'
    assert draft.summary.endswith("Outcome: failure.")
    assert draft.should_record_episode


def test_thanks_and_still_broken_is_partial() -> None:
    draft = reflect(HALF_DONE)
    assert draft.outcome == "partial"
    assert draft.retry_feedback == (
        'What went wrong: "The test is still broken though." '
        'Unresolved request: "Please rename the config keys and fix the failing test."'
    )
    assert draft.summary == (
        'Request: "Please rename the config keys and fix the failing test." '
        "The assistant renamed the keys in settings.py. "
        'Problem: "The test is still broken though." Outcome: partial.'
    )


def test_a_session_without_signals_is_informational_and_keeps_its_decisions() -> None:
    draft = reflect(DECIDED)
    assert draft.outcome == "informational"
    assert draft.retry_feedback is None
    assert draft.highlights == (
        "The user prefers dark mode in every editor.",
        "The assistant will remember that the user prefers dark mode.",
        "The user and others decided to use Postgres for the billing service.",
    )
    assert draft.should_record_episode
    # A decision makes the session matter more than a passing remark does
    assert (
        draft.importance
        > reflect([say(1, "user", "I like green tea."), say(2, "assistant", "Nice!")]).importance
    )


def test_one_passing_remark_is_not_worth_an_episode() -> None:
    draft = reflect([say(1, "user", "I like green tea."), say(2, "assistant", "Nice!")])
    assert draft.outcome == "informational"
    assert not draft.should_record_episode
    assert draft.summary == "The user likes green tea. Outcome: informational."


def test_negated_errors_are_not_failures() -> None:
    draft = reflect([say(1, "user", "The tests pass with no errors now, thanks.")])
    assert draft.outcome == "success"
    assert draft.summary == 'The user: "The tests pass with no errors now, thanks." Outcome: success.'


@pytest.mark.parametrize("session", [BROKEN, HALF_DONE])
def test_everything_quoted_was_said(session: list[Utterance]) -> None:
    draft = reflect(session)
    said = " ".join(u.text for u in session)
    quoted = re.findall(
        r'"([^"]+)"', " ".join([draft.summary, *draft.highlights, draft.retry_feedback or ""])
    )
    assert quoted
    assert all(q in said for q in quoted)


def test_a_locomo_chat_is_summarised_from_its_facts() -> None:
    chat = [
        Utterance("D1:1", "Caroline", "user", "Hey Mel! Good to see you! How have you been?"),
        Utterance("D1:2", "Melanie", "assistant", "Hey Caroline! I'm swamped with the kids & work."),
        Utterance("D1:3", "Caroline", "user", "I went to a LGBTQ support group and it was so powerful."),
        Utterance(
            "D1:4", "Melanie", "assistant", "Thanks for sharing! I'm off to go swimming with the kids."
        ),
    ]
    draft = reflect(chat)
    assert draft.outcome == "success"  # thanks, and nothing went wrong
    assert draft.summary == (
        "Melanie is swamped with the kids & work. "
        "Caroline went to a LGBTQ support group and it was so powerful. "
        "Melanie is off to go swimming with the kids. Outcome: success."
    )
    assert "Melanie is off to go swimming with the kids." in draft.highlights
