"""Root conftest: unit and contract tests get no network; integration and e2e get loopback only."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_socket import disable_socket, socket_allow_hosts

TESTS = Path(__file__).parent
LOOPBACK = ["127.0.0.1", "localhost", "::1"]
_resolved: dict[str, set[str]] = {}


@pytest.hookimpl(tryfirst=True)  # before fixtures are set up, so they are covered too
def pytest_runtest_setup(item: pytest.Item) -> None:
    try:
        suite = item.path.relative_to(TESTS).parts[0]
    except ValueError:
        return
    # Unix sockets stay allowed: asyncio's event loop wakes itself through a socketpair.
    if suite in ("unit", "contract"):
        disable_socket(allow_unix_socket=True)
    elif suite in ("integration", "e2e", "crash"):
        socket_allow_hosts(LOOPBACK, allow_unix_socket=True, resolution_cache=_resolved)
