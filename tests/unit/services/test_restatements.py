"""The rule that puts a newer restatement above what it restates (services/search/restatements.py),
on vectors arranged by hand, and through memory_search's service on the embedded store and on the
AWS adapters (DynamoDB under moto, the OpenSearch fake), whose `get_vectors` it reads."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest

from cairn.services.search.restatements import (
    CUES,
    LEEWAY,
    RESTATEMENT,
    VALUE_CUES,
    Said,
    restated_first,
    says_change,
)
from tests.support.shapes import SHAPES, adapters_for, process
from tests.support.word_embedder import WordEmbedder


def at(year: int) -> datetime:
    return datetime(year, 1, 1, tzinfo=UTC)


def vec(angle: float) -> np.ndarray:
    """Unit vectors in a plane: the cosine of two is the cosine of their angles' difference."""
    return np.array([np.cos(angle), np.sin(angle), 0.0], dtype=np.float32)


CLOSE = float(np.arccos(RESTATEMENT)) * 0.5  # an angle whose pair is well above RESTATEMENT
FAR = float(np.arccos(RESTATEMENT)) * 1.5  # one whose pair is below it


class Vectors:
    def __init__(self, vectors: Mapping[str, np.ndarray]) -> None:
        self.vectors = vectors
        self.calls: list[list[str]] = []

    def __call__(self, keys: Sequence[str]) -> Mapping[str, object]:
        self.calls.append(list(keys))
        return {k: self.vectors[k] for k in keys if k in self.vectors}


def test_a_newer_correction_moves_above_the_note_it_restates() -> None:
    said = [
        Said("old", at(2024), 0.62, "Swimming lessons are on Tuesdays."),
        Said("other", at(2023), 0.50, "The pool closes at nine."),
        Said("new", at(2025), 0.55, "Swimming lessons moved to Wednesdays."),
    ]
    vectors = Vectors({"old": vec(0.0), "other": vec(FAR), "new": vec(CLOSE)})
    assert restated_first(said, vectors) == [2, 0, 1]
    assert len(vectors.calls) == 1  # one batch read


def test_each_condition_holds_it_back() -> None:
    base = Said("old", at(2024), 0.62, "Swimming lessons are on Tuesdays.")
    cases = {
        "no change said": Said("new", at(2025), 0.60, "Swimming lessons are on Tuesdays at five."),
        "written before": Said("new", at(2023), 0.60, "Swimming lessons moved to Wednesdays."),
        "answers less well": Said("new", at(2025), 0.62 - LEEWAY - 0.01, "Swimming lessons moved."),
    }
    for why, newer in cases.items():
        assert restated_first([base, newer], Vectors({"old": vec(0.0), "new": vec(CLOSE)})) == [0, 1], why
    unlike = Said("new", at(2025), 0.60, "The pool moved to Mill Road.")
    assert restated_first([base, unlike], Vectors({"old": vec(0.0), "new": vec(FAR)})) == [0, 1]
    gone = Vectors({"old": vec(0.0)})  # its vector deleted meanwhile
    assert restated_first([base, Said("new", at(2025), 0.6, "It was moved to later.")], gone) == [0, 1]


def test_the_latest_of_a_chain_comes_first() -> None:
    said = [
        Said("v2024", at(2024), 0.70, "The rate limit is 100 requests a minute."),
        Said("v2025", at(2025), 0.66, "The rate limit was changed to 200 a minute."),
        Said("v2026", at(2026), 0.64, "The rate limit changed again, to 300 a minute."),
    ]
    vectors = Vectors({"v2024": vec(0.0), "v2025": vec(CLOSE / 2), "v2026": vec(CLOSE)})
    assert restated_first(said, vectors) == [2, 1, 0]


@pytest.mark.parametrize("cue", CUES)
def test_every_cue_counts_in_any_case_as_a_whole_word(cue: str) -> None:
    assert says_change(f"The stand-up {cue.upper()} at nine.")
    assert says_change(f"the stand-up {cue} at nine")
    assert not says_change(f"the stand-up {cue}x at nine")
    assert not says_change(f"the stand-up x{cue} at nine")


