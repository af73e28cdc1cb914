"""The document graph: typed, temporal links between documents, backlinks, N-hop neighbourhoods.

Links are the numbered links of services/links/repository.py: an integer id per brain
(services/gbrain/sequences.py, sequence `links#<brain_id>`), so a link can be closed by its id
alone, and a (from, to, relationship) may hold several links over time. Shared by the surfaces
that have a document graph (gbrain's brain_link, brain_backlinks, brain_graph); nodes are
document ids, and a surface maps them to its own names.

Temporal filter: `all`, or `active` on a day (today, UTC, unless told): a link is active when it
has started (no valid_from, or valid_from's day is that day or earlier) and not ended (no
valid_until, or valid_until's day is that day or later). Days compare as dates, a month as its
first day, which is how a SQLite `valid_from <= date('now')` reads those strings too.

Every read is one partition query per node: backlinks read the document's incoming links newest
first, and a neighbourhood reads the outgoing links of each node it expands, one hop at a time. Both
read a page at a time and stop in the page that meets their limit: a node of 50,000 links, most of
them closed or to pages deleted since, is read only as far as the links the walk keeps.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime
from typing import Final, Literal

from cairn.auth import access
from cairn.domain.errors import InvalidInput, NotFound
from cairn.domain.models import Brain
from cairn.ports.clock import Clock
from cairn.services.gbrain.sequences import Sequences
from cairn.services.links.repository import (
    LinkRepository,
    NumberedLink,
    check_interval,
    check_kind,
    check_node,
    check_validity,
)

Temporal = Literal["active", "all"]
MAX_DEPTH: Final = 10
MAX_NODES: Final = 1000
MAX_EDGES: Final = 1000
MAX_LIMIT: Final = 1000


@dataclass(frozen=True)
class LinkDraft:
    """A link to create (`GraphService.add_many`); a restore keeps its weight and creation time."""

    from_doc_id: str
    to_doc_id: str
    relationship: str
    valid_from: str | None = None
    valid_until: str | None = None
    weight: float = 1.0
    created_at: datetime | None = None


@dataclass(frozen=True)
class Neighbourhood:
    """Document ids reached (the root first, then in the order found) and the links followed."""

    nodes: list[str]
    edges: list[NumberedLink]


class GraphService:
    def __init__(self, links: LinkRepository, sequences: Sequences, clock: Clock) -> None:
        self.links = links
        self.sequences = sequences
        self.clock = clock

    # -- writes ------------------------------------------------------------------------------

    def link(
        self,
        brain: Brain,
        from_doc_id: str,
        to_doc_id: str,
        relationship: str,
        valid_from: str | None = None,
        valid_until: str | None = None,
    ) -> NumberedLink:
        """Link two documents. With valid_until, an open link of the same (from, to,
        relationship) is closed instead (every open one; the newest is returned); otherwise a
        new link with the next id is created."""
        _check_writer(brain)
        _check_link(from_doc_id, to_doc_id, relationship)
        check_interval(check_validity(valid_from), check_validity(valid_until))
        if valid_until is not None:
            closed = self.links.close_open(brain.id, from_doc_id, relationship, to_doc_id, valid_until)
            if closed:
                return closed[-1]
        link = self._draft(
            brain,
            self.sequences.next(_sequence(brain)),
            from_doc_id,
            to_doc_id,
            relationship,
            valid_from,
            valid_until,
        )
        self.links.add_numbered([link])
        return link

    def add_many(self, brain: Brain, drafts: Sequence[LinkDraft]) -> list[NumberedLink]:
        """Create every draft as a new link (an import: no open link is closed instead), taking
        one block of ids and writing several links per transaction."""
        _check_writer(brain)
        for d in drafts:
            _check_link(d.from_doc_id, d.to_doc_id, d.relationship)
            check_interval(check_validity(d.valid_from), check_validity(d.valid_until))
        if not drafts:
            return []
        first = self.sequences.next(_sequence(brain), count=len(drafts))
        links: list[NumberedLink] = []
        for i, d in enumerate(drafts):
            link = self._draft(
                brain, first + i, d.from_doc_id, d.to_doc_id, d.relationship, d.valid_from, d.valid_until
            )
            links.append(replace(link, weight=d.weight, created_at=d.created_at or link.created_at))
        self.links.add_numbered(links)
        return links

    def close(self, brain: Brain, link_id: int, valid_until: str) -> NumberedLink:
        """Set the valid_until of link `link_id` (NotFound when the brain has no such link;
        InvalidInput when valid_until is before its valid_from)."""
        _check_writer(brain)
        link = self.links.set_valid_until(brain.id, link_id, valid_until)
        if link is None:
            raise NotFound(f"link not found: id {link_id}")
        return link

    def get(self, brain: Brain, link_id: int) -> NumberedLink:
        link = self.links.numbered(brain.id, link_id)
        if link is None:
            raise NotFound(f"link not found: id {link_id}")
        return link

    def remove_all_of(self, brain: Brain, doc_id: str) -> int:
        """Remove every link from or to the document (its hard delete); returns how many."""
        return self.links.remove_numbered_all_of(brain.id, doc_id)

    # -- reads -------------------------------------------------------------------------------

    def backlinks(
        self,
        brain: Brain,
        doc_id: str,
        *,
        temporal: Temporal = "active",
        limit: int = 100,
        at: date | None = None,
    ) -> list[NumberedLink]:
        """Links to the document, newest first, up to `limit` (at most MAX_LIMIT)."""
        day = self._day(temporal, at)
        if limit < 0:
            raise InvalidInput("limit must not be negative")
        limit = min(limit, MAX_LIMIT)
        if limit == 0:
            return []
        # A page a little above the limit, so a few inactive links rarely cost a second query.
        page = min(limit + limit // 4 + 1, MAX_LIMIT)
        found: list[NumberedLink] = []
        for link in self.links.incoming_numbered(brain.id, doc_id, descending=True, page=page):
            if day is None or link.active_on(day):
                found.append(link)
                if len(found) == limit:
                    break
        return found

    def graph(
        self,
        brain: Brain,
        root_doc_id: str,
        *,
        depth: int = 1,
        temporal: Temporal = "active",
        node_cap: int = MAX_NODES,
        edge_cap: int = MAX_EDGES,
        at: date | None = None,
        live: Callable[[list[str]], Collection[str]] | None = None,
    ) -> Neighbourhood:
        """The outbound neighbourhood of `root_doc_id`, breadth first to `depth` hops (at most
        MAX_DEPTH). Self-links are not followed, nor links to a node `live` leaves out (a page
        deleted since, one the caller may not see): nothing is reached through it. `live` is asked
        about the targets of one page of links at a time, so it judges each id on its own. The walk
        stops as soon as one more node or edge would pass its cap, reading no page past it."""
        day = self._day(temporal, at)
        check_node(root_doc_id)
        if depth < 0:
            raise InvalidInput("depth must not be negative")
        if node_cap < 1 or edge_cap < 0:
            raise InvalidInput("node_cap must be at least 1 and edge_cap not negative")
        depth = min(depth, MAX_DEPTH)
        nodes: list[str] = [root_doc_id]
        edges: list[NumberedLink] = []
        seen = {root_doc_id}
        frontier: deque[tuple[str, int]] = deque([(root_doc_id, 0)])
        while frontier:
            node, hops = frontier.popleft()
            if hops >= depth:
                continue  # breadth first: every node left is at least this far
            if len(edges) >= edge_cap:
                break  # no edge can be added, and a node only comes with one
            for out in self._followed(brain, node, day, live, edge_cap - len(edges)):
                for link in out:
                    if len(edges) >= edge_cap:
                        return Neighbourhood(nodes, edges)
                    edges.append(link)
                    if link.target_id not in seen:
                        if len(nodes) >= node_cap:
                            return Neighbourhood(nodes, edges)
                        seen.add(link.target_id)
                        nodes.append(link.target_id)
                        frontier.append((link.target_id, hops + 1))
                if len(edges) >= edge_cap:
                    break  # the next page could only end the walk
        return Neighbourhood(nodes, edges)

    def _followed(
        self,
        brain: Brain,
        node: str,
        day: str | None,
        live: Callable[[list[str]], Collection[str]] | None,
        room: int,
    ) -> Iterator[list[NumberedLink]]:
        """The links the walk may follow from `node`, a page of its outgoing links at a time, so a
        node of many links, most closed or to pages gone, is read only as far as the walk goes. The
        first page is a little above the edges still allowed (`room`), so a few links not followed
        rarely cost a second query; `live` is asked about one page's targets at a time."""
        for read in self.links.outgoing_numbered_pages(
            brain.id, node, page=min(room + room // 4 + 1, MAX_EDGES)
        ):
            out = [link for link in read if link.target_id != node and (day is None or link.active_on(day))]
            if live is not None and out:
                kept = live([link.target_id for link in out])
                out = [link for link in out if link.target_id in kept]
            yield out

    # -- internals ---------------------------------------------------------------------------

    def _draft(
        self,
        brain: Brain,
        link_id: int,
        from_doc_id: str,
        to_doc_id: str,
        relationship: str,
        valid_from: str | None,
        valid_until: str | None,
    ) -> NumberedLink:
        return NumberedLink(
            id=link_id,
            brain_id=brain.id,
            source_id=from_doc_id,
            target_id=to_doc_id,
            kind=relationship,
            created_at=self.clock.now(),
            valid_from=valid_from,
            valid_until=valid_until,
        )

    def _day(self, temporal: str, at: date | None) -> str | None:
        """The day `active` compares against (`YYYY-MM-DD`), None for `all`."""
        if temporal == "all":
            return None
        if temporal != "active":
            raise InvalidInput(f"invalid temporal filter: {temporal}")
        if at is None:
            at = self.clock.now().astimezone(UTC).date()
        elif isinstance(at, datetime):
            at = at.astimezone(UTC).date()
        return at.isoformat()


def _sequence(brain: Brain) -> str:
    return link_sequence(brain.id)


def link_sequence(brain_id: str) -> str:
    """The name of the sequence numbering a brain's links."""
    return f"links#{brain_id}"


def _check_writer(brain: Brain) -> None:
    """A link is the brain's, not one document's: whoever may change the brain's unowned items
    (never a reader of another tenant's public brain)."""
    access.check_change(brain, None, f"the links of {brain.slug}")


def _check_link(from_doc_id: str, to_doc_id: str, relationship: str) -> None:
    check_node(from_doc_id)
    check_node(to_doc_id)
    check_kind(relationship)
