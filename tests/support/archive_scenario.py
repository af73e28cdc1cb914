"""A brain holding one of everything an archive carries (services/archive/), and a snapshot of
a brain to compare after a restore: shared by the archive's tests on every store."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cairn.bootstrap import Container
from cairn.domain.models import Brain, Document, MemoryFacet, MemoryType
from cairn.services.archive.records import is_typed_memory
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.memory.memory_model import MemoryInput, MemoryQuery

SLUG = "notes"
ALICE = (
    "---\ntitle: Alice\ntype: person\nrole: founder\n---\n# Alice\n\nAlice runs the anvil lab.\n"
    "---\n- 2024-03-01: founded Anvil\n- 2025-01-10: hired Bob\n"
)
ANVIL = "---\ntitle: Anvil\ntype: company\n---\nAnvil forges anvils in Berlin.\n"
BINARY = bytes(range(256)) * 4
RAW = {"source": "exa", "score": 0.93, "nested": {"list": [1, "two", None], "ok": True}}
ASKED = ("who funds anvil?", "what does bob do?")


@dataclass(frozen=True)
class Filled:
    brain: Brain
    old_fact: str
    new_fact: str
    event: str


def fill(c: Container) -> Filled:
    """A brain with two gbrain pages, a plain and a binary document, an episode (a memory facet
    on a document that is not a typed memory), typed memories (a fact superseded by a newer one
    of its key, an event, an expired event, a deleted note), numbered links (one closed, one from
    a memory), a raw row and two gaps (one resolved)."""
    brain = c.brains.create("Team notes", slug=SLUG)
    c.pages.put(f"{SLUG}::people/alice", ALICE)
    c.pages.put(f"{SLUG}::companies/anvil", ANVIL)
    c.pages.tags(f"{SLUG}::people/alice", add=["founder", "lab"])
    alice = c.pages.get(f"{SLUG}::people/alice").document
    anvil = c.pages.get(f"{SLUG}::companies/anvil").document
    c.documents.write(
        brain,
        "notes/plain.md",
        "# Plain\n\nA note with ünïcode.\n".encode(),
        DocumentInput(tags=["misc"], metadata={"origin": "cli", "rank": 3}),
    )
    c.documents.write(brain, "files/blob.bin", BINARY, DocumentInput(content_type="application/octet-stream"))
    old = c.memories.store(
        brain,
        MemoryInput(MemoryType.fact, "Acme runs its billing on Postgres", key="acme-db", client_id="acme"),
    )
    new = c.memories.store(
        brain,
        MemoryInput(
            MemoryType.fact,
            "Acme moved its billing to CockroachDB",
            key="acme-db",
            client_id="acme",
            importance=0.9,
            tags=["db"],
            metadata={"ticket": "OPS-7"},
        ),
    )
    event = c.memories.store(
        brain,
        MemoryInput(MemoryType.event, "Deployed the anvil service", source_agent="ci", category="deploys"),
    )
    stale = c.memories.store(brain, MemoryInput(MemoryType.event, "Rotated the staging keys"))
    c.documents.modify(brain, stale.memory.path, _expired(c))
    gone = c.memories.store(brain, MemoryInput(MemoryType.note, "a note that was deleted"))
    c.memories.delete(brain, gone.memory.id)
    c.documents.write(  # memory-like, not a typed memory: an episode a reflection wrote
        brain,
        "episodes/ses_1.md",
        b"# Shipped the anvil service\n\nIt went well.\n",
        DocumentInput(memory=MemoryFacet(type=MemoryType.event, category="episode", importance=0.7)),
    )
    c.graph.link(brain, alice.id, anvil.id, "works_at", valid_from="2024-03")
    c.graph.link(brain, alice.id, anvil.id, "advises", valid_from="2023-01", valid_until="2024-02-28")
    c.graph.link(brain, event.memory.id, anvil.id, "about")
    c.raw_data.put(brain, alice.id, "exa", RAW)
    c.gaps.log(brain, ASKED[0], page_id=anvil.id, confidence=0.25)
    resolved, _ = c.gaps.log(brain, ASKED[1])
    c.gaps.resolve(brain, resolved.id, by="people/alice")
    return Filled(brain, old.memory.id, new.memory.id, event.memory.id)


def _expired(c: Container) -> Callable[[Document | None, bytes | None], tuple[bytes, DocumentInput] | None]:
    def expire(live: Document | None, data: bytes | None) -> tuple[bytes, DocumentInput] | None:
        assert live is not None and live.memory is not None and data is not None
        return data, keep_info(
            live, memory=live.memory.model_copy(update={"expired_at": c.adapters.clock.now()})
        )

    return expire


def exported(c: Container, brain: Brain) -> list[dict[str, Any]]:
    """The archive's records as a file holds them (through JSON)."""
    return [json.loads(json.dumps(record)) for record in c.archive.export(brain)]


