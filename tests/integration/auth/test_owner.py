"""The machine's owner is one principal however they authenticate locally, and a brain's owner and
visibility can be changed (REST, the admin MCP surface)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from mcp import Client

from cairn.auth.access import acting_as
from cairn.auth.authenticate import OPEN
from cairn.bootstrap import Adapters, Container, build_container
from cairn.config import Settings
from tests.fakes.container import fake_adapters
from tests.integration.mcp.conftest import ServerThread, ok

TOKEN = "owner-token-value"


def _container(tmp_path: Path, adapters: Adapters, **settings: object) -> Container:
    return build_container(Settings(data_dir=tmp_path / "data", **settings), adapters)  # type: ignore[arg-type]


def _served(container: Container) -> Iterator[str]:
    with ServerThread(container) as st:
        yield f"http://127.0.0.1:{st.port}"


@pytest.fixture
def adapters() -> Adapters:
    return fake_adapters()


def test_brains_made_open_stay_the_owners_once_a_token_is_required(
    tmp_path: Path, adapters: Adapters
) -> None:
    for base in _served(_container(tmp_path, adapters)):
        assert httpx.post(f"{base}/v1/brains", json={"name": "Notes", "slug": "notes"}).status_code == 201
    auth = {"authorization": f"Bearer {TOKEN}"}
    for base in _served(_container(tmp_path, adapters, token=TOKEN)):
        listed = httpx.get(f"{base}/v1/brains", headers=auth).json()["items"]
        search = httpx.post(f"{base}/v1/brains/notes/search", json={"query": "tea"}, headers=auth)
    assert [b["slug"] for b in listed] == ["notes"] and search.status_code == 200


def test_a_key_naming_a_private_brain_may_use_it_and_others_may_not(
    tmp_path: Path, adapters: Adapters
) -> None:
    container = _container(tmp_path, adapters, token=TOKEN)
    with acting_as(OPEN):
        notes = container.brains.create("Notes", slug="notes")
    named = container.keys.create(name="n", tenant="local", scopes=["documents:read"], brains=[notes.id])
    unnamed = container.keys.create(name="u", tenant="local", scopes=["documents:read"])
    for base in _served(container):
        url = f"{base}/v1/brains/notes"
        allowed = httpx.get(url, headers={"authorization": f"Bearer {named.plaintext}"})
        refused = httpx.get(url, headers={"authorization": f"Bearer {unnamed.plaintext}"})
    assert allowed.status_code == 200 and refused.status_code == 404  # outside its list: as if none


def test_patch_changes_visibility_and_owner_and_refuses_bad_input(tmp_path: Path, adapters: Adapters) -> None:
    container = _container(tmp_path, adapters, token=TOKEN)
    with acting_as(OPEN):
        container.brains.create("Notes", slug="notes")
    reader = container.keys.create(name="r", tenant="local", scopes=["documents:read"])
    owner = {"authorization": f"Bearer {TOKEN}"}
    for base in _served(container):
        url = f"{base}/v1/brains/notes"
        before = httpx.get(url, headers={"authorization": f"Bearer {reader.plaintext}"}).status_code
        bad = httpx.patch(url, json={"visibility": "secret"}, headers=owner)
        empty = httpx.patch(url, json={}, headers=owner)
        shared = httpx.patch(url, json={"visibility": "tenant"}, headers=owner)
        after = httpx.get(url, headers={"authorization": f"Bearer {reader.plaintext}"}).status_code
        not_admin = httpx.patch(
            url, json={"owner": "bob"}, headers={"authorization": f"Bearer {reader.plaintext}"}
        )
        moved = httpx.patch(url, json={"owner": "alice", "visibility": "private"}, headers=owner)
        gone = httpx.get(url, headers=owner).status_code
    assert (before, bad.status_code, empty.status_code) == (404, 400, 400)  # private: hidden from others
    assert shared.status_code == 200 and shared.json()["visibility"] == "tenant" and after == 200
    assert not_admin.status_code == 403
    assert moved.json()["owner"] == "alice" and gone == 404
    stored = container.brains.repo.by_slug("notes", "local")
    assert stored is not None and (stored.owner, stored.visibility.value) == ("alice", "private")


@pytest.mark.anyio
async def test_the_admin_mcp_surface_changes_visibility(tmp_path: Path, adapters: Adapters) -> None:
    container = _container(tmp_path, adapters)
    with acting_as(OPEN):
        container.brains.create("Notes", slug="notes")
    with ServerThread(container) as st:
        async with Client(f"http://127.0.0.1:{st.port}/mcp/admin") as client:
            names = {t.name for t in (await client.list_tools()).tools}
            changed = ok(
                await client.call_tool("admin_update_brain", {"brain": "notes", "visibility": "public"})
            )
            listed = ok(await client.call_tool("admin_list_brains", {}))
    assert names == {"admin_list_brains", "admin_update_brain", "admin_delete_brain", "admin_erase_subject"}
    assert changed["visibility"] == "public" and listed["items"][0]["owner"] == "local"
