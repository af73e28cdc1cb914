"""RuleFactExtractor: what people said about themselves, in the third person, chit-chat left out."""

from __future__ import annotations

from datetime import datetime

import pytest

from cairn.adapters.local.rule_facts import RuleFactExtractor
from cairn.adapters.local.rule_facts_dates import anchor_dates
from cairn.adapters.local.rule_facts_rewrite import Voice, rewrite
from cairn.domain.models import MemoryType
from cairn.ports.facts import FactDraft, FactExtractor, Utterance

SAID = datetime(2023, 5, 8, 13, 56)  # "1:56 pm on 8 May, 2023", a Monday
EXTRACTOR: FactExtractor = RuleFactExtractor()


def turn(uid: str, speaker: str, text: str, role: str = "user", said_at: datetime | None = SAID) -> Utterance:
    return Utterance(uid, speaker, role, text, said_at)


def texts(utterances: list[Utterance]) -> list[str]:
    return [f.text for f in EXTRACTOR.extract(utterances)]


LOCOMO_OPENING = [
    turn("D1:1", "Caroline", "Hey Mel! Good to see you! How have you been?"),
    turn(
        "D1:2",
        "Melanie",
        "Hey Caroline! Good to see you! I'm swamped with the kids & work. What's up with you? Anything new?",
    ),
    turn("D1:3", "Caroline", "I went to a LGBTQ support group yesterday and it was so powerful."),
    turn(
        "D1:4",
        "Melanie",
        "Wow, that's cool, Caroline! What happened that was so awesome? Did you hear any inspiring stories?",
    ),
    turn("D1:13", "Caroline", "Thanks, Melanie! That's really sweet. Is this your own painting?"),
    turn("D1:14", "Melanie", "Yeah, I painted that lake sunrise last year! It's special to me."),
]


def test_the_extractor_is_named_rules() -> None:
    assert EXTRACTOR.name == "rules"


def test_a_locomo_opening_keeps_the_facts_and_drops_the_chit_chat() -> None:
    # When the opening of a LoCoMo dialogue is extracted
    facts = EXTRACTOR.extract(LOCOMO_OPENING)
    # Then only the three statements survive, each rewritten and traced to its turn
    assert [(f.text, f.source_ids) for f in facts] == [
        ("Melanie is swamped with the kids & work.", ("D1:2",)),
        (
            "Caroline went to a LGBTQ support group yesterday (on 7 May 2023) and it was so powerful.",
            ("D1:3",),
        ),
        ("Melanie painted that lake sunrise last year (in 2022).", ("D1:14",)),
    ]
    support_group = facts[1]
    assert support_group.type is MemoryType.event and support_group.category == "event"
    assert support_group.subject == "Caroline"
    assert support_group.entities == ("Caroline", "LGBTQ")
    assert facts[0].type is MemoryType.status


def test_the_brief_example_is_rewritten_word_for_word() -> None:
    said = [turn("u1", "Caroline", "I went to a support group yesterday")]
    assert texts(said) == ["Caroline went to a support group yesterday (on 7 May 2023)."]


@pytest.mark.parametrize(
    "text",
    [
        "Hey Mel! Good to see you!",
        "Thanks!",
        "That's awesome",
        "Did you go to the Pride parade last week?",
        "Wow, love that painting! So cool you found such a helpful group.",
        "You'd be a great counselor! Your empathy will really help people.",
        "I'm so happy for you! Can't wait to see it!",
        "Take care, talk soon!",
        "We can do it! Together, we can make a difference!",
    ],
)
def test_chit_chat_yields_nothing(text: str) -> None:
    assert texts([turn("u1", "Caroline", text), turn("u2", "Melanie", "Sure.")]) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I joined a pottery class last week.", "last week (the week before 8 May 2023)."),
        ("I joined a pottery class last Tues.", "last Tues (on 2 May 2023)."),
        ("I started a new job two days ago.", "two days ago (on 6 May 2023)."),
        ("I'm moving to Denver next month.", "next month (in June 2023)."),
        ("I have a job interview tomorrow.", "tomorrow (on 9 May 2023)."),
        ("I will run a charity race on Saturday.", "on Saturday (on 13 May 2023)."),
        ("I ran a charity race on Saturday.", "on Saturday (on 6 May 2023)."),
        ("I went camping last summer.", "last summer (in summer 2022)."),
        ("I quit my job three months ago.", "three months ago (in February 2023)."),
        ("I can't wait for tomorrow's grand opening!", "tomorrow's (on 9 May 2023) grand opening."),
        ("I met my new manager the day before yesterday.", "the day before yesterday (on 6 May 2023)."),
        ("I fly to Lisbon the day after tomorrow.", "the day after tomorrow (on 10 May 2023)."),
        ("I have my thesis defence a week from today.", "a week from today (on 15 May 2023)."),
        ("I hand back the keys three days from tomorrow.", "three days from tomorrow (on 12 May 2023)."),
        ("I'm moving to Oslo two months from now.", "two months from now (in July 2023)."),
    ],
)
def test_relative_dates_are_anchored_to_when_they_were_said(text: str, expected: str) -> None:
    [fact] = texts([turn("u1", "Caroline", text)])
    assert fact.startswith("Caroline ") and fact.endswith(expected)


