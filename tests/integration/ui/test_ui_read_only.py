"""What the item page offers a caller who may read but not change: the text to read, no edit form and
no delete link, and the delete confirmation refused (the posts are refused too, by the services)."""

from __future__ import annotations

from fastapi.testclient import TestClient

from cairn.container import Container
from tests.integration.ui.test_ui_pages import TOKEN, item_links, put, sign_in, token_ui

__all__ = ["token_ui"]  # the fixture, shared with the pages' tests


def test_a_read_only_session_is_offered_no_edit_or_delete(token_ui: tuple[TestClient, Container]) -> None:
    t, _ = token_ui
    auth = {"authorization": f"Bearer {TOKEN}"}
    made = t.post("/v1/brains", json={"name": "Team", "slug": "team", "visibility": "tenant"}, headers=auth)
    assert made.status_code == 201
    put(t, "team", "notes/runbook.md", "# Runbook\nRestart the ingest worker first.", **auth)
    reader = t.post("/v1/admin/keys", json={"name": "reader", "scopes": ["documents:read"]}, headers=auth)

    sign_in(t, reader.json()["key"])
    [item] = item_links(t.get("/ui/brains/team").text, "team")
    page = t.get(item).text
    assert "Restart the ingest worker first." in page
    assert f'action="{item}/edit"' not in page and f'href="{item}/delete"' not in page
    assert t.get(f"{item}/delete").status_code == 403

    sign_in(t, TOKEN)
    page = t.get(item).text
    assert f'action="{item}/edit"' in page and f'href="{item}/delete"' in page
    assert t.get(f"{item}/delete").status_code == 200
