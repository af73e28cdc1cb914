"""Whose items a principal acts for (auth/access.py): itself and its sub-users (`<subject>:<name>`),
never another kind of principal's. An identity provider may issue any `sub`; one that is `key` or
`arn`, or starts with `key:` or `arn:`, names API keys' or AWS callers' subjects and acts for none."""

from __future__ import annotations

import pytest

from cairn.auth.access import acts_for
from cairn.auth.principal import READ, WRITE, Principal, Via

KEY = "key:key_01"
ROLE = "arn:aws:iam::123456789012:role/agent"


def who(subject: str, via: Via) -> Principal:
    return Principal("local", subject, frozenset({READ, WRITE}), via)


@pytest.mark.parametrize(
    ("subject", "via", "owner", "allowed"),
    [
        ("alice", Via.jwt, "alice", True),
        ("alice", Via.jwt, "alice:notes-bot", True),  # a sub-user of its own
        ("alice", Via.jwt, "alicia", False),
        (KEY, Via.api_key, KEY, True),
        (KEY, Via.api_key, f"{KEY}:bob", True),
        (KEY, Via.job, KEY, True),  # a job acts for the key that started it
        (ROLE, Via.iam, ROLE, True),
        ("key", Via.jwt, KEY, False),  # a token's sub of `key` would be every key's parent
        ("key", Via.jwt, f"{KEY}:bob", False),
        (KEY, Via.jwt, KEY, False),  # a token claiming a key's own subject
        ("arn", Via.jwt, ROLE, False),
        ("arn:aws:iam::123456789012", Via.jwt, ROLE, False),
        ("key", Via.jwt, "key", False),
        ("keystone", Via.jwt, "keystone:x", True),  # only the whole first segment is reserved
    ],
)
def test_a_principal_acts_for_itself_and_its_sub_users_of_its_own_kind(
    subject: str, via: Via, owner: str, allowed: bool
) -> None:
    assert acts_for(who(subject, via), "local", owner) is allowed
