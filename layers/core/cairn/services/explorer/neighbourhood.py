"""The graph of links around an item, a few hops deep, in both directions: gbrain's numbered links,
entity mentions, ThoughtMCP waypoints and every other typed link the core keeps, and Mnemosyne's
concepts (linked from a document's chunks: shown as document -> concept, and a concept leads to the
documents whose chunks mention it; a link whose chunk's text no longer names its concept, edited
through another surface than ingest, is passed over, as the search's graph leg passes it over). A
node the caller may not see (a document hidden by the access rule) is left out with its edges."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from itertools import islice
from typing import Final

from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain
from cairn.ports.chunks import ChunkIndex
from cairn.services.memory.entities import EntityRepository
from cairn.services.mnemosyne.concepts import CONCEPT, NODE_PREFIX, mention_of, still_mentioned
from cairn.services.repositories import DocumentRepository

MAX_HOPS: Final = 3
NODE_CAP: Final = 60
PER_NODE: Final = 40
"""Links read per direction of one node: a hub shows its first links, not all of them."""
CHUNKS_READ: Final = 20
"""A document's chunks whose concepts are followed."""


@dataclass(frozen=True)
class Node:
    id: str
    label: str
    kind: str  # "document" or "entity"
    hops: int


@dataclass(frozen=True)
class GraphEdge:
    source: str
    target: str
    kind: str


@dataclass(frozen=True)
class Graph:
    nodes: list[Node]
    edges: list[GraphEdge]
    capped: bool


class Neighbourhoods:
    def __init__(self, repo: DocumentRepository, entities: EntityRepository, chunks: ChunkIndex) -> None:
        self.repo = repo
        self.entities = entities
        self.links = entities.links
        self.chunks = chunks

    def around(self, brain: Brain, root: str, hops: int = 2) -> Graph:
        if not 1 <= hops <= MAX_HOPS:
            raise InvalidInput(f"hops is 1..{MAX_HOPS}")
        nodes: dict[str, Node] = {}
        edges: set[GraphEdge] = set()
        capped = False
        root_node = self._node(brain, root, 0)
        if root_node is None:
            return Graph([], [], False)
        nodes[root] = root_node
        frontier: deque[str] = deque([root])
        while frontier:
            at = frontier.popleft()
            depth = nodes[at].hops
            if depth >= hops:
                continue
            for edge in self._edges(brain, at):
                other = edge.target if edge.source == at else edge.source
                if other == at:
                    continue
                if other not in nodes:
                    if len(nodes) >= NODE_CAP:
                        capped = True
                        continue
                    node = self._node(brain, other, depth + 1)
                    if node is None:
                        continue
                    nodes[other] = node
                    frontier.append(other)
                edges.add(edge)
        return Graph(list(nodes.values()), sorted(edges, key=lambda e: (e.source, e.target, e.kind)), capped)

    def _edges(self, brain: Brain, node: str) -> list[GraphEdge]:
        if node.startswith(NODE_PREFIX):
            return self._concept_edges(brain, node)
        found = [
            GraphEdge(ln.source_id, ln.target_id, ln.kind)
            for ln in self.links.outgoing(brain.id, node, limit=PER_NODE)
        ]
        found += [
            GraphEdge(ln.source_id, ln.target_id, ln.kind)
            for ln in self.links.incoming(brain.id, node, limit=PER_NODE)
        ]
        for numbered in (  # a page of what is shown: a hub's numbered links are not all read
            self.links.outgoing_numbered(brain.id, node, page=PER_NODE),
            self.links.incoming_numbered(brain.id, node, page=PER_NODE),
        ):
            found += [GraphEdge(n.source_id, n.target_id, n.kind) for n in islice(numbered, PER_NODE)]
        for chunk in self.chunks.get_chunks(brain.id, node)[:CHUNKS_READ]:
            for ln in self.links.outgoing(brain.id, chunk.id, CONCEPT, limit=PER_NODE):
                if still_mentioned(chunk.text, mention_of(ln)):  # not a name edited out since
                    found.append(GraphEdge(node, ln.target_id, CONCEPT))
        return found

    def _concept_edges(self, brain: Brain, concept: str) -> list[GraphEdge]:
        """The documents whose chunks mention the concept (each once), as their text reads now."""
        mentions = self.links.incoming(brain.id, concept, CONCEPT, limit=PER_NODE)
        chunks = self.chunks.get_many(brain.id, [ln.source_id for ln in mentions])
        docs = dict.fromkeys(
            chunks[ln.source_id].document_id
            for ln in mentions
            if ln.source_id in chunks and still_mentioned(chunks[ln.source_id].text, mention_of(ln))
        )
        return [GraphEdge(doc_id, concept, CONCEPT) for doc_id in docs]

    def _node(self, brain: Brain, node_id: str, hops: int) -> Node | None:
        if node_id.startswith(NODE_PREFIX):
            mentions = self.links.incoming(brain.id, node_id, CONCEPT, limit=1)
            name = mentions[0].metadata.get("name") if mentions else None
            return Node(node_id, str(name or node_id.removeprefix(NODE_PREFIX)), "concept", hops)
        doc = self.repo.get_by_id(node_id)
        if doc is not None:
            return (
                Node(node_id, doc.title or doc.path, "document", hops) if doc.brain_id == brain.id else None
            )
        stored = self.entities.by_id(brain.id, node_id)
        if stored is not None:
            return Node(node_id, stored.entity.name, "entity", hops)
        return None
