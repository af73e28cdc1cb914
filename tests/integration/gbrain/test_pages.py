"""Pages through the gbrain surface over HTTP: brain_put's optimistic concurrency, slug resolution
across collections, brain_get/list/timeline/tags, and the collection write gates."""

from __future__ import annotations

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from cairn.services.documents.inputs import DocumentInput
from tests.integration.gbrain.conftest import body, gbrain, page, refused, text
from tests.integration.mcp.conftest import LiveServer

pytestmark = pytest.mark.anyio
ALICE = page("Alice", "# Alice\n\nAlice runs the lab.\n\n## Work\n\nShe builds brains.", type="person")


async def test_put_creates_then_updates_only_at_the_current_version(live: LiveServer) -> None:
    async with gbrain(live) as g:
        created = text(await g.call_tool("brain_put", {"slug": "people/alice", "content": ALICE}))
        again = await refused(g, "brain_put", {"slug": "people/alice", "content": "x"})
        updated = text(
            await g.call_tool("brain_put", {"slug": "people/alice", "content": ALICE, "expected_version": 1})
        )
        stale = await refused(g, "brain_put", {"slug": "people/alice", "content": "y", "expected_version": 1})
        absent = await refused(g, "brain_put", {"slug": "people/bob", "content": "z", "expected_version": 3})
        rendered = text(await g.call_tool("brain_get", {"slug": "people/alice"}))

    assert created == "Created default::people/alice (version 1)"
    assert updated == "Updated default::people/alice (version 2)"
    assert (again.code, again.data) == (-32009, {"current_version": 1})
    assert again.message == (
        "conflict: page already exists (current version: 1). Provide expected_version to update."
    )
    assert (stale.code, stale.data) == (-32009, {"current_version": 2})
    assert stale.message == "conflict: page updated elsewhere (current version: 2)"
    assert (absent.code, absent.data) == (-32009, {"current_version": None})
    assert absent.message == "conflict: page does not exist at version 3"
    assert "Alice runs the lab." in rendered and "y\n" not in rendered


async def test_concurrent_puts_at_one_version_have_one_winner(live: LiveServer) -> None:
    outcomes: list[str | int] = []

    async def writer(i: int) -> None:
        async with gbrain(live) as g:
            try:
                args = {"slug": "race", "content": f"writer {i}", "expected_version": 1}
                outcomes.append(text(await g.call_tool("brain_put", args)))
            except MCPError as exc:
                assert exc.data == {"current_version": 2}
                outcomes.append(exc.code)

    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "race", "content": "first"}))
    async with anyio.create_task_group() as tg:
        for i in range(8):
            tg.start_soon(writer, i)

    assert sorted(outcomes, key=str) == sorted(["Updated default::race (version 2)"] + [-32009] * 7, key=str)


async def test_get_renders_the_page_with_its_canonical_slug(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "people/alice", "content": ALICE}))
        rendered = text(await g.call_tool("brain_get", {"slug": "default::people/alice"}))

    head, compiled, timeline = rendered.split("\n---\n")
    assert (
        head.startswith("---\ngbrain_id: ")
        and "\nslug: default::people/alice\ntitle: Alice\ntype: person" in head
    )
    assert compiled.startswith("# Alice") and timeline == ""


async def test_slug_resolution_across_two_collections(live: LiveServer) -> None:
    c = live.container
    c.brains.create("Work", slug="work")
    c.brains.create("Personal", slug="personal")
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "work::people/carol", "content": "Carol at work"}))
        text(await g.call_tool("brain_put", {"slug": "personal::people/carol", "content": "Carol at home"}))
        text(await g.call_tool("brain_put", {"slug": "personal::people/dan", "content": "Dan"}))
        qualified = text(await g.call_tool("brain_get", {"slug": "personal::people/carol"}))
        bare_single = text(await g.call_tool("brain_get", {"slug": "people/dan"}))
        ambiguous = await refused(g, "brain_get", {"slug": "people/carol"})
        put_ambiguous = await refused(g, "brain_put", {"slug": "people/carol", "content": "?"})
        missing = await refused(g, "brain_get", {"slug": "people/erin"})
        missing_in = await refused(g, "brain_get", {"slug": "work::people/dan"})
        no_collection = await refused(g, "brain_get", {"slug": "nowhere::people/dan"})
        listed = body(await g.call_tool("brain_list", {"collection": "personal"}))

    assert "Carol at home" in qualified and "slug: personal::people/carol" in qualified
    assert "slug: personal::people/dan" in bare_single
    assert ambiguous.code == -32002
    assert ambiguous.message == "AmbiguityError: slug `people/carol` matches multiple collections"
    assert ambiguous.data == {
        "code": "ambiguous_slug",
        "candidates": ["default::people/carol", "personal::people/carol"],
    }
    assert put_ambiguous.code == -32002 and put_ambiguous.data["code"] == "ambiguous_slug"
    assert (missing.code, missing.message) == (-32001, "page not found: people/erin")
    assert (missing_in.code, missing_in.message) == (-32001, "page not found: default::people/dan")
    assert (no_collection.code, no_collection.message) == (-32001, "collection not found: nowhere")
    assert [p["slug"] for p in listed] == ["personal::people/dan", "personal::people/carol"]


