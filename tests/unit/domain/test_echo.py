"""What an error message may say of a caller's input (domain/echo.py): bounded, no credential the
scrub knows, no control character, bidirectional control or lone surrogate as it came."""

from __future__ import annotations

import pytest

from cairn.domain.echo import MESSAGE_CHARS, safe_echo
from cairn.domain.errors import CairnError, InvalidInput, NotFound
from cairn.domain.text import excerpt

KEY = "cairn_key_" + "Zq9" * 15
CREDENTIALS = (f"Bearer {KEY}", KEY, "https://alice:hunter2secretpw@example.com/x")
SECRET_PARTS = ("Zq9Zq9Zq9", "hunter2secretpw")
UNSAFE = "\x00\x01\x1b\r\n\t\x7f\x9b\u202e\u2066\u2028\ud800"


def _safe(said: str) -> None:
    assert not any(ch in said for ch in UNSAFE), repr(said)
    assert not any(part in said for part in SECRET_PARTS), said


def test_a_plain_message_is_said_as_it_is() -> None:
    message = "no brain matches 'notes-2024' — try `cairn brains list`"
    assert safe_echo(message) == message
    assert NotFound(message).message == message


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_a_credential_is_not_said_back(credential: str) -> None:
    said = safe_echo(f"no brain matches '{credential}'")
    _safe(said)
    assert said.startswith("no brain matches '") and "REDACTED" in said


def test_control_characters_are_escaped_not_dropped() -> None:
    said = safe_echo("unknown tool: x\x1b[31mred\x1b[0m\r\nForged: line\x00\u202e\ud800")
    _safe(said)
    assert said == "unknown tool: x\\x1b[31mred\\x1b[0m\\x0d\\x0aForged: line\\x00\\u202e\\ud800"


def test_a_long_message_is_cut_and_marked_with_its_length() -> None:
    said = safe_echo("brain not found: " + "A" * 1_000_000)
    assert len(said) <= MESSAGE_CHARS + 40
    assert said.endswith(f"… ({17 + 1_000_000} characters)")


def test_a_message_escaped_past_its_bound_is_cut() -> None:
    said = safe_echo("\x1b" * MESSAGE_CHARS)
    assert len(said) <= MESSAGE_CHARS + 40 and said.endswith(f"… ({MESSAGE_CHARS} characters)")
    _safe(said)


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_every_core_error_says_its_message_safely(credential: str) -> None:
    error = InvalidInput(f"bad path {credential}\x1b[2J" + "x" * 5000)
    _safe(error.message)
    _safe(str(error))
    assert len(error.message) <= CairnError.max_message + 40


@pytest.mark.parametrize("credential", CREDENTIALS)
def test_an_excerpt_never_quotes_part_of_a_credential(credential: str) -> None:
    """Cut first, a key's first 64 characters would be quoted, unrecognisable to a later scrub."""
    for padding in ("", "p " * 20, "p " * 30):
        said = excerpt(padding + credential + "tail" * 100)
        assert not any(part[:6] in said for part in SECRET_PARTS), said
