"""batch_forget beside other writers: a memory whose forget keeps losing to another writer is
listed under failures and the others are forgotten, rather than the whole batch failing."""

from __future__ import annotations

from typing import Any

import pytest

from cairn.domain.errors import DamagedContent, RecordConflict
from tests.integration.mcp.conftest import LiveServer
from tests.integration.thoughtmcp.conftest import data, thought

pytestmark = pytest.mark.anyio


async def three_notes(t: Any, text: str) -> list[str]:
    """Alice's three memories of `text`, by id."""
    said = []
    for n in range(3):
        args = {"content": f"Note {n}: {text}", "userId": "alice", "sessionId": "s"}
        said.append(await t.call_tool("remember", {**args, "primarySector": "semantic"}))
    return [data(answer)["memoryId"] for answer in said]


async def test_a_memory_whose_forget_keeps_losing_is_a_failure_and_the_rest_are_forgotten(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with thought(live) as t:
        ids = await three_notes(t, "the otter lives by the river")
        documents = live.container.thoughts.documents
        erase = documents.erase

        def loses_for_the_second(brain: Any, path: str, **kwargs: Any) -> Any:
            if ids[1] in path:
                raise RecordConflict("another process wrote the document first")
            return erase(brain, path, **kwargs)

        monkeypatch.setattr(documents, "erase", loses_for_the_second)
        answer = data(await t.call_tool("batch_forget", {"memoryIds": ids}))
        left = data(await t.call_tool("batch_recall", {"userId": "alice", "memoryIds": ids}))

    assert answer["deleted"] == [ids[0], ids[2]] and answer["successCount"] == 2
    assert answer["failures"] == [
        {"memoryId": ids[1], "error": "Memory kept changing while it was being forgotten"}
    ]
    assert [m["id"] for m in left["memories"]] == [ids[1]]


async def test_a_memory_whose_forget_fails_otherwise_is_a_failure_too(
    live: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with thought(live) as t:
        ids = await three_notes(t, "the heron waits by the weir")
        thoughts = live.container.thoughts
        forget = thoughts.forget

        def damaged_first(brain: Any, memory_id: str, *args: Any, **kwargs: Any) -> Any:
            if memory_id == ids[0]:
                raise DamagedContent("the memory's stored bytes are damaged")
            return forget(brain, memory_id, *args, **kwargs)

        monkeypatch.setattr(thoughts, "forget", damaged_first)
        answer = data(await t.call_tool("batch_forget", {"memoryIds": ids}))

    assert answer["deleted"] == [ids[1], ids[2]]  # the ones after the failure were forgotten too
    assert answer["failures"] == [{"memoryId": ids[0], "error": "the memory's stored bytes are damaged"}]