@pytest.mark.parametrize(
    ("slug", "message"),
    [
        ("", "invalid slug: must not be empty"),
        ("People/Alice", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("notes/a.md", "invalid slug: allowed characters are [a-z0-9/_-]"),
        ("/abs", "invalid slug: must be a relative path"),
        ("a//b", "invalid slug: must not contain empty path segments"),
        ("a" * 513, "invalid slug: exceeds maximum length of 512 characters"),
    ],
)
async def test_invalid_slugs_are_invalid_params(live: LiveServer, slug: str, message: str) -> None:
    async with gbrain(live) as g:
        for tool, args in (
            ("brain_put", {"slug": slug, "content": "x"}),
            ("brain_get", {"slug": slug}),
            ("brain_tags", {"slug": slug, "add": ["t"]}),
        ):
            error = await refused(g, tool, args)
            assert (error.code, error.message) == (-32602, message), tool
    assert live.snapshot()[0] == []  # not even the default collection was made


async def test_content_over_one_mib_is_invalid_params(live: LiveServer) -> None:
    async with gbrain(live) as g:
        error = await refused(g, "brain_put", {"slug": "big", "content": "x" * 1_048_577})
    assert error.code == -32602
    assert error.message == "content too large: 1048577 bytes exceeds maximum of 1048576 bytes"


async def test_list_timeline_and_tags(live: LiveServer) -> None:
    timeline = "2024-01-02: joined\n---\n2024-03-04: left"
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "people/alice", "content": ALICE}))
        text(
            await g.call_tool(
                "brain_put", {"slug": "acme", "content": page("Acme", "Anvils.", timeline=timeline)}
            )
        )
        everything = body(await g.call_tool("brain_list", {}))
        people = body(await g.call_tool("brain_list", {"wing": "people"}))
        general = body(await g.call_tool("brain_list", {"wing": "general"}))
        persons = body(await g.call_tool("brain_list", {"page_type": "person"}))
        one = body(await g.call_tool("brain_list", {"limit": 1}))
        entries = body(await g.call_tool("brain_timeline", {"slug": "acme"}))
        first = body(await g.call_tool("brain_timeline", {"slug": "acme", "limit": 1}))
        added = body(await g.call_tool("brain_tags", {"slug": "acme", "add": ["zeta", "alpha", "mid"]}))
        removed = body(await g.call_tool("brain_tags", {"slug": "acme", "remove": ["mid"]}))
        listed = body(await g.call_tool("brain_tags", {"slug": "acme"}))
        bad_tag = await refused(g, "brain_tags", {"slug": "acme", "add": ["Bad Tag"]})
        version = text(await g.call_tool("brain_get", {"slug": "acme"}))

    assert everything == [
        {"slug": "default::acme", "type": "concept", "summary": "Anvils."},
        {"slug": "default::people/alice", "type": "person", "summary": "Alice runs the lab."},
    ]
    assert [p["slug"] for p in people] == [p["slug"] for p in persons] == ["default::people/alice"]
    assert [p["slug"] for p in general] == ["default::acme"] and len(one) == 1
    assert entries == {"slug": "default::acme", "entries": ["2024-01-02: joined", "2024-03-04: left"]}
    assert first["entries"] == ["2024-01-02: joined"]
    assert added == ["alpha", "mid", "zeta"] and removed == listed == ["alpha", "zeta"]
    assert (bad_tag.code, bad_tag.message) == (-32602, "invalid tag: allowed characters are [a-z0-9_-]")
    assert "Anvils." in version


