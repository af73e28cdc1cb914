"""JSON from request bodies: nesting bounded, lone surrogates named (domain/json_input.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cairn.domain.errors import InvalidInput
from cairn.domain.json_input import MAX_DEPTH, loads, lone_surrogate


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_nesting_up_to_the_bound_is_read_and_past_it_refused_never_a_recursion_error() -> None:
    assert loads(nested(MAX_DEPTH)) == json.loads(nested(MAX_DEPTH))
    for depth in (MAX_DEPTH + 1, 5_000, 100_000):
        with pytest.raises(InvalidInput, match=f"nested deeper than {MAX_DEPTH} levels"):
            loads(nested(depth))
    with pytest.raises(InvalidInput, match="nested deeper"):
        loads('{"a": ' + nested(70) + "}")


@pytest.mark.parametrize(
    ("raw", "escape"),
    [
        (r'{"a": "x\ud800y"}', r"\ud800"),
        (r'{"a": "\udc00"}', r"\udc00"),
        (r'["\ud800\u0041"]', r"\ud800"),
        (r'{"\ud83d": 1}', r"\ud83d"),
    ],
)
def test_a_lone_surrogate_is_named(raw: str, escape: str) -> None:
    with pytest.raises(InvalidInput, match="lone surrogate"):
        loads(raw)
    found = lone_surrogate(raw.encode())
    assert found is not None and found[1] == escape and raw.encode()[found[0] :].startswith(escape.encode())


def test_a_pair_an_escaped_backslash_and_bad_json_are_told_apart() -> None:
    assert loads(r'{"a": "\ud83d\ude00"}') == {"a": "\U0001f600"}
    assert loads(r'{"a": "\\ud800"}') == {"a": "\\ud800"}  # a backslash, then text
    assert lone_surrogate(rb'{"a": "\\ud800"}') is None
    with pytest.raises(InvalidInput, match="not valid JSON"):
        loads(b'{"a": ')
    with pytest.raises(InvalidInput, match="not valid JSON"):
        loads(b"\xff\xfe")


LONE = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])


@given(st.lists(st.one_of(st.characters(), LONE), max_size=12))
def test_the_byte_scan_agrees_with_the_parsed_text(chars: list[str]) -> None:
    text = "".join(chars)
    raw = json.dumps({"t": text}).encode()  # ASCII: every non-ASCII character escaped
    parsed = json.loads(raw)["t"]
    try:
        parsed.encode("utf-8")
        valid = True
    except UnicodeEncodeError:
        valid = False
    assert (lone_surrogate(raw) is None) == valid
