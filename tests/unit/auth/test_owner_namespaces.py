"""Whose items a principal acts for (auth/access.py): itself and its sub-users (`<subject>:<name>`),
never another kind of principal's. An identity provider may issue any `sub`; one that is `key`,
`arn`, `aws` or `local`, or starts with one of them and `:`, names API keys', AWS callers' or the machine
owner's subjects: it acts for none, owns none of their brains, creates none, nor do its jobs."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from cairn.auth import access
from cairn.auth.access import LOCAL_OWNER, acts_for, may, owns
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.domain.errors import Forbidden
from cairn.domain.models import Brain, Visibility

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
        ("local", Via.jwt, "local", False),  # the machine owner's subject
        ("local", Via.jwt, "local:bob", False),
        ("local", Via.static_token, "local:bob", True),
        ("keystone", Via.jwt, "keystone:x", True),  # only the whole first segment is reserved
        ("aws:AIDAEXAMPLE", Via.iam, "aws:AIDAEXAMPLE", True),  # an AWS caller with no ARN
        ("aws:AIDAEXAMPLE", Via.jwt, "aws:AIDAEXAMPLE", False),
    ],
)
def test_a_principal_acts_for_itself_and_its_sub_users_of_its_own_kind(
    subject: str, via: Via, owner: str, allowed: bool
) -> None:
    assert acts_for(who(subject, via), "local", owner) is allowed


def brain_of(owner: str, tenant: str = "acme") -> Brain:
    moment = datetime(2026, 1, 1, tzinfo=UTC)
    return Brain(
        id="brn_1", slug="diary", name="Diary", owner_tenant=tenant, owner=owner, embedding_model="m",
        embedding_dim=4, visibility=Visibility.private, created_at=moment, updated_at=moment,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("subject", "via", "owner", "owned"),
    [
        (KEY, Via.api_key, KEY, True),
        (KEY, Via.job, KEY, True),
        (ROLE, Via.iam, ROLE, True),
        (LOCAL_OWNER, Via.static_token, LOCAL_OWNER, True),
        (LOCAL_OWNER, Via.open, LOCAL_OWNER, True),
        ("alice", Via.jwt, "alice", True),
        (KEY, Via.jwt, KEY, False),  # a token whose sub is a key's subject owns none of its brains
        (ROLE, Via.jwt, ROLE, False),
        (LOCAL_OWNER, Via.jwt, LOCAL_OWNER, False),  # nor the machine owner's
        (LOCAL_OWNER, Via.api_key, LOCAL_OWNER, False),
        ("alice", Via.jwt, "alicia", False),
    ],
)
def test_a_private_brain_is_its_owners_of_the_owners_kind_only(
    subject: str, via: Via, owner: str, owned: bool
) -> None:
    principal = Principal("acme", subject, frozenset({READ, WRITE, ADMIN}), via)
    brain = brain_of(owner)
    assert owns(principal, brain) is owned
    assert may(principal, brain, READ) is owned and may(principal, brain, WRITE) is owned
    with access.acting_as(principal, ADMIN):
        assert access.may_govern(brain) is owned and access.may_erase(brain) is owned
    assert not owns(replace(principal, tenant="other"), brain_of(owner))


@pytest.mark.parametrize("subject", [KEY, ROLE, LOCAL_OWNER, f"{KEY}:bob"])
def test_a_token_with_another_kinds_subject_creates_no_brain_and_its_jobs_own_nothing(subject: str) -> None:
    token = Principal("acme", subject, frozenset({READ, WRITE, ADMIN}), Via.jwt)
    with access.acting_as(token, ADMIN), pytest.raises(Forbidden):
        access.creator()
    with access.acting_as(token, WRITE):
        started_by = access.job_principal()
    with access.on_behalf_of(started_by):
        assert not access.may_erase(brain_of(subject))
        running = access.current()
        assert running is not None and not access.acts_for(running.principal, "acme", subject)