def snapshot(c: Container, brain: Brain, *, ids: bool = True) -> dict[str, Any]:
    """Everything a restore must give back, by path (by id too when `ids`: a fresh store)."""
    live = [d for d in c.documents.repo.list(brain.id) if d.deleted_at is None]
    by_id = {d.id: d for d in live}
    docs = {
        d.path: (c.documents.content(d), d.title, d.content_type, d.tags, d.metadata, d.memory)
        for d in live
        if not is_typed_memory(d)
    }
    pages = {p.slug: (p.render() if ids else p.text, p.tags) for p in c.pages.pages_of(brain)}
    memories = sorted(
        (
            d.id if ids else d.path.rsplit("/", 1)[0],
            c.memories.text(d),
            d.memory.key,
            d.memory.client_id,
            d.memory.importance,
            d.memory.current,
            d.memory.expired_at is not None,
            d.tags,
            {k: v for k, v in d.metadata.items() if k != "supersedes" or ids},
        )
        for d in live
        if d.memory is not None and is_typed_memory(d)
    )
    links = sorted(
        (
            d.path if ids or not is_typed_memory(d) else "memory",
            link.kind,
            by_id[link.target_id].path,
            link.valid_from,
            link.valid_until,
            link.weight,
            link.created_at,
        )
        for d in live
        for link in c.graph.links.outgoing_numbered(brain.id, d.id)
    )
    raw = {
        (d.path, source): c.raw_data.get(brain, d.id, source)[1]  # type: ignore[index]
        for d in live
        for source in c.raw_data.sources(brain, d.id)
    }
    gaps = sorted(
        (
            g.query_hash,
            by_id[g.page_id].path if g.page_id else None,
            g.confidence_score,
            g.detected_at,
            g.resolved_at,
            g.resolved_by,
        )
        for g in c.gaps.every(brain)
    )
    return {"docs": docs, "pages": pages, "memories": memories, "links": links, "raw": raw, "gaps": gaps}


def counts(c: Container, brain: Brain) -> tuple[int, int, int, int]:
    """Live documents, links, raw rows and gaps the brain holds."""
    live = [d for d in c.documents.repo.list(brain.id) if d.deleted_at is None]
    links = sum(1 for d in live for _ in c.graph.links.outgoing_numbered(brain.id, d.id))
    raw = sum(len(c.raw_data.sources(brain, d.id)) for d in live)
    return len(live), links, raw, c.gaps.count(brain)


WIFI = "wifi"


def wifi_chain(c: Container) -> tuple[Brain, str, str]:
    """A brain whose fact key `wifi` held WPA2, then WPA3, and WPA3 was deleted: no value of the
    key is current, WPA2 stays superseded (by the deleted one). Returns the brain and both ids."""
    brain = c.brains.create("Office", slug=WIFI)
    old = c.memories.store(brain, MemoryInput(MemoryType.fact, "The office wifi uses WPA2", key=WIFI))
    new = c.memories.store(brain, MemoryInput(MemoryType.fact, "The office wifi uses WPA3", key=WIFI))
    c.memories.delete(brain, new.memory.id)
    return brain, old.memory.id, new.memory.id


def wifi_answers(c: Container, brain: Brain, at: list[Any]) -> dict[str, Any]:
    """What a reader of the key `wifi` is told: its live values with their intervals, the current
    ones, a plain search, and searches at each time of `at`."""
    live = [d for d in c.memories.of_type(brain, [MemoryType.fact]) if d.deleted_at is None]

    def found(q: MemoryQuery) -> list[str]:
        return sorted(c.memories.text(h.memory) for h in c.memories.search(brain, "office wifi", q))

    return {
        "values": sorted(
            (c.memories.text(d), d.memory.valid_from, d.memory.valid_to, d.memory.superseded_by is None)
            for d in live
            if d.memory is not None
        ),
        "current": sorted(c.memories.text(d) for d in live if d.memory is not None and d.memory.current),
        "found": found(MemoryQuery(count_access=False)),
        "then": [found(MemoryQuery(count_access=False, at_time=t)) for t in at],
    }


def recalled_thought(c: Container) -> tuple[Brain, str]:
    """A brain with a ThoughtMCP memory of alice's set to strength 0.4 and recalled three days
    later, so its row (strength, last access, access count) has moved past its document's facet."""
    from cairn.services.thoughtmcp.models import Filters, Metadata, NewMemory

    brain = c.brains.create("Thoughts", slug="thoughts")
    made = c.thoughts.remember(
        brain, NewMemory("The billing service deploys every Tuesday", "alice", "s1", "episodic", Metadata())
    )
    c.thoughts.update(brain, str(made["memoryId"]), "alice", strength=0.4)
    c.adapters.clock.advance(3 * 86400)  # type: ignore[attr-defined]
    c.thoughts.recall(brain, "alice", text=None, filters=Filters(min_strength=0.0))
    return brain, str(made["memoryId"])


def thought_row(c: Container, brain: Brain, memory_id: str) -> tuple[float, float, Any, int]:
    row = c.thoughts.rows.get(brain.id, "alice", [memory_id])[memory_id]
    return row.strength, row.salience, row.last_access, row.access_count
