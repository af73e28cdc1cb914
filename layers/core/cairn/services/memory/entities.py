"""Entities: what memories mention (clients, people, technologies, ...), counted and linked.

A memory's text yields mentions (an EntityExtractor: the offline rules in entity_rules.py, or
those and the configured language model's in entity_llm.py), plus its client (`client`, role
`about`, unless "global") and its source agent (`agent`, role `source`). Each mention resolves
to one entity of the brain by name or alias, ignoring case, and is created the first time; the
memory gets a `mentions` link to it (services/links/repository.py, role in the link's metadata), and the
entity's mention_count and last_seen move once per (entity, memory), in the same transaction as
the link.

Records, one partition per brain (`entities#<brain_id>`):

| item                | sk                                     | data                     |
|---------------------|----------------------------------------|--------------------------|
| entity              | `ent#<id>`                             | Entity                   |
| alias               | `alias#<lower-cased alias>`            | {entity_id}              |
| by mentions         | `byc#<inverted count>#<name>#<id>`     | Entity (a copy)          |
| by type, mentions   | `byt#<type>#<inverted count>#<name>#<id>` | Entity (a copy)       |
| counters            | `stats`                                | {total, by_type}         |

The id is a digest of the brain and the lower-cased canonical name, so a lookup by canonical
name, or by alias, is one batch read (plus the entity when it was an alias), and two writers
creating one entity meet on the same conditional write. Every change of an entity is one
transaction conditional on its version (and on the counters' version when it creates or drops
an entity), retried on a lost race, so concurrent mentions never lose a count. Listing by
mention count reads the `byc#`/`byt#` copies, which move in the same transaction as the count.
An entity whose last mention is forgotten is deleted with its aliases.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Protocol

from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Entity, Link
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.links.repository import LinkRepository
from cairn.services.memory.entity_wire import EntityMemories, EntityStats, MemoryLink

ENTITY_TYPES: Final = ("client", "person", "system", "service", "domain", "technology", "workflow", "agent")
MENTIONS: Final = "mentions"  # link kind: memory -> entity
MAX_NAME_CHARS: Final = 200
MAX_MENTIONS: Final = 50  # per memory; an extractor's surplus is dropped
LIST_LIMIT, MAX_LIST_LIMIT = 50, 100
MEMORIES_LIMIT, MAX_MEMORIES_LIMIT = 20, 100
TOP_MENTIONED: Final = 10
_MAX_KEY_BYTES = 600
_COUNT_WIDTH = 12
_RETRIES = 64


@dataclass(frozen=True)
class Mention:
    """A name a text mentions, its entity type, its role for the memory (`mentioned`, `about`
    for the memory's client, `source` for its agent) and other names it is known by."""

    name: str
    type: str
    role: str = "mentioned"
    aliases: tuple[str, ...] = ()


class EntityExtractor(Protocol):
    def extract(self, text: str) -> list[Mention]: ...


def check_type(entity_type: str) -> str:
    if entity_type not in ENTITY_TYPES:
        raise InvalidInput(f"Invalid entity type: {entity_type[:100]}")
    return entity_type


def clean_name(name: str) -> str:
    return " ".join(name.split())


def name_key(name: str) -> str:
    """What lookups compare: the name with its whitespace collapsed, lower-cased (casefold)."""
    return clean_name(name).casefold()


def entity_id(brain_id: str, name: str) -> str:
    digest = hashlib.sha256(f"{brain_id}\x00{name_key(name)}".encode()).hexdigest()
    return f"ent_{digest[:26]}"


def checked_mention(m: Mention) -> Mention:
    """The mention with a clean name; InvalidInput when its type, name or role is not valid."""
    check_type(m.type)
    name = clean_name(m.name)
    if not name or len(name) > MAX_NAME_CHARS or len(name_key(name).encode()) > _MAX_KEY_BYTES:
        raise InvalidInput(f"an entity name is 1 to {MAX_NAME_CHARS} characters")
    if not m.role or len(m.role) > 64:
        raise InvalidInput("a mention's role is 1 to 64 characters")
    return Mention(name, m.type, m.role, tuple(clean_name(a) for a in m.aliases if clean_name(a)))


@dataclass(frozen=True)
class StoredEntity:
    entity: Entity
    version: int


def entities_pk(brain_id: str) -> str:  # a brain's entities, their aliases and ranks
    return f"entities#{brain_id}"


def _entity_sk(eid: str) -> str:
    return f"ent#{eid}"


def _alias_sk(key: str) -> str:
    return f"alias#{key}"


def _rank_sks(e: Entity) -> list[str]:
    inverted = f"{10**_COUNT_WIDTH - 1 - e.mention_count:0{_COUNT_WIDTH}d}"
    tail = f"{inverted}#{name_key(e.name)}#{e.id}"
    return [f"byc#{tail}", f"byt#{e.kind}#{tail}"]


class EntityRepository:
    """Entities of a brain and their `mentions` links (see the module docstring for the items)."""

    def __init__(self, records: RecordStore, links: LinkRepository) -> None:
        self.records = records
        self.links = links

    # -- reads -------------------------------------------------------------------------------

    def by_id(self, brain_id: str, eid: str) -> StoredEntity | None:
        item = self.records.get(entities_pk(brain_id), _entity_sk(eid))
        return _stored(item) if item else None

    def find(self, brain_id: str, name: str) -> StoredEntity | None:
        """The entity whose canonical name or one of whose aliases is `name`, ignoring case."""
        key = name_key(name)
        if not key or len(key.encode()) > _MAX_KEY_BYTES:
            return None
        pk = entities_pk(brain_id)
        by_name, by_alias = (pk, _entity_sk(entity_id(brain_id, key))), (pk, _alias_sk(key))
        found = self.records.get_many([by_name, by_alias])
        if by_name in found:
            return _stored(found[by_name])
        pointer = found.get(by_alias)
        return self.by_id(brain_id, pointer.data["entity_id"]) if pointer else None

    def page(self, brain_id: str, entity_type: str | None, *, limit: int, offset: int) -> list[Entity]:
        """Entities by mention count (most first, then by name), `limit` of them after `offset`."""
        prefix = "byc#" if entity_type is None else f"byt#{entity_type}#"
        skip, after = offset, None
        out: list[Entity] = []
        while len(out) < limit:
            want = min(skip + limit - len(out), 1000)
            page = self.records.query(entities_pk(brain_id), prefix, after=after, limit=want)
            items = page.items[skip:]
            skip = max(skip - len(page.items), 0)
            out.extend(Entity.model_validate(item.data) for item in items)
            if page.next_after is None:
                break
            after = page.next_after
        return out[:limit]

    def counters(self, brain_id: str) -> tuple[int, dict[str, int]]:
        item = self.records.get(entities_pk(brain_id), "stats")
        if item is None:
            return 0, {}
        return int(item.data["total"]), {k: int(v) for k, v in item.data["by_type"].items()}

    # -- writes ------------------------------------------------------------------------------

    def link(
        self, brain_id: str, memory_id: str, mention: Mention, at: datetime, now: datetime
    ) -> Entity | None:
        """Link the memory to the mentioned entity (created when new) and count the mention;
        None when the memory already links to it (nothing changes)."""
        for attempt in range(_RETRIES):
            stored = self.find(brain_id, mention.name)
            eid = stored.entity.id if stored else entity_id(brain_id, mention.name)
            if attempt and self.links.get(brain_id, memory_id, MENTIONS, eid) is not None:
                return None
            if stored is None:
                entity, ops = self._create(brain_id, eid, mention, at, now)
            else:
                entity, ops = self._mentioned(brain_id, stored, mention, at, now)
            link = Link(
                id=new_id("lnk"),
                brain_id=brain_id,
                source_id=memory_id,
                target_id=eid,
                kind=MENTIONS,
                metadata={"role": mention.role},
                created_at=at,
            )
            try:
                self.records.transact([*ops, *self.links.add_ops(link)])
                return entity
            except Conflict:
                _back_off(attempt)
        raise Conflict("too many concurrent writers of this entity; retry")

    def unlink(self, brain_id: str, memory_id: str, eid: str, now: datetime) -> bool:
        """Drop the memory's link to the entity and its count (the entity too at zero);
        False when there was no such link."""
        for attempt in range(_RETRIES):
            stored = self.by_id(brain_id, eid)
            ops: list[Put | Delete] = []
            if stored is not None:
                ops = self._unmentioned(brain_id, stored, now)
            try:
                self.records.transact([*ops, *self.links.remove_ops(brain_id, memory_id, MENTIONS, eid)])
                return True
            except Conflict:
                if self.links.get(brain_id, memory_id, MENTIONS, eid) is None:
                    return False
                _back_off(attempt)
        raise Conflict("too many concurrent writers of this entity; retry")

    def _create(
        self, brain_id: str, eid: str, mention: Mention, at: datetime, now: datetime
    ) -> tuple[Entity, list[Put | Delete]]:
        aliases, alias_ops = self._claim(brain_id, eid, mention.aliases, {name_key(mention.name)})
        entity = Entity(
            id=eid,
            brain_id=brain_id,
            name=mention.name,
            kind=mention.type,
            aliases=aliases,
            mention_count=1,
            first_seen=at,
            last_seen=at,
            created_at=now,
            updated_at=now,
        )
        ops: list[Put | Delete] = [Put(_entity_item(entity), expected_version=0), *alias_ops]
        ops += _moved(brain_id, None, entity)
        ops.append(self._count_op(brain_id, entity.kind, +1))
        return entity, ops

    def _mentioned(
        self, brain_id: str, stored: StoredEntity, mention: Mention, at: datetime, now: datetime
    ) -> tuple[Entity, list[Put | Delete]]:
        before = stored.entity
        taken = {name_key(before.name), *(name_key(a) for a in before.aliases)}
        aliases, alias_ops = self._claim(brain_id, before.id, mention.aliases, taken)
        after = before.model_copy(
            update={
                "mention_count": before.mention_count + 1,
                "first_seen": min(before.first_seen or at, at),
                "last_seen": max(before.last_seen or at, at),
                "aliases": [*before.aliases, *aliases],
                "updated_at": now,
            }
        )
        ops: list[Put | Delete] = [Put(_entity_item(after), expected_version=stored.version), *alias_ops]
        return after, ops + _moved(brain_id, before, after)

    def _unmentioned(self, brain_id: str, stored: StoredEntity, now: datetime) -> list[Put | Delete]:
        before, pk = stored.entity, entities_pk(brain_id)
        if before.mention_count > 1:
            after = before.model_copy(update={"mention_count": before.mention_count - 1, "updated_at": now})
            return [
                Put(_entity_item(after), expected_version=stored.version),
                *_moved(brain_id, before, after),
            ]
        ops: list[Put | Delete] = [Delete(pk, _entity_sk(before.id), expected_version=stored.version)]
        ops += [Delete(pk, _alias_sk(name_key(a))) for a in before.aliases]
        ops += _moved(brain_id, before, None)
        ops.append(self._count_op(brain_id, before.kind, -1))
        return ops

    def _claim(
        self, brain_id: str, eid: str, aliases: Iterable[str], taken: set[str]
    ) -> tuple[list[str], list[Put | Delete]]:
        """The aliases the entity can take (no other entity has that name or alias) and the
        writes that claim them, each conditional on the alias being free."""
        wanted: dict[str, str] = {}
        for alias in aliases:
            key = name_key(alias)
            if key and key not in taken and key not in wanted and len(key.encode()) <= _MAX_KEY_BYTES:
                wanted[key] = clean_name(alias)
        if not wanted:
            return [], []
        pk = entities_pk(brain_id)
        keys = [(pk, sk) for key in wanted for sk in (_alias_sk(key), _entity_sk(entity_id(brain_id, key)))]
        found = self.records.get_many(keys)
        names: list[str] = []
        ops: list[Put | Delete] = []
        for key, alias in wanted.items():
            pointer = found.get((pk, _alias_sk(key)))
            if (pk, _entity_sk(entity_id(brain_id, key))) in found:
                continue  # another entity's canonical name
            if pointer is None:
                ops.append(Put(Item(pk, _alias_sk(key), {"entity_id": eid}), expected_version=0))
            elif pointer.data["entity_id"] != eid:
                continue
            names.append(alias)
        return names, ops

    def _count_op(self, brain_id: str, entity_type: str, delta: int) -> Put:
        item = self.records.get(entities_pk(brain_id), "stats")
        total, by_type = (item.data["total"], dict(item.data["by_type"])) if item else (0, {})
        by_type[entity_type] = by_type.get(entity_type, 0) + delta
        if by_type[entity_type] <= 0:
            del by_type[entity_type]
        data = {"total": max(total + delta, 0), "by_type": by_type}
        return Put(Item(entities_pk(brain_id), "stats", data), expected_version=item.version if item else 0)


def _entity_item(e: Entity) -> Item:
    return Item(entities_pk(e.brain_id), _entity_sk(e.id), e.model_dump(mode="json"))


def _stored(item: Item) -> StoredEntity:
    return StoredEntity(Entity.model_validate(item.data), item.version)


def _moved(brain_id: str, before: Entity | None, after: Entity | None) -> list[Put | Delete]:
    """Move the entity's by-count copies from where `before` sorted to where `after` does."""
    pk = entities_pk(brain_id)
    new = _rank_sks(after) if after else []
    ops: list[Put | Delete] = [
        Delete(pk, sk) for sk in (_rank_sks(before) if before else []) if sk not in new
    ]
    if after is not None:
        ops += [Put(Item(pk, sk, after.model_dump(mode="json"))) for sk in new]
    return ops


def _back_off(attempt: int) -> None:
    """A short random pause after a lost race, so racing writers stop meeting in lockstep."""
    time.sleep(random.uniform(0, min(0.02, 0.0005 * 2**attempt)))


def _clamp(value: int, low: int, high: int) -> int:
    return max(low, min(value, high))


class EntityService:
    def __init__(self, repo: EntityRepository, clock: Clock, extractor: EntityExtractor) -> None:
        self.clock = clock
        self.extractor = extractor
        self.repo = repo
        self.links = repo.links

    def extract(
        self, text: str, *, client_id: str | None = None, source_agent: str | None = None
    ) -> list[Mention]:
        """The mentions of a memory: its client (unless "global"), its source agent, then what
        the extractor finds in its text; one per name (the first), invalid ones left out."""
        found: list[Mention] = []
        if client_id and client_id != "global":
            found.append(Mention(client_id, "client", "about"))
        if source_agent:
            found.append(Mention(source_agent, "agent", "source"))
        found.extend(self.extractor.extract(text))
        out: dict[str, Mention] = {}
        for mention in found:
            try:
                m = checked_mention(mention)
            except InvalidInput:
                continue
            out.setdefault(name_key(m.name), m)
        return list(out.values())[:MAX_MENTIONS]

    def record_mentions(
        self, brain: Brain, memory_id: str, mentions: Sequence[Mention], at: datetime | None = None
    ) -> list[Entity]:
        """Link the memory to every mentioned entity, creating new ones; returns the entities
        newly linked (a mention the memory already links to changes nothing)."""
        checked = [checked_mention(m) for m in mentions]
        when, now = at or self.clock.now(), self.clock.now()
        linked = []
        for mention in checked:
            entity = self.repo.link(brain.id, memory_id, mention, when, now)
            if entity is not None:
                linked.append(entity)
        return linked

    def relink(
        self, brain: Brain, memory_id: str, mentions: Sequence[Mention], at: datetime | None = None
    ) -> list[Entity]:
        """After the memory's text changed: drop its links to entities it no longer mentions
        (and their counts), then record the mentions; returns the entities newly linked."""
        checked = [checked_mention(m) for m in mentions]
        wanted = set()
        for m in checked:
            stored = self.repo.find(brain.id, m.name)
            wanted.add(stored.entity.id if stored else entity_id(brain.id, m.name))
        now = self.clock.now()
        for link in self.links.outgoing(brain.id, memory_id, MENTIONS):
            if link.target_id not in wanted:
                self.repo.unlink(brain.id, memory_id, link.target_id, now)
        return self.record_mentions(brain, memory_id, checked, at)

    def forget(self, brain: Brain, memory_id: str, *, read: Sequence[Link] | None = None) -> int:
        """Drop every entity link of the memory and the counts they added; returns how many.
        `read`: its links of kind MENTIONS as the caller read them just now (no read of its own)."""
        now = self.clock.now()
        links = self.links.outgoing(brain.id, memory_id, MENTIONS) if read is None else read
        return sum(self.repo.unlink(brain.id, memory_id, link.target_id, now) for link in links)

    def list(
        self, brain: Brain, *, entity_type: str | None = None, limit: int = LIST_LIMIT, offset: int = 0
    ) -> list[Entity]:
        """Most mentioned first; limit clamped to 1..100."""
        if entity_type is not None:
            check_type(entity_type)
        if offset < 0:
            raise InvalidInput("offset must not be negative")
        return self.repo.page(brain.id, entity_type, limit=_clamp(limit, 1, MAX_LIST_LIMIT), offset=offset)

    def get(self, brain: Brain, name: str) -> Entity:
        """By canonical name or alias, ignoring case."""
        stored = self.repo.find(brain.id, name)
        if stored is None:
            raise NotFound("Entity not found")
        return stored.entity

    def memories(self, brain: Brain, name: str, *, limit: int = MEMORIES_LIMIT) -> EntityMemories:
        """The ids of the memories linked to the entity, newest id first; limit clamped to 1..100."""
        entity = self.get(brain, name)
        links = self.links.incoming(
            brain.id, entity.id, MENTIONS, limit=_clamp(limit, 1, MAX_MEMORIES_LIMIT), descending=True
        )
        return EntityMemories(
            entity,
            [MemoryLink(ln.source_id, str(ln.metadata.get("role") or ""), ln.created_at) for ln in links],
        )

    def stats(self, brain: Brain) -> EntityStats:
        total, by_type = self.repo.counters(brain.id)
        top = self.repo.page(brain.id, None, limit=TOP_MENTIONED, offset=0)
        return EntityStats(total, by_type, top)
