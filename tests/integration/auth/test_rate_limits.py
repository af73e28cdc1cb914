"""Who is rate-limited on the embedded server: authenticated principals always (50/s unless set),
the open loopback owner only when a rate is set explicitly; and what a limited MCP client is told."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import ServerThread


def _statuses(url: str, n: int, headers: dict[str, str] | None = None) -> list[int]:
    with httpx.Client(headers=headers) as client:
        return [client.get(url).status_code for _ in range(n)]


def test_the_open_loopback_owner_is_not_limited_by_default(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path)) as st:
        statuses = _statuses(f"http://127.0.0.1:{st.port}/v1/brains", 400)
    assert set(statuses) == {200}


def test_authenticated_principals_keep_the_default_limit(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, token="t0ken", rate_limit_burst=5)) as st:
        auth = {"authorization": "Bearer t0ken"}
        statuses = _statuses(f"http://127.0.0.1:{st.port}/v1/brains", 60, auth)
    assert statuses[:5] == [200] * 5 and 429 in statuses


def test_an_explicit_rate_limits_the_open_owner_too(tmp_path: Path) -> None:
    with ServerThread(fake_container(tmp_path, rate_limit_per_s=0.5, rate_limit_burst=2)) as st:
        statuses = _statuses(f"http://127.0.0.1:{st.port}/v1/brains", 3)
    assert statuses == [200, 200, 429]


@pytest.mark.anyio
async def test_a_limited_mcp_call_fails_naming_the_limit_and_the_delay(tmp_path: Path) -> None:
    container = fake_container(tmp_path, rate_limit_per_s=0.5, rate_limit_burst=3)
    with ServerThread(container) as st:
        async with Client(f"http://127.0.0.1:{st.port}/mcp") as client:
            with pytest.raises(MCPError) as caught:
                for _ in range(3):  # initialize and its notification took two of the three tokens
                    await client.call_tool("memory_list_brains", {})
    message = str(caught.value)
    # 2 s when the calls come at once; 1 s when a busy machine spaced them by half a second or more
    assert "0.5 requests/s" in message and re.search(r"retry after [12] s", message), message
    assert "Server returned an error response" not in message
