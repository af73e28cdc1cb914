"""Where to look for the brains a principal may use: a pointer per live brain in its tenant's
partition, and one per live public brain in a partition of its own.

| record            | pk                   | sk            |
|-------------------|----------------------|---------------|
| brain of a tenant | `brains-of#<tenant>` | `brain#<id>`  |
| public brain      | `brains-public`      | `brain#<id>`  |

A principal reads only its own tenant's brains and public ones (auth/access.py `may`), so its
listing and its default brain come from these two partitions instead of every brain of every
tenant. A pointer holds nothing but the brain's id: the brain record is read with it and decides,
so a pointer left behind (a brain handed over, deleted, or made private meanwhile) hides nothing
and shows nothing; a missing one would hide a brain, so every write of a brain record writes its
pointers in the same transaction (repositories.py BrainRepository).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator

from cairn.auth import access
from cairn.domain.models import Brain, Visibility
from cairn.ports.records import Delete, Item, Put, RecordStore

TENANT_PREFIX = "brains-of#"
PUBLIC_PK = "brains-public"
_SK = "brain#"
_PAGE = 500  # pointers per query


def tenant_pk(tenant: str) -> str:
    return f"{TENANT_PREFIX}{tenant}"


def pointer_keys(brain: Brain) -> set[tuple[str, str]]:
    """The pointers a brain has as it is: none once it is deleted."""
    if brain.deleted_at is not None:
        return set()
    keys = {(tenant_pk(brain.owner_tenant), f"{_SK}{brain.id}")}
    if brain.visibility is Visibility.public:
        keys.add((PUBLIC_PK, f"{_SK}{brain.id}"))
    return keys


def pointer_ops(before: Brain | None, after: Brain, *, every: bool = False) -> list[Put | Delete]:
    """What a write of `before` as `after` changes in the pointers; with `every`, each pointer
    `after` has is written whether or not `before` had it (a store an earlier release wrote)."""
    old = pointer_keys(before) if before is not None else set()
    new = pointer_keys(after)
    gone: list[Put | Delete] = [Delete(pk, sk) for pk, sk in sorted(old - new)]
    made = sorted(new if every else new - old)
    return gone + [Put(Item(pk, sk, data={"brain_id": after.id})) for pk, sk in made]


def ids_in(records: RecordStore, pk: str, after: str | None) -> Iterator[str]:
    """The brain ids a pointer partition holds, in id order, after the id `after`, read a page at a time."""
    cursor = f"{_SK}{after}" if after is not None else None
    while True:
        page = records.query(pk, _SK, after=cursor, limit=_PAGE)
        for item in page.items:
            yield item.sk.removeprefix(_SK)
        if page.next_after is None:
            return
        cursor = page.next_after


def ids_listed(records: RecordStore, pk: str, after: str | None) -> Iterator[str]:
    """`ids_in`, read at most once a request: a partition this request has read to its end is
    answered from what it read (auth/access.py `Access.listings`), and a read to its end is kept
    for the rest of the request. Never longer: the next request reads again, so a brain made,
    shared or unshared since is listed as it is now."""
    current = access.current()
    kept = current.listings if current is not None else None
    if kept is not None and pk in kept:
        yield from (i for i in kept[pk] if after is None or i > after)
        return
    seen: list[str] = []
    for brain_id in ids_in(records, pk, after):
        seen.append(brain_id)
        yield brain_id
    if kept is not None and after is None:
        kept[pk] = tuple(seen)


def merged(*streams: Iterable[str]) -> Iterator[str]:
    """Ids of sorted streams, in order, each once (a tenant's public brain is in both partitions)."""
    last: str | None = None
    for brain_id in heapq.merge(*streams):
        if brain_id != last:
            yield brain_id
            last = brain_id
