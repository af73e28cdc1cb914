"""Each collection owns a folder of its own: names whose path segment loses letters (`東京`,
`大阪`, `Café`) get a digest of the name after it, a default folder another collection owns is
never reused, and an explicit one is refused; plain-ASCII names keep their folders."""

from __future__ import annotations

import pytest

from cairn.domain.errors import Conflict
from cairn.services.mnemosyne.collection_records import CollectionRow, collections_pk
from cairn.services.repositories import all_items
from tests.integration.mcp.conftest import LiveServer
from tests.integration.mnemosyne.conftest import body, ingest, mnemosyne

pytestmark = pytest.mark.anyio

CITIES = {
    "東京": "Shinjuku station",
    "大阪": "Dotonbori canal",
    "Café": "espresso crema",
    "Caf": "cafeteria trays",
}


async def test_collections_named_alike_list_and_search_only_their_own_items(live: LiveServer) -> None:
    c = live.container
    library = c.libraries.describe(c.brains.create("Travel", slug="travel").id, library_type="nonfiction")
    made = {name: c.libraries.create_collection(library, name) for name in CITIES}
    for name, words in CITIES.items():
        ingest(c, library.brain, f"{made[name].folder}/note.md", f"# {name}\n\nNotes on the {words}.")

    assert len({col.folder for col in made.values()}) == 4
    assert made["Caf"].folder == "collections/caf"  # a plain-ASCII name keeps its folder
    async with mnemosyne(live) as m:
        for name, words in CITIES.items():
            uid = made[name].uid
            items = body(await m.call_tool("list_items", {"collection_uid": uid}))
            found = body(await m.call_tool("search", {"query": words, "collection_uid": uid}))
            assert [i["title"] for i in items["items"]] == [name]
            assert {hit["item_title"] for hit in found["candidates"]} == {name}


def test_a_folder_another_collection_owns_is_never_shared(live: LiveServer) -> None:
    c = live.container
    library = c.libraries.describe(c.brains.create("Cafes", slug="cafes").id, library_type="nonfiction")
    # `Café` as an earlier release stored it, in the folder `Caf` would get (and without a claim)
    old = CollectionRow("col_legacycafe", "Café", "", "collections/caf", c.libraries.clock.now())
    records = c.libraries.collection_records
    records.create(library.uid, old, shared_folder=True)
    for claim in all_items(records.records, collections_pk(library.uid), "folder#"):
        records.records.delete(claim.pk, claim.sk)

    caf = c.libraries.create_collection(library, "Caf")
    assert caf.folder.startswith("collections/caf-") and caf.folder != old.folder
    with pytest.raises(Conflict, match="belongs to another collection"):
        c.libraries.create_collection(library, "Cafe", folder="collections/caf")
    with pytest.raises(Conflict, match="belongs to another collection"):
        c.libraries.create_collection(library, "Caf two", folder=caf.folder)
    assert c.libraries.create_collection(library, "Hydrex series").folder == "collections/hydrex-series"
    assert sorted(col.name for col in c.libraries.collections([library])) == ["Caf", "Café", "Hydrex series"]
