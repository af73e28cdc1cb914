"""Links: typed, weighted, temporal edges between nodes of a brain (documents, memories, entities).

Two families share this repository; neither ever scans, and either direction is one query on
one partition.

**Keyed links** (zengram's entity mentions): one link per (source, kind, target), two items
written and removed in one transaction:

| item     | pk                              | sk                |
|----------|---------------------------------|-------------------|
| outgoing | `links#<brain_id>#out#<source>` | `<kind>#<target>` |
| incoming | `links#<brain_id>#in#<target>`  | `<kind>#<source>` |

Both carry the whole Link. Adding (source, kind, target) again keeps the first one. A keyed link
is never rewritten (its items stay at version 1; changing one is remove then add), which is what
lets `remove_ops` require that the link still exists. Within a kind, edges list in node-id order;
Cairn's ids are time-ordered, so `descending=True` is newest first.

**Numbered links** (the document graph: gbrain's links, and the graphs of later surfaces): each
has an integer id, so a (source, kind, target) may hold several over time (closed intervals and
an open one), and closing one rewrites its validity. Three items, written in one transaction:

| item     | pk                               | sk                  |
|----------|----------------------------------|---------------------|
| outgoing | `links#<brain_id>#nout#<source>` | `<20-digit id>`     |
| incoming | `links#<brain_id>#nin#<target>`  | `<20-digit id>`     |
| by id    | `links#<brain_id>#id#<id>`       | `link`              |

The outgoing and incoming items carry the whole link (`NumberedLink`), so both directions list in
id order, oldest first or (descending) newest first; the by-id item holds only the two node ids,
which locate the other two. Validity values are kept as given, in one of three forms: `YYYY-MM`,
`YYYY-MM-DD`, `YYYY-MM-DDTHH:MM:SSZ`. Each is a prefix of the last, so comparing them needs no
stored second form: `validity_instant` pads a value to a full instant (a month to its first day,
a day to midnight), and instants compare as strings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Final

from cairn.domain.errors import Conflict, InvalidInput, reading_record
from cairn.domain.models import Link
from cairn.ports.records import Delete, Item, Put, RecordStore

_KIND = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
MAX_NODE_BYTES: Final = 512
_PAGE = 500
_LINKS_PER_COMMIT = 50  # two items each: DynamoDB's 100-item transaction, unstaged
_RETRIES = 16
_PRESENT = 1  # the version of a keyed link item (keyed links are never rewritten)
_ID_DIGITS = 20  # a numbered link's id in its sort keys: any u64, in numeric order
_NUMBERED_PER_COMMIT = 33  # three items each: DynamoDB's 100-item transaction, unstaged
_NUMBERED_PAGE = 1000
_VALIDITY = re.compile(r"[0-9]{4}-[0-9]{2}(?:-[0-9]{2}(?:T[0-9]{2}:[0-9]{2}:[0-9]{2}Z)?)?")
_PAD: Final = {7: "-01T00:00:00Z", 10: "T00:00:00Z", 20: ""}


@dataclass(frozen=True, slots=True)
class NumberedLink:
    """A link with an integer id (see the module docstring); validity values as given."""

    id: int
    brain_id: str
    source_id: str
    target_id: str
    kind: str
    created_at: datetime
    valid_from: str | None = None
    valid_until: str | None = None
    weight: float = 1.0

    @property
    def is_open(self) -> bool:
        return self.valid_until is None

    def active_on(self, day: str) -> bool:
        """Whether the link holds on `day` (`YYYY-MM-DD`) as gbrain decides it, comparing the
        values as written with SQLite's `date('now')`, as strings: `valid_from <= day` and
        `valid_until >= day`. So an instant later today has not started (it sorts after the
        bare day), an instant of today has not ended, and a month (`YYYY-MM`) sorts before every
        day of it: as a start it holds all month, as an end it has ended on its first day."""
        start, end = self.valid_from, self.valid_until
        return (start is None or start <= day) and (end is None or end >= day)


def out_key(brain_id: str, source: str, kind: str, target: str) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}out#{source}", f"{kind}#{target}"


def in_key(brain_id: str, source: str, kind: str, target: str) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}in#{target}", f"{kind}#{source}"


def nout_key(brain_id: str, source: str, link_id: int) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}nout#{source}", f"{link_id:0{_ID_DIGITS}d}"


def nin_key(brain_id: str, target: str, link_id: int) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}nin#{target}", f"{link_id:0{_ID_DIGITS}d}"


def nid_key(brain_id: str, link_id: int) -> tuple[str, str]:
    return f"{links_prefix(brain_id)}id#{link_id}", "link"


def check_validity(value: str | None) -> str | None:
    """A validity value in one of the three forms (whether the date exists is the caller's check)."""
    if value is not None and not (isinstance(value, str) and _VALIDITY.fullmatch(value)):
        raise InvalidInput("a validity is YYYY-MM, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ")
    return value


def validity_instant(value: str) -> str:
    """`value` as a full instant `YYYY-MM-DDTHH:MM:SSZ`: a month from its first day, a day from
    midnight. Instants compare correctly as strings."""
    return value + _PAD[len(value)]


def check_interval(valid_from: str | None, valid_until: str | None) -> None:
    if valid_from is None or valid_until is None:
        return
    if validity_instant(valid_until) < validity_instant(valid_from):
        raise InvalidInput(f"valid_until {valid_until} is before valid_from {valid_from}")


def check_kind(kind: str) -> str:
    if not _KIND.fullmatch(kind):
        raise InvalidInput("a link kind is 1 to 64 letters, digits or _ . : -")
    return kind


def check_node(node: str) -> str:
    if not node or len(node.encode("utf-8", errors="replace")) > MAX_NODE_BYTES:
        raise InvalidInput(f"a link's node id is 1 to {MAX_NODE_BYTES} bytes")
    return node


class LinkRepository:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    # -- writes ------------------------------------------------------------------------------

    def add_ops(self, link: Link) -> list[Put | Delete]:
        """Both items of a new link, each conditional on not existing yet (Conflict if it does)."""
        _check(link.source_id, link.kind, link.target_id)
        data = link.model_dump(mode="json")
        return [
            Put(Item(*out_key(link.brain_id, link.source_id, link.kind, link.target_id), data), 0),
            Put(Item(*in_key(link.brain_id, link.source_id, link.kind, link.target_id), data), 0),
        ]

    def remove_ops(self, brain_id: str, source: str, kind: str, target: str) -> list[Put | Delete]:
        """Both items of an existing link, each conditional on still existing (Conflict if not)."""
        _check(source, kind, target)
        return [
            Delete(*out_key(brain_id, source, kind, target), expected_version=_PRESENT),
            Delete(*in_key(brain_id, source, kind, target), expected_version=_PRESENT),
        ]

    def apply(self, ops: Sequence[Put | Delete], *, per_commit: int) -> None:
        """Commit `ops` (each link's pair together) `per_commit` at a time; a commit that conflicts
        with a concurrent writer of the same links is applied op by op, skipping those that lost."""
        for start in range(0, len(ops), per_commit):
            batch = ops[start : start + per_commit]
            try:
                self.records.transact(batch)
            except Conflict:
                for op in batch:
                    try:
                        self.records.transact([op])
                    except Conflict:
                        continue

    def add(self, link: Link) -> tuple[Link, bool]:
        """Store the link unless (source, kind, target) is already linked; returns the stored
        link and whether this call created it."""
        for _ in range(_RETRIES):
            try:
                self.records.transact(self.add_ops(link))
                return link, True
            except Conflict:
                existing = self.get(link.brain_id, link.source_id, link.kind, link.target_id)
                if existing is not None:
                    return existing, False
                # removed between our write and our read: try again
        raise Conflict("too many concurrent changes of this link; retry")

    def remove(self, brain_id: str, source: str, kind: str, target: str) -> bool:
        """Remove one link; False when there was none."""
        try:
            self.records.transact(self.remove_ops(brain_id, source, kind, target))
        except Conflict:
            return False
        return True

    def remove_all_of(
        self, brain_id: str, node: str, *, but: str | None = None, kept: list[Link] | None = None
    ) -> int:
        """Remove every link from or to `node` (`but` those of that kind, which their own service
        removes with what they counted: those from `node` are added to `kept`, read with the rest);
        returns how many were removed."""
        check_node(node)
        removed = 0
        for direction in ("out", "in"):
            after: str | None = None
            while True:
                page = self.records.query(
                    f"{links_prefix(brain_id)}{direction}#{node}", after=after, limit=_LINKS_PER_COMMIT
                )
                links = [Link.model_validate(item.data) for item in page.items]
                if kept is not None and direction == "out":
                    kept += (link for link in links if link.kind == but)
                ops: list[Put | Delete] = []
                for link in (link for link in links if link.kind != but):
                    ops.append(Delete(*out_key(brain_id, link.source_id, link.kind, link.target_id)))
                    ops.append(Delete(*in_key(brain_id, link.source_id, link.kind, link.target_id)))
                if ops:
                    self.records.transact(ops)
                removed += len(ops) // 2
                if page.next_after is None:
                    break
                after = page.next_after
        return removed

    # -- reads -------------------------------------------------------------------------------

    def get(self, brain_id: str, source: str, kind: str, target: str) -> Link | None:
        _check(source, kind, target)
        item = self.records.get(*out_key(brain_id, source, kind, target))
        return Link.model_validate(item.data) if item else None

    def outgoing(
        self,
        brain_id: str,
        source: str,
        kind: str | None = None,
        *,
        limit: int | None = None,
        descending: bool = False,
    ) -> list[Link]:
        """Links from `source` (of one kind, or all kinds in kind order), up to `limit`."""
        return list(self._edges(f"{links_prefix(brain_id)}out#{check_node(source)}", kind, limit, descending))

    def incoming(
        self,
        brain_id: str,
        target: str,
        kind: str | None = None,
        *,
        limit: int | None = None,
        descending: bool = False,
    ) -> list[Link]:
        """Links to `target` (of one kind, or all kinds in kind order), up to `limit`."""
        return list(self._edges(f"{links_prefix(brain_id)}in#{check_node(target)}", kind, limit, descending))

    def incoming_metadata(self, brain_id: str, target: str, kind: str, *, limit: int) -> dict[str, Any]:
        """The sources of the links of `kind` to `target`, up to `limit` in source order, each with
        its link's metadata as stored (a dict unless the record is damaged): no Link model decoded,
        for a reader of many links that needs these two only (the graph leg reads up to 320,000
        links a search, and validating them was half its time)."""
        pk = f"{links_prefix(brain_id)}in#{check_node(target)}"
        cut = len(check_kind(kind)) + 1
        return {
            item.sk[cut:]: item.data.get("metadata", {}) for item in self._edge_items(pk, kind, limit, False)
        }

    def _edges(self, pk: str, kind: str | None, limit: int | None, descending: bool) -> Iterator[Link]:
        return (Link.model_validate(item.data) for item in self._edge_items(pk, kind, limit, descending))

    def _edge_items(self, pk: str, kind: str | None, limit: int | None, descending: bool) -> Iterator[Item]:
        if limit is not None and limit < 1:
            raise InvalidInput("limit must be at least 1")
        prefix = f"{check_kind(kind)}#" if kind is not None else ""
        left = limit
        after: str | None = None
        while left is None or left > 0:
            size = _PAGE if left is None else min(left, _PAGE)
            page = self.records.query(pk, prefix, after=after, limit=size, descending=descending)
            yield from page.items
            if left is not None:
                left -= len(page.items)
            if page.next_after is None:
                return
            after = page.next_after

    # -- numbered links ----------------------------------------------------------------------

    def add_numbered_ops(self, link: NumberedLink) -> list[Put | Delete]:
        """The three items of a new numbered link, each conditional on not existing yet."""
        _check(link.source_id, link.kind, link.target_id)
        if link.id < 1 or len(str(link.id)) > _ID_DIGITS:
            raise InvalidInput("a link id is a positive integer of at most 20 digits")
        check_interval(check_validity(link.valid_from), check_validity(link.valid_until))
        data = _numbered_data(link)
        pointer = {"source_id": link.source_id, "target_id": link.target_id}
        return [
            Put(Item(*nout_key(link.brain_id, link.source_id, link.id), data), 0),
            Put(Item(*nin_key(link.brain_id, link.target_id, link.id), data), 0),
            Put(Item(*nid_key(link.brain_id, link.id), pointer), 0),
        ]

    def add_numbered(self, links: Sequence[NumberedLink]) -> None:
        """Store new numbered links, several per transaction (each link's items always together)."""
        for start in range(0, len(links), _NUMBERED_PER_COMMIT):
            chunk = links[start : start + _NUMBERED_PER_COMMIT]
            self.records.transact([op for link in chunk for op in self.add_numbered_ops(link)])

    def numbered(self, brain_id: str, link_id: int) -> NumberedLink | None:
        item = self._numbered_item(brain_id, link_id)
        return None if item is None else _numbered(brain_id, item)

    def set_valid_until(self, brain_id: str, link_id: int, valid_until: str) -> NumberedLink | None:
        """Set the link's valid_until (closing it, or moving its end); None when there is no such
        link, InvalidInput when valid_until is before its valid_from."""
        check_validity(valid_until)
        for _ in range(_RETRIES):
            item = self._numbered_item(brain_id, link_id)
            if item is None:
                return None
            link = replace(_numbered(brain_id, item), valid_until=valid_until)
            check_interval(link.valid_from, valid_until)
            try:
                self.records.transact(self._rewrite_ops(link, item.version))
                return link
            except Conflict:
                continue  # closed or removed meanwhile: read it again
        raise Conflict("too many concurrent changes of this link; retry")

    def close_open(
        self, brain_id: str, source: str, kind: str, target: str, valid_until: str
    ) -> list[NumberedLink]:
        """Set valid_until on every open numbered link (source, kind, target); returns them,
        oldest first ([] when none is open). InvalidInput, and nothing closed, when valid_until
        is before the valid_from of any of them."""
        _check(source, kind, target)
        check_validity(valid_until)
        closed: list[NumberedLink] = []
        for _ in range(_RETRIES):
            found = [
                (replace(link, valid_until=valid_until), version)
                for link, version in self._numbered_edges(f"{links_prefix(brain_id)}nout#{source}", brain_id)
                if link.is_open and link.kind == kind and link.target_id == target
            ]
            for link, _version in found:
                check_interval(link.valid_from, valid_until)
            if not found:
                return closed
            batch = found[:_LINKS_PER_COMMIT]  # two items each
            try:
                self.records.transact([op for link, v in batch for op in self._rewrite_ops(link, v)])
            except Conflict:
                continue  # one changed meanwhile: read them again
            closed.extend(link for link, _version in batch)
        raise Conflict("too many concurrent changes of this link; retry")

    def outgoing_numbered(
        self,
        brain_id: str,
        source: str,
        *,
        descending: bool = False,
        page: int = _NUMBERED_PAGE,
        after_id: int | None = None,
    ) -> Iterator[NumberedLink]:
        """Numbered links from `source` in id order, read `page` at a time from one partition;
        `after_id`: only those of a larger id (ascending order)."""
        pk = f"{links_prefix(brain_id)}nout#{check_node(source)}"
        after = None if after_id is None else f"{after_id:0{_ID_DIGITS}d}"
        return (link for link, _ in self._numbered_edges(pk, brain_id, descending, page, after))

    def outgoing_numbered_pages(
        self, brain_id: str, source: str, *, page: int = _NUMBERED_PAGE
    ) -> Iterator[list[NumberedLink]]:
        """`outgoing_numbered`, a page as it is read (the first `page` links, then up to
        _NUMBERED_PAGE): a reader that stops in a page reads none after it, and may judge the
        links of one page together (the graph walk asks which targets still exist)."""
        pk = f"{links_prefix(brain_id)}nout#{check_node(source)}"
        for items in self._numbered_pages(pk, False, page, None):
            yield [_numbered(brain_id, item) for item in items]

    def incoming_numbered(
        self, brain_id: str, target: str, *, descending: bool = False, page: int = _NUMBERED_PAGE
    ) -> Iterator[NumberedLink]:
        """Numbered links to `target` in id order, read `page` at a time from one partition."""
        pk = f"{links_prefix(brain_id)}nin#{check_node(target)}"
        return (link for link, _ in self._numbered_edges(pk, brain_id, descending, page))

    def remove_numbered_all_of(self, brain_id: str, node: str) -> int:
        """Remove every numbered link from or to `node`; returns how many were removed."""
        check_node(node)
        removed = 0
        for direction in ("nout", "nin"):
            while True:
                page = self.records.query(
                    f"{links_prefix(brain_id)}{direction}#{node}", limit=_NUMBERED_PER_COMMIT
                )
                if not page.items:
                    break
                ops: list[Put | Delete] = []
                for item in page.items:
                    link = _numbered(brain_id, item)
                    ops.append(Delete(*nout_key(brain_id, link.source_id, link.id)))
                    ops.append(Delete(*nin_key(brain_id, link.target_id, link.id)))
                    ops.append(Delete(*nid_key(brain_id, link.id)))
                self.records.transact(ops)
                removed += len(page.items)
        return removed

    def _numbered_item(self, brain_id: str, link_id: int) -> Item | None:
        """The outgoing item of link `link_id` (found through its by-id item)."""
        if link_id < 1 or len(str(link_id)) > _ID_DIGITS:
            return None
        pointer = self.records.get(*nid_key(brain_id, link_id))
        if pointer is None:
            return None
        return self.records.get(*nout_key(brain_id, str(pointer.data["source_id"]), link_id))

    def _rewrite_ops(self, link: NumberedLink, version: int) -> list[Put | Delete]:
        # The outgoing and incoming items are only ever written together, so they share a version.
        data = _numbered_data(link)
        return [
            Put(Item(*nout_key(link.brain_id, link.source_id, link.id), data), version),
            Put(Item(*nin_key(link.brain_id, link.target_id, link.id), data), version),
        ]

    def _numbered_edges(
        self,
        pk: str,
        brain_id: str,
        descending: bool = False,
        page_size: int = _NUMBERED_PAGE,
        after: str | None = None,
    ) -> Iterator[tuple[NumberedLink, int]]:
        for items in self._numbered_pages(pk, descending, page_size, after):
            for item in items:
                yield _numbered(brain_id, item), item.version

    def _numbered_pages(
        self, pk: str, descending: bool, page_size: int, after: str | None
    ) -> Iterator[list[Item]]:
        """The partition's items a query at a time: `page_size`, then _NUMBERED_PAGE each."""
        while True:
            page = self.records.query(pk, after=after, limit=page_size, descending=descending)
            yield page.items
            if page.next_after is None:
                return
            after = page.next_after
            page_size = _NUMBERED_PAGE


def _check(source: str, kind: str, target: str) -> None:
    check_node(source)
    check_kind(kind)
    check_node(target)


def _numbered_data(link: NumberedLink) -> dict[str, Any]:
    return {
        "id": link.id,
        "source_id": link.source_id,
        "target_id": link.target_id,
        "kind": link.kind,
        "valid_from": link.valid_from,
        "valid_until": link.valid_until,
        "weight": link.weight,
        "created_at": link.created_at.isoformat(),
    }


def _numbered(brain_id: str, item: Item) -> NumberedLink:
    # Plain construction, no model validation: a graph walk decodes hundreds of these per call.
    data = item.data
    with reading_record(item.pk, item.sk, "link"):
        return NumberedLink(
            id=data["id"],
            brain_id=brain_id,
            source_id=data["source_id"],
            target_id=data["target_id"],
            kind=data["kind"],
            created_at=datetime.fromisoformat(data["created_at"]),
            valid_from=data["valid_from"],
            valid_until=data["valid_until"],
            weight=data["weight"],
        )


def links_prefix(brain_id: str) -> str:
    """What every partition of a brain's links starts with (keyed and numbered, both ways, by id)."""
    return f"links#{brain_id}#"
