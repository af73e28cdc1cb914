"""The Generator port's helpers and error type, and the scripted fake services test with."""

from __future__ import annotations

import pytest

from cairn.domain.errors import CairnError
from cairn.ports.generator import Answer, Citation, Delta, Done, GenerationError, Passage, collect
from tests.fakes.generator import ScriptedGenerator

pytestmark = pytest.mark.anyio

PASSAGE = Passage("c1", "d1", "Alice ran 10k.")


@pytest.mark.parametrize(
    ("code", "retryable"),
    [
        ("generation_timeout", True),
        ("rate_limited", True),
        ("generation_failed", False),
        ("bad_response", False),
    ],
)
def test_generation_errors_carry_code_and_a_default_retryable(code: str, retryable: bool) -> None:
    error = GenerationError(code, "msg")  # type: ignore[arg-type]
    assert isinstance(error, CairnError)
    assert (error.code, error.message, error.retryable) == (code, "msg", retryable)
    assert GenerationError(code, "msg", retryable=not retryable).retryable is not retryable  # type: ignore[arg-type]


def test_unknown_codes_are_refused() -> None:
    with pytest.raises(ValueError):
        GenerationError("oops", "msg")  # type: ignore[arg-type]


async def test_collect_gathers_citations_and_the_final_answer() -> None:
    citation = Citation("c1", "d1", 0, 14, "Alice ran 10k.")
    script = ScriptedGenerator([Delta("Alice "), Delta("ran 10k."), citation, Done("Alice ran 10k.", "m")])
    assert await script.complete("q", [PASSAGE]) == Answer("Alice ran 10k.", [citation], "m")
    assert script.calls == [("q", [PASSAGE])]


async def test_collect_treats_a_stream_without_done_as_a_bad_response() -> None:
    with pytest.raises(GenerationError) as caught:
        await collect(ScriptedGenerator([Delta("half")]).stream("q", []))
    assert caught.value.code == "bad_response"


async def test_scripted_generator_fails_where_told_after_the_events_before() -> None:
    failure = GenerationError("generation_failed", "boom", retryable=True)
    seen = []
    with pytest.raises(GenerationError) as caught:
        async for event in ScriptedGenerator([Delta("Par"), Delta("tial"), failure]).stream("q", []):
            seen.append(event)
    assert seen == [Delta("Par"), Delta("tial")] and caught.value is failure


async def test_scripted_answer_builds_a_well_formed_stream() -> None:
    answer = await ScriptedGenerator.answer("Alice ran 10k.", cite=PASSAGE).complete("q", [PASSAGE])
    assert answer.text == "Alice ran 10k." and answer.model == "scripted"
    assert [(c.answer_start, c.answer_end, c.quote) for c in answer.citations] == [(0, 14, PASSAGE.text)]
