"""batch_forget by a caller with no ThoughtMCP brain changes nothing, so nothing is audited: no
error logged for a tenant with no brain at all, and no entry filed under another brain it has."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import pytest

from cairn.auth.principal import READ, WRITE
from tests.integration.mcp.conftest import LiveServer, start_server
from tests.integration.thoughtmcp.conftest import data, thought

pytestmark = pytest.mark.anyio
FORGET = {"memoryIds": ["mem_does_not_matter"]}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[LiveServer]:
    yield from start_server(tmp_path, token="sekret-owner-token", rate_limit_per_s=0)


async def test_a_tenant_with_no_brain_yet_gets_its_answer_and_no_audit_error(
    live: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    key = live.container.keys.create(name="acme", tenant="acme", scopes=[READ, WRITE])
    with caplog.at_level(logging.INFO, logger="cairn.mcp"):
        async with thought(live, key.plaintext) as client:
            answer = data(await client.call_tool("batch_forget", FORGET))

    assert (answer["successCount"], answer["failureCount"]) == (0, 1)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert live.container.audit.query(tenant="acme")[0] == []


async def test_a_caller_with_another_brain_gets_no_entry_filed_under_it(live: LiveServer) -> None:
    bravo = live.container.brains.create("Bravo", slug="bravo")
    key = live.container.keys.create(name="b", tenant="local", scopes=[READ, WRITE], brains=[bravo.id])
    async with thought(live, key.plaintext) as client:
        answer = data(await client.call_tool("batch_forget", FORGET))

    assert answer["deleted"] == [] and answer["failureCount"] == 1
    entries, _ = live.container.audit.query(tenant="local")
    assert [e.action for e in entries if e.action == "mcp.batch_forget"] == []