@pytest.mark.parametrize("cue", VALUE_CUES)
def test_a_value_cue_counts_with_the_number_that_changed(cue: str) -> None:
    assert says_change(f"The confocal rate {cue.upper()} to £42 an hour.")
    assert says_change(f"the rate, {cue} 35 percent")
    assert not says_change(f"the team {cue} its spirits at the party")
    assert not says_change(f"the rate {cue}. It is 42 now.")  # the number is in another sentence


def test_a_value_correction_moves_above_the_old_value() -> None:
    said = [
        Said("old", at(2024), 0.70, "Northline pays $31 per truck per month."),
        Said("new", at(2025), 0.64, "Northline renewed at $27 per truck per month, down from $31."),
    ]
    assert restated_first(said, Vectors({"old": vec(0.0), "new": vec(CLOSE)})) == [1, 0]
    raised_funds = Said("new", at(2025), 0.64, "We raised funds for the shelter at the run.")
    assert restated_first([said[0], raised_funds], Vectors({"old": vec(0.0), "new": vec(CLOSE)})) == [0, 1]


def test_words_that_only_hold_a_cue_do_not_count() -> None:
    assert not says_change("The old logo was removed and the page is unchanged.")
    assert not says_change("She reinstated the rule; the alert stays as it was.")
    assert says_change("The retro is postponed to Friday.")


def test_hand_overs_and_rising_values_are_changes_and_dates_that_fall_are_not() -> None:
    assert says_change("From 1 March Tom Okafor takes over the weeknight rota from Sian Holt.")
    assert says_change("Tom has been taking it over since the spring.")
    assert says_change("From April the standard consultation rises to £52.")
    assert says_change("The courier fee goes up to $9 a parcel.")
    assert not says_change("Her birthday falls on 12 June, and Rose booked 3 tables.")
    assert not says_change("The consultation room rises above the car park.")  # no number after it


@pytest.mark.parametrize(
    "said",
    [
        [Said("a", at(2024), 0.7, "Moved to Wednesdays."), Said("b", at(2023), 0.6, "Moved later.")],
        [Said("a", at(2024), 0.7, "On Tuesdays."), Said("b", at(2025), 0.6, "At five.")],
        [Said("a", at(2024), 0.7, "On Tuesdays."), Said("b", at(2025), 0.3, "Moved to Wednesdays.")],
    ],
)
def test_vectors_are_not_read_when_nothing_could_move(said: list[Said]) -> None:
    vectors = Vectors({})
    assert restated_first(said, vectors) == [0, 1]
    assert vectors.calls == []


def topic_embedder() -> WordEmbedder:
    """ "swimming" and "porto" weigh 2, "tuesday", "wednesday", "outbound" and "return" 1 each."""
    return WordEmbedder(
        {
            **{"swimming": (0, 2.0), "tuesday": (1, 1.0), "wednesday": (2, 1.0)},
            **{"porto": (3, 2.0), "outbound": (4, 1.0), "return": (5, 1.0)},
        },
        model_id="topics-64",
    )


@pytest.mark.parametrize("shape", SHAPES)
def test_memory_search_puts_the_correction_first_on_each_store(
    shape: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    with adapters_for(shape, request, tmp_path) as adapters:
        c = process(replace(adapters, embedder=topic_embedder()), tmp_path)
        brain = c.brains.create("family")
        for path, text in (
            ("swimming.md", "Ellie's swimming lessons are on Tuesdays."),
            ("outbound.md", "Outbound flight to Porto on 24 July."),
            ("bins.md", "The bins go out on Thursday night."),
            ("swimming-moved.md", "Ellie's swimming lessons moved to Wednesdays; Tuesday is no longer hers."),
            ("return.md", "Return flight from Porto on 7 August."),
        ):
            c.documents.write(brain, f"notes/{path}", text.encode())

        hits = c.search.search(brain, "Swimming on Tuesday?", top_k=3, count_access=False).hits
        assert [h.path for h in hits][:2] == ["notes/swimming-moved.md", "notes/swimming.md"]
        blends = [float(h.component_scores["blend"] or 0.0) for h in hits]
        assert blends[1] > blends[0]  # by relevance alone the old note led
        assert hits[0].score >= hits[1].score

        hits = c.search.search(brain, "Outbound to Porto?", top_k=3, count_access=False).hits
        assert [h.path for h in hits][:2] == ["notes/outbound.md", "notes/return.md"]  # nothing changed
