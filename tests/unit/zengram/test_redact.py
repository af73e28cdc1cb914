"""A credential given to its name is redacted whatever its length; prose that merely names a
credential word is left alone (services/zengram/redact.py)."""

from __future__ import annotations

import pytest

from cairn.services.zengram.redact import MARKER, redact, redact_all


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("login with password=hunter2 today", "hunter2"),
        ("PASSWORD = x", "= x"),
        ("db_password=ab", "=ab"),
        ("export GITHUB_TOKEN=abc", "abc"),
        ("GET /cb?token=t1&page=2", "t1"),
        ("passwd='pw'", "'pw'"),
        ("api_key=k1 set", "k1"),
        ("client-secret: s3cr3t", "s3cr3t"),
        ("password: hunter2", "hunter2"),
        ('password: "pw"', '"pw"'),
        ("secret: p@ss", "p@ss"),
        ("creds: pass=x1, user=bob", "x1"),
    ],
)
def test_a_named_credential_is_redacted_whatever_its_length(text: str, secret: str) -> None:
    cleaned = redact(text)

    assert secret not in cleaned and MARKER in cleaned


def test_the_name_and_the_text_around_stay() -> None:
    assert redact("creds: password=hunter2, user=bob") == f"creds: password={MARKER}, user=bob"


@pytest.mark.parametrize(
    "text",
    [
        "The password policy needs 12 characters.",
        "Reset your password: it expires in 90 days.",
        "Password: see the vault",
        "token: 42 of them were issued",
        "The secret to good coffee is fresh beans.",
        "Set max_tokens=100 and tokenizer=bert; bypass=true.",
        "if token == None: retry",
        "Use the token: and/or the key.",
        "The compass: north by north-west.",
    ],
)
def test_prose_that_names_a_credential_word_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_a_marker_is_not_redacted_twice() -> None:
    once = redact("password=hunter2")

    assert redact(once) == once


def test_metadata_strings_are_redacted_at_every_depth() -> None:
    metadata = {"env": "DB_PASSWORD=pw1", "hosts": ["a", "token=t"], "n": 3, "deep": {"k": "secret: s3"}}

    assert redact_all(metadata) == {
        "env": f"DB_PASSWORD={MARKER}",
        "hosts": ["a", f"token={MARKER}"],
        "n": 3,
        "deep": {"k": f"secret: {MARKER}"},
    }
