"""A same-tenant caller who may not see another user's ThoughtMCP memory learns nothing of it from a
plain write: appending to its path, or deleting or writing it in a batch, answers exactly as the
same path without a memory does, and changes nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cairn.auth import access
from cairn.auth.principal import ADMIN, READ, WRITE, Principal, Via
from cairn.domain.errors import CairnError
from cairn.services.documents.inputs import BatchOp
from cairn.services.thoughtmcp.models import Metadata, NewMemory
from tests.fakes.container import fake_container

ALICE = Principal("acme", "alice", frozenset({READ, WRITE}), Via.jwt)
BOB = Principal("acme", "bob", frozenset({READ, WRITE}), Via.jwt)
OWNER = Principal("acme", "owner", frozenset({READ, WRITE, ADMIN}), Via.jwt)


def _answer(call: object) -> tuple[str, str]:
    try:
        call()  # type: ignore[operator]
    except CairnError as exc:
        return type(exc).__name__, exc.message
    return "ok", ""


@pytest.mark.parametrize("how", ["append", "batch delete", "batch append", "batch write", "batch rename"])
def test_a_hidden_memory_answers_as_a_missing_one(tmp_path: Path, how: str) -> None:
    c = fake_container(tmp_path)
    with access.acting_as(OWNER, ADMIN):
        brain = c.brains.create("Thoughts", visibility="tenant")
    with access.acting_as(BOB, WRITE):
        made = c.thoughts.remember(
            brain,
            NewMemory("Bob keeps his spare key under the blue pot", "bob", "s1", "semantic", Metadata()),
        )
    memory_path = c.documents.get_by_id(brain, str(made["memoryId"])).path
    missing_path = memory_path.replace(str(made["memoryId"]), "mem_01nosuchmemorynosuchmemory")

    def call(path: str) -> object:
        if how == "append":
            return lambda: c.documents.append(brain, path, b" and a torch.")
        kind = how.removeprefix("batch ")
        op = BatchOp(kind, path, b"hello", to="notes/moved.md" if kind == "rename" else None)
        return lambda: c.documents.batch(brain, [op])

    with access.acting_as(ALICE, WRITE):
        hidden, missing = _answer(call(memory_path)), _answer(call(missing_path))
    assert hidden[0] == missing[0] != "ok"
    assert re.sub(r"mem_\w+", "mem_X", hidden[1]) == re.sub(r"mem_\w+", "mem_X", missing[1])
    with access.acting_as(BOB, READ):
        kept = c.documents.get_by_id(brain, str(made["memoryId"]))
    assert kept.deleted_at is None and c.documents.bytes_of(kept).endswith(b"blue pot")