async def test_a_tag_another_surface_gave_a_page_can_be_removed(live: LiveServer) -> None:
    # gbrain's own tags are [a-z0-9_-]; the canonical surface and REST take "Green Tea"
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "kitchen/tea", "content": "Sencha."}))
        brain = live.container.brains.resolve("default")
        info = DocumentInput(tags=["Green Tea", "drinks"])
        live.container.documents.write(brain, "kitchen/tea", b"---\ntitle: Tea\n---\nSencha.", info)
        listed = body(await g.call_tool("brain_tags", {"slug": "kitchen/tea"}))
        removed = body(await g.call_tool("brain_tags", {"slug": "kitchen/tea", "remove": ["Green Tea"]}))
        still_refused = await refused(g, "brain_tags", {"slug": "kitchen/tea", "add": ["Green Tea"]})

    assert listed == ["Green Tea", "drinks"] and removed == ["drinks"]
    assert still_refused.message == "invalid tag: allowed characters are [a-z0-9_-]"


async def test_a_restoring_collection_refuses_every_mutation_first(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "A"}))
        text(await g.call_tool("brain_put", {"slug": "b", "content": "B"}))
        text(await g.call_tool("brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows"}))
    c = live.container
    brain = c.brains.get("default")
    c.pages.set_state(brain, state="restoring")
    before = live.snapshot()
    async with gbrain(live) as g:
        refusals = [
            # each with input that is otherwise invalid: the gate comes first
            await refused(g, "brain_put", {"slug": "a", "content": "x" * 1_048_577}),
            await refused(g, "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "BAD"}),
            await refused(g, "brain_link_close", {"link_id": 1, "valid_until": "never"}),
            await refused(g, "brain_tags", {"slug": "a", "add": ["Not A Tag"]}),
            await refused(g, "brain_gap", {"query": "", "slug": "a"}),
            await refused(g, "brain_raw", {"slug": "a", "source": "", "data": []}),
        ]
        readable = text(await g.call_tool("brain_get", {"slug": "a"}))
        unbound_gap = body(await g.call_tool("brain_gap", {"query": "still allowed"}))
        state = body(await g.call_tool("brain_collections", {}))[0]

    message = "CollectionRestoringError: collection=default state=restoring needs_full_sync=false"
    assert [(e.code, e.message) for e in refusals] == [(-32002, message)] * 6
    assert live.snapshot() == before and "A" in readable and unbound_gap["id"] == 1
    assert state["state"] == "restoring" and state["restore_in_progress"] is True

    c.pages.set_state(brain, state="active", needs_full_sync=True)
    async with gbrain(live) as g:
        syncing = await refused(g, "brain_put", {"slug": "a", "content": "A2", "expected_version": 1})
    assert syncing.code == -32002 and syncing.message.endswith("state=active needs_full_sync=true")


async def test_a_read_only_collection_refuses_mutations_with_32003(live: LiveServer) -> None:
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "a", "content": "A"}))
        text(await g.call_tool("brain_put", {"slug": "b", "content": "B"}))
    c = live.container
    c.pages.set_state(c.brains.get("default"), writable=False)
    before = live.snapshot()
    async with gbrain(live) as g:
        refusals = [
            await refused(g, "brain_put", {"slug": "a", "content": "A2", "expected_version": 1}),
            await refused(g, "brain_link", {"from_slug": "a", "to_slug": "b", "relationship": "knows"}),
            await refused(g, "brain_tags", {"slug": "a", "add": ["t"]}),
            await refused(g, "brain_raw", {"slug": "a", "source": "exa", "data": {"k": 1}}),
        ]
        invalid_first = await refused(g, "brain_put", {"slug": "A", "content": "x"})
        state = body(await g.call_tool("brain_collections", {}))[0]

    assert [(e.code, e.message) for e in refusals] == [
        (-32003, "CollectionReadOnlyError: collection=default")
    ] * 4
    assert invalid_first.code == -32602  # read-only is checked after the input
    assert live.snapshot() == before and state["writable"] is False


async def test_collections_lists_each_brain_with_the_frozen_keys(live: LiveServer) -> None:
    c = live.container
    c.brains.create("Work", slug="work")
    c.brains.create("Archive", slug="archive")
    async with gbrain(live) as g:
        text(await g.call_tool("brain_put", {"slug": "work::a", "content": "A"}))
        found = body(await g.call_tool("brain_collections", {}))

    assert [e["name"] for e in found] == ["archive", "default"]  # work, the write target, is `default`
    keys = {
        "name",
        "root_path",
        "state",
        "writable",
        "is_write_target",
        "page_count",
        "last_sync_at",
        "embedding_queue_depth",
        "ignore_parse_errors",
        "needs_full_sync",
        "recovery_in_progress",
        "integrity_blocked",
        "restore_in_progress",
    }
    assert all(set(e) == keys for e in found)
    work = found[1]
    assert (
        work["page_count"] == 1 and work["is_write_target"] is True and found[0]["is_write_target"] is False
    )
    assert work["state"] == "active" and work["writable"] is True and work["needs_full_sync"] is False
