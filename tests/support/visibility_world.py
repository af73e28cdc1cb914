"""A world for the visibility matrix (tests/integration/auth/test_visibility_matrix.py): two brains of
the machine's owner and two ThoughtMCP users' memories, written through the services every surface
uses, each data set marked by a word found nowhere else, so any response that holds the word (or one
of the set's ids) shows the set.

- A (`alpha`): public, the ThoughtMCP brain; a canonical note, an agent's note, a zengram fact
  naming an entity, gbrain pages with a link, a Mnemosyne collection and item, a session, a gap,
  raw data and a queued consolidation.
- B (`bravo`): private to the owner; the same.
- X, Y: ThoughtMCP memories of users `xavier` and `yolanda`, in A, linked by waypoints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cairn.bootstrap import Container
from cairn.domain.models import Brain, MemoryType
from cairn.services.memory.memory_model import MemoryInput
from cairn.services.thoughtmcp.brain import BRAIN_MARK
from cairn.services.thoughtmcp.models import NewMemory

MARKERS = {"A": "alphazed", "B": "bravozed", "X": "xrayzed", "Y": "yankeezed"}
"""Words in the sets' texts and titles, never sent in a call: a response holding one shows the set."""
PROBES = {"A": "alphaprobe", "B": "bravoprobe", "X": "xrayprobe", "Y": "yankeeprobe"}
"""Words in the sets' texts, paths and slugs, sent in calls aimed at a set (so echoing them is fine)."""
USERS = {"X": "xavier", "Y": "yolanda"}
SETS = tuple(MARKERS)


@dataclass
class DataSet:
    name: str
    marker: str
    probe: str
    brain: Brain
    texts: list[str] = field(default_factory=list)
    """The stored texts of its memories (ThoughtMCP, zengram) and notes, word for word."""
    ids: set[str] = field(default_factory=set)
    """Every id of the set a response could carry (documents, chunks, memories, sessions, jobs...)."""
    values: dict[str, Any] = field(default_factory=dict)
    """What a call aimed at the set passes, by argument role (services: `aimed`)."""


def build(c: Container) -> dict[str, DataSet]:
    """Write the world as the system (the CLI's principal) and say what each set holds."""
    alpha = c.brains.create("Alpha", slug="alpha", visibility="public", metadata={BRAIN_MARK: True})
    bravo = c.brains.create("Bravo", slug="bravo")
    sets = {
        "A": _brain_set(c, "A", alpha),
        "B": _brain_set(c, "B", bravo),
    }
    for name in ("X", "Y"):
        sets[name] = _user_set(c, name, alpha)
    return sets


def _brain_set(c: Container, name: str, brain: Brain) -> DataSet:
    m, p = MARKERS[name], PROBES[name]
    s = DataSet(name, m, p, brain)
    s.ids.add(brain.id)
    note = c.ingest.remember(
        brain, f"# {m} boiler\n\nThe {p} boiler ({m}) is serviced in June.", path=f"notes/{p}.md"
    )
    agent = c.ingest.remember(
        brain, f"# {m} style\n\nScout prefers {p} answers ({m}).", path=f"memory/agent/scout/{p}.md"
    )
    fact = c.memories.store(
        brain,
        MemoryInput(
            type=MemoryType.fact,
            content=f"The {p} staging database ({m}) of Harlowcorp lives in eu-west-1.",
            source_agent="scout",
            client_id="global",
            key=f"{p}-db",
        ),
    ).memory
    lead = f"{brain.slug}::people/{p}-lead"
    page = c.pages.put(lead, f"# {m} lead\n\nRuns the {p} team ({m}).").page.document
    other = c.pages.put(f"{brain.slug}::projects/{p}-plan", f"# {m} plan\n\nThe {p} roadmap.").page.document
    link = c.graph.link(brain, page.id, other.id, "works_on")
    collection = c.libraries.create_collection(c.libraries.library(brain.id), f"{p} shelf")
    item = c.ingest.remember(
        brain,
        f"# {m} manual\n\nBolt the {p} pump ({m}) to the frame.",
        path=f"{collection.folder}/{p}-manual.md",
    )
    session = c.sessions.create(brain, title=f"{m} standup", actor_id="scout")
    c.sessions.append(
        brain, session.id, "user", f"The {p} retro ({m}) moved to Thursday.", metadata={"skip_extract": True}
    )
    c.gaps.log(brain, f"who owns the {m} budget")
    c.raw_data.put(brain, page.id, "crm", {"note": f"{m} raw"})
    job = c.consolidation.queue(brain)
    s.texts = [c.documents.read(brain, d.path).decode() for d in (note, agent, fact, item)]
    for doc in (note, agent, fact, page, other, item):
        s.ids.add(doc.id)
        s.ids.update(chunk.id for chunk in c.adapters.chunks.get_chunks(brain.id, doc.id))
    s.ids.update({session.id, job.id, collection.uid})
    s.values = {
        "brain": brain.slug,
        "library": brain.id,
        "collection_uid": collection.uid,
        "text": f"{p} boiler serviced",
        "memory_id": fact.id,
        "memory_ids": [fact.id],
        "chunk": next(iter(c.adapters.chunks.get_chunks(brain.id, item.id))).id,
        "slug": lead,
        "session": session.id,
        "job": job.id,
        "link": link.id,
        "entity": "Harlowcorp",
        "path": note.path,
        "user": USERS["X"],
    }
    return s


def _user_set(c: Container, name: str, brain: Brain) -> DataSet:
    m, p = MARKERS[name], PROBES[name]
    s = DataSet(name, m, p, brain)
    s.texts = [
        f"The {p} vault code ({m}) is written on the garage wall, behind the boiler.",
        f"The {p} bicycle lock code ({m}) is kept in the blue notebook near the boiler.",
    ]
    made = [
        c.thoughts.remember(
            brain, NewMemory(content=text, user_id=USERS[name], session_id="s1", sector="semantic")
        )
        for text in s.texts
    ]
    ids = [row["memoryId"] for row in made]
    for memory_id in ids:
        s.ids.add(memory_id)
        s.ids.update(chunk.id for chunk in c.adapters.chunks.get_chunks(brain.id, memory_id))
    doc = c.documents.repo.get_by_id(ids[0])
    assert doc is not None
    s.values = {
        "brain": brain.slug,
        "library": brain.id,
        "collection_uid": None,
        "text": f"{p} vault code",
        "memory_id": ids[0],
        "memory_ids": ids,
        "chunk": next(iter(c.adapters.chunks.get_chunks(brain.id, ids[0]))).id,
        "slug": f"{brain.slug}::{doc.path}",
        "session": None,
        "job": None,
        "link": None,
        "entity": None,
        "path": doc.path,
        "user": USERS[name],
    }
    return s
