"""The MCP endpoints are the app's first routes (entrypoints/mcp/mount.py), so a tool call is
routed without trying every REST route first. That is only the same routing as before because no
other route answers an MCP path: this file checks both, for every method."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.routing import BaseRoute, Match
from starlette.types import Scope

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.http import create_app
from cairn.entrypoints.mcp.registry import SURFACES, http_paths

MCP_PATHS = [path for surface in SURFACES for path in http_paths(surface)]


@pytest.fixture(scope="module")
def routes(tmp_path_factory: pytest.TempPathFactory) -> list[BaseRoute]:
    data: Path = tmp_path_factory.mktemp("routes")
    return list(create_app(build_container(Settings(data_dir=data))).router.routes)


def test_the_mcp_endpoints_come_first(routes: list[BaseRoute]) -> None:
    assert [getattr(route, "path", None) for route in routes[: len(MCP_PATHS)]] == MCP_PATHS


@pytest.mark.parametrize("method", ["POST", "GET", "DELETE", "PUT"])
@pytest.mark.parametrize("path", MCP_PATHS)
def test_no_other_route_answers_an_mcp_path(routes: list[BaseRoute], path: str, method: str) -> None:
    scope: Scope = {"type": "http", "path": path, "method": method, "root_path": "", "headers": []}
    matched = [i for i, route in enumerate(routes) if route.matches(scope)[0] != Match.NONE]
    assert matched == [MCP_PATHS.index(path)]