def test_without_a_said_at_relative_dates_are_left_alone() -> None:
    said = [turn("u1", "Caroline", "I went to a support group yesterday.", said_at=None)]
    assert texts(said) == ["Caroline went to a support group yesterday."]


@pytest.mark.parametrize(
    "habit",
    [
        "I water the ficus every Tuesday evening.",
        "We run each Monday morning.",
        "The bins go out on Sundays.",
        "I call my mother every other Sunday.",
    ],
)
def test_a_habit_on_a_weekday_is_no_date(habit: str) -> None:
    assert anchor_dates(habit, SAID.date()) == (habit, 0)
    once, count = anchor_dates("I watered the ficus on Tuesday.", SAID.date())
    assert count == 1 and "(on " in once  # one Tuesday still is a date


def test_anchor_dates_reports_how_many_phrases_it_anchored() -> None:
    text, count = anchor_dates("We met last week and again yesterday (on 7 May 2023).", SAID.date())
    assert text == "We met last week (the week before 8 May 2023) and again yesterday (on 7 May 2023)."
    assert count == 1  # the already anchored phrase is left alone


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I have two kids.", "Gina has two kids."),
        ("I do yoga every morning.", "Gina does yoga every morning."),
        ("I watch horror movies.", "Gina watches horror movies."),
        ("I really enjoy hiking.", "Gina really enjoys hiking."),
        ("I try to read daily.", "Gina tries to read daily."),
        ("I don't like spiders.", "Gina doesn't like spiders."),
        ("I need a break.", "Gina needs a break."),
        (
            "I'm a dancer and I've been dancing since I was five.",
            "Gina is a dancer and Gina has been dancing since Gina was five.",
        ),
        ("I'd love to open a studio.", "Gina would love to open a studio."),
        ("I'd never been there.", "Gina had never been there."),
        ("My husband and I went camping.", "Gina's husband and Gina went camping."),
        ("It's special to me and it's mine.", "It's special to Gina and it's Gina's."),
        ("We roasted marshmallows.", "Gina and others roasted marshmallows."),
        ("I saw your painting and you're talented.", "Gina saw Jon's painting and Jon is talented."),
        ("Got the tattoo a few years ago.", "Gina got the tattoo a few years ago."),
        ("Researching adoption agencies.", "Gina is researching adoption agencies."),
        ("Biking sounds like fun.", "Biking sounds like fun."),
    ],
)
def test_pronouns_become_the_speaker_with_agreeing_verbs(text: str, expected: str) -> None:
    assert rewrite(text, Voice("Gina"), Voice("Jon")).text == expected


def test_preferences_plans_and_relationships_are_labelled() -> None:
    said = [
        turn("1", "Melanie", "I love painting landscapes."),
        turn("2", "Caroline", "I'm going to Paris next month."),
        turn("3", "Jon", "My sister lives in Boston."),
    ]
    facts = {f.source_ids[0]: f for f in EXTRACTOR.extract(said)}
    assert facts["1"].text == "Melanie loves painting landscapes."
    assert (facts["1"].type, facts["1"].category) == (MemoryType.fact, "preference")
    assert facts["2"].text == "Caroline is going to Paris next month (in June 2023)."
    assert facts["2"].category == "plan" and facts["2"].entities == ("Caroline", "Paris")
    assert facts["3"].text == "Jon's sister lives in Boston."
    assert facts["3"].category == "relationship" and facts["3"].entities == ("Jon", "Boston")
    # A dated plan naming a place matters more than a plain liking
    assert facts["2"].importance > facts["1"].importance


def test_a_sentence_opening_word_is_not_taken_for_a_name() -> None:
    [fact] = EXTRACTOR.extract([turn("1", "Caroline", "Yesterday I met Anna at the Grand Canyon.")])
    assert fact.text == "Yesterday (on 7 May 2023) Caroline met Anna at the Grand Canyon."
    assert fact.entities == ("Caroline", "Anna", "Grand Canyon")


