"""/docs shares the web UI's origin: it loads Swagger UI only at the pinned version, each file
checked by the browser against the digest the page names (the real files of that version, from
npm, give the same digests), runs no script but those and its own, and no site may frame it."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cairn.entrypoints.api_docs import ASSETS, SWAGGER_UI
from cairn.entrypoints.http import create_app
from tests.fakes.container import fake_container
from tests.integration.mcp.node_clients import CLIENTS

DIST = CLIENTS / "node_modules" / "swagger-ui-dist"


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(create_app(fake_container(tmp_path)), base_url="http://localhost") as c:
        yield c


def test_the_page_loads_only_the_pinned_files_by_digest_and_no_site_frames_it(client: TestClient) -> None:
    page = client.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "frame-ancestors 'none'" in policy and page.headers["x-frame-options"] == "DENY"
    script_src = next(d for d in policy.split(";") if d.strip().startswith("script-src")).split()[1:]
    assert "'unsafe-inline'" not in script_src and "'unsafe-eval'" not in script_src
    loaded = re.findall(r'(?:src|href)="([^"]+)" integrity="([^"]+)"', page.text)
    assert sorted(loaded) == sorted((f"{SWAGGER_UI}/{name}", digest) for name, digest in ASSETS.items())
    assert len(re.findall(r"<script", page.text)) == 2  # the pinned bundle and the page's own
    inline = re.search(r"<script>(.*?)</script>", page.text, re.DOTALL)
    assert inline is not None
    allowed = "'sha256-" + base64.b64encode(hashlib.sha256(inline.group(1).encode()).digest()).decode() + "'"
    assert allowed in script_src
    assert [s for s in script_src if not s.startswith("'")] == [
        f"{SWAGGER_UI}/swagger-ui-bundle.js"
    ]  # not the CDN


def test_the_digests_are_those_of_the_pinned_versions_files() -> None:
    version = json.loads((DIST / "package.json").read_text())["version"]
    assert SWAGGER_UI.endswith(f"@{version}")
    for name, digest in ASSETS.items():
        actual = "sha384-" + base64.b64encode(hashlib.sha384((DIST / name).read_bytes()).digest()).decode()
        assert digest == actual, name


def test_redoc_is_not_served(client: TestClient) -> None:
    assert client.get("/redoc").status_code == 404
