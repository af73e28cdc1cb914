"""Links: typed, weighted, temporal edges between nodes of a brain (documents, memories, entities).

Each link is two items, written and removed in one transaction, so either direction is one
query on one partition and nothing ever scans:

| item     | pk                              | sk                |
|----------|---------------------------------|-------------------|
| outgoing | `links#<brain_id>#out#<source>` | `<kind>#<target>` |
| incoming | `links#<brain_id>#in#<target>`  | `<kind>#<source>` |

Both carry the whole Link. A link is identified by (source, kind, target): adding it again keeps
the first one. A link is never rewritten (its items stay at version 1; changing one is remove
then add), which is what lets `remove_ops` require that the link still exists. Within a kind,
edges list in node-id order; Cairn's ids are time-ordered, so `descending=True` is newest first.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Final

from cairn.domain.errors import Conflict, InvalidInput
from cairn.domain.models import Link
from cairn.ports.records import Delete, Item, Put, RecordStore

_KIND = re.compile(r"[A-Za-z0-9_.:-]{1,64}")
MAX_NODE_BYTES: Final = 512
_PAGE = 500
_LINKS_PER_COMMIT = 50  # two items each: DynamoDB's 100-item transaction, unstaged
_RETRIES = 16
_PRESENT = 1  # the version of a link item (links are never rewritten)


def out_key(brain_id: str, source: str, kind: str, target: str) -> tuple[str, str]:
    return f"links#{brain_id}#out#{source}", f"{kind}#{target}"


def in_key(brain_id: str, source: str, kind: str, target: str) -> tuple[str, str]:
    return f"links#{brain_id}#in#{target}", f"{kind}#{source}"


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

    def remove_all_of(self, brain_id: str, node: str) -> int:
        """Remove every link from or to `node`; returns how many were removed."""
        check_node(node)
        removed = 0
        for direction in ("out", "in"):
            while True:
                page = self.records.query(f"links#{brain_id}#{direction}#{node}", limit=_LINKS_PER_COMMIT)
                if not page.items:
                    break
                ops: list[Put | Delete] = []
                for item in page.items:
                    link = Link.model_validate(item.data)
                    ops.append(Delete(*out_key(brain_id, link.source_id, link.kind, link.target_id)))
                    ops.append(Delete(*in_key(brain_id, link.source_id, link.kind, link.target_id)))
                self.records.transact(ops)
                removed += len(page.items)
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
        return list(self._edges(f"links#{brain_id}#out#{check_node(source)}", kind, limit, descending))

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
        return list(self._edges(f"links#{brain_id}#in#{check_node(target)}", kind, limit, descending))

    def _edges(self, pk: str, kind: str | None, limit: int | None, descending: bool) -> Iterator[Link]:
        if limit is not None and limit < 1:
            raise InvalidInput("limit must be at least 1")
        prefix = f"{check_kind(kind)}#" if kind is not None else ""
        left = limit
        after: str | None = None
        while left is None or left > 0:
            size = _PAGE if left is None else min(left, _PAGE)
            page = self.records.query(pk, prefix, after=after, limit=size, descending=descending)
            for item in page.items:
                yield Link.model_validate(item.data)
            if left is not None:
                left -= len(page.items)
            if page.next_after is None:
                return
            after = page.next_after


def _check(source: str, kind: str, target: str) -> None:
    check_node(source)
    check_kind(kind)
    check_node(target)