def test_bare_roles_are_named_the_user_and_the_assistant() -> None:
    said = [
        turn("1", "user", "I prefer tabs over spaces and my editor is Vim.", said_at=None),
        turn("2", "assistant", "I'll update the config file for you.", role="assistant", said_at=None),
    ]
    facts = EXTRACTOR.extract(said)
    assert [f.text for f in facts] == [
        "The user prefers tabs over spaces and the user's editor is Vim.",
        "The assistant will update the config file for the user.",
    ]
    assert [f.subject for f in facts] == ["The user", "The assistant"]
    assert facts[0].entities == ("Vim",)


def test_a_message_led_by_a_heading_still_yields_its_facts() -> None:
    said = [
        turn(
            "1",
            "Caroline",
            "# Catch-up\n\nI moved to Berlin last month.\n## Next\nWe decided to adopt a dog.",
        )
    ]
    assert texts(said) == texts(
        [turn("1", "Caroline", "I moved to Berlin last month. We decided to adopt a dog.")]
    )
    assert len(texts(said)) == 2


@pytest.mark.parametrize("breaks", ["\n", "\r", "\r\n", "\u2028"])
def test_a_heading_is_dropped_at_any_line_break(breaks: str) -> None:
    said = [turn("1", "Caroline", f"# Catch-up{breaks}I moved to Berlin last month.")]
    plain = texts([turn("1", "Caroline", "I moved to Berlin last month.")])
    assert texts(said) == plain and len(plain) == 1


def test_a_hash_line_in_a_fenced_code_block_is_a_comment_not_a_heading() -> None:
    from cairn.adapters.local.extractive_text import without_headings

    code = "```\n# retry twice\nrun()\n```"
    assert without_headings(f"# Fix\n{code}\n## Done") == code


def test_system_and_tool_messages_yield_nothing() -> None:
    said = [
        turn("1", "system", "I am the system. My rules: be helpful to the user.", role="system"),
        turn("2", "search", "I found 3 files in the repository.", role="tool"),
    ]
    assert EXTRACTOR.extract(said) == []


def test_identical_facts_are_kept_once_with_every_source() -> None:
    said = [
        turn("1", "Caroline", "I joined a pottery class last Tues."),
        turn("2", "Caroline", "Yes! I joined a pottery class last Tues."),
    ]
    assert EXTRACTOR.extract(said) == [
        FactDraft(
            text="Caroline joined a pottery class last Tues (on 2 May 2023).",
            source_ids=("1", "2"),
            type=MemoryType.event,
            category="event",
            subject="Caroline",
            entities=("Caroline",),
            importance=0.6,
        )
    ]


def test_extraction_is_deterministic_and_every_fact_names_its_source() -> None:
    first, second = EXTRACTOR.extract(LOCOMO_OPENING), EXTRACTOR.extract(LOCOMO_OPENING)
    assert first == second
    ids = {u.id for u in LOCOMO_OPENING}
    assert all(f.source_ids and set(f.source_ids) <= ids for f in first)
    assert all(0.0 <= f.importance <= 1.0 for f in first)


def test_no_utterances_no_facts() -> None:
    assert EXTRACTOR.extract([]) == []


@pytest.mark.parametrize(
    ("said_on", "text"),
    [
        (datetime(1, 1, 2).date(), "I moved to Paris 3 days ago, and 2 months ago, yesterday and last week."),
        (datetime(9999, 12, 30).date(), "I leave tomorrow, in 3 days and in 2 months."),
        (datetime(2026, 3, 1).date(), "That was 99999999 days ago."),
    ],
)
def test_dates_past_the_calendars_ends_are_left_as_said(said_on: object, text: str) -> None:
    anchored, _ = anchor_dates(text, said_on)  # type: ignore[arg-type]
    assert anchored.startswith(text.split(" ")[0])  # no OverflowError, and the text is kept


def test_a_message_said_at_the_start_of_time_is_still_extracted() -> None:
    said = Utterance("m1", "user", "user", "I moved to Paris 3 days ago.", said_at=datetime(1, 1, 2))
    facts = RuleFactExtractor().extract([said])
    assert any("Paris" in f.text for f in facts)


@pytest.mark.timeout(10)  # 52 s for 1,000 speakers, minutes for 3,000: quadratic, past re's cache
def test_many_speakers_cost_no_pattern_or_pass_per_speaker_per_sentence() -> None:
    said = [
        Utterance(str(i), f"Speaker{i}", "user", f"I like tea{i}, Speaker{i + 1}.", datetime(2024, 5, 1))
        for i in range(3_000)
    ]
    facts = RuleFactExtractor().extract(said)
    assert [f.text for f in facts[:2]] == ["Speaker0 likes tea0.", "Speaker1 likes tea1."]
