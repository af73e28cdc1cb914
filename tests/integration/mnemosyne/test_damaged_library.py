"""A search over several libraries when one library's keyword index cannot be read (on the
embedded store: services/search/damaged_brains.py): the other libraries' hits are answered, and
the damaged library is named beside them with the refusal a search of it alone gets, whichever of
the legs that read the keyword index is asked for (on SQLite the vector leg does too); a search of
that library alone is a tool error naming it, never a 500."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from cairn.container import Container
from cairn.entrypoints.http import create_app
from cairn.services.mnemosyne.libraries import Library
from cairn.services.mnemosyne.library_search import SearchRequest
from tests.integration.cli.test_cli_keyword_index import T, close, opened, scribble, sql

DAMAGE = {
    "data table dropped": lambda d: sql(d, f"DROP TABLE {T}_data"),
    "data blobs scribbled": lambda d: scribble(d, f"{T}_data"),
    "config version changed": lambda d: sql(d, f"UPDATE {T}_config SET v = 5 WHERE k = 'version'"),
    "content dropped": lambda d: sql(d, f"DROP TABLE {T}_content"),
}
HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
    "mcp-protocol-version": "2025-11-25",
    "authorization": "Bearer local",
}


@pytest.fixture(params=list(DAMAGE))
def damaged(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Container, Library, Library]]:
    """Two libraries that both hold a note on herons, the first's keyword index (the first
    written: its table is the data directory's first) damaged while no process had it open."""
    data = tmp_path / "data"
    c = opened(data)
    alpha = c.libraries.describe(c.brains.create("Alpha", slug="alpha").id, library_type="fiction")
    beta = c.libraries.describe(c.brains.create("Beta", slug="beta").id, library_type="fiction")
    c.documents.write(alpha.brain, "a.md", b"# Herons\n\nthe grey heron eats fish by the river\n")
    c.documents.write(beta.brain, "b.md", b"# Herons\n\nthe grey heron nests in the reeds by the river\n")
    close(c)
    DAMAGE[request.param](data)
    c = opened(data)
    yield c, c.libraries.describe(alpha.uid), c.libraries.describe(beta.uid)
    close(c)


def _search(client: TestClient, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "search", "arguments": arguments},
    }
    answer = client.post("/mcp/mnemosyne/", content=json.dumps(call), headers=HEADERS)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


@pytest.mark.parametrize("legs", [None, ["vector"], ["fulltext"]])  # the graph leg reads no keyword index
def test_the_other_libraries_answer_and_the_damaged_one_is_named(
    damaged: tuple[Container, Library, Library], legs: list[str] | None
) -> None:
    c, alpha, beta = damaged
    outcome = c.library_search.search(
        SearchRequest(
            query="grey heron river",
            libraries=[alpha, beta],
            rerank=False,
            **({"search_types": legs} if legs else {}),
        )
    )
    assert {found.library.uid for found in outcome.candidates} <= {beta.uid}
    assert [(u.brain_id, u.code) for u in outcome.unsearched] == [(alpha.uid, "damaged_store")]
    assert f"the keyword index of brain {alpha.uid} cannot be read" in outcome.unsearched[0].message


def test_the_surface_answers_the_hits_and_names_the_library_and_refuses_it_alone(
    damaged: tuple[Container, Library, Library],
) -> None:
    c, alpha, _ = damaged
    with TestClient(create_app(c), base_url="http://localhost", raise_server_exceptions=False) as client:
        both = _search(client, {"query": "grey heron river", "rerank": False})
        alone = _search(client, {"query": "grey heron river", "library_uid": alpha.uid, "rerank": False})
    assert not both.get("isError"), both
    found = both["structuredContent"]
    assert [hit["library_name"] for hit in found["candidates"]] == ["Beta"]
    (left_out,) = found["unsearched_libraries"]
    assert (left_out["library_uid"], left_out["library_name"], left_out["code"]) == (
        alpha.uid,
        "Alpha",
        "damaged_store",
    )
    assert alone["isError"] and f"the keyword index of brain {alpha.uid}" in alone["content"][0]["text"]


def test_a_search_of_a_damaged_library_s_collection_is_refused_as_the_library_alone(
    damaged: tuple[Container, Library, Library],
) -> None:
    """A collection narrows the search to its one library, whatever else is in scope: with that
    library damaged it is a search of it alone, refused, not an empty answer."""
    from cairn.domain.errors import BrainIndexDamaged

    c, alpha, beta = damaged
    birds = c.libraries.create_collection(alpha, "Birds", folder="")
    request = SearchRequest(query="grey heron river", libraries=[alpha, beta], collection=birds, rerank=False)
    with pytest.raises(BrainIndexDamaged) as refused:
        c.library_search.search(request)
    assert refused.value.brain_id == alpha.uid
