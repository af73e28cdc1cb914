"""The current memories of a brain, listed apart from their superseded values.

| record                          | pk                | sk                  | data                    |
|---------------------------------|-------------------|---------------------|-------------------------|
| a memory current at its last write | `brain#<brain>` | `cur#<path>`        | its `key`, `subject`   |
| the entries are complete        | `brain#<brain>`   | `current-memories`  | {}                      |

A typed memory's document (under `memories/`) that is neither deleted, superseded nor expired (as
its raw record shows: `may_be_current`, which keeps a damaged record listed, to be named) has
an entry; every commit writing or removing such a document puts or deletes its entry in the same
transaction (DocumentRepository.commit, through `entry_ops`). So a listing of current memories
reads the entries and then only their documents: a key written 10,000 times is one entry, not
10,000 records. An entry may outlive its memory's currency (a build racing a supersession): the
reader judges every document it reads as before, so such an entry costs one read and changes no
answer; what it may never do is miss a current memory.

Brains written before the entries existed have no `current-memories` mark: their first listing
builds the entries from the records (`build`), then marks them complete.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from typing import Any

from cairn.domain.errors import Conflict
from cairn.domain.stored_time import is_time
from cairn.ports.records import Delete, Item, Put, RecordStore

MEMORIES = "memories/"
"""The folder of every typed memory's document (memory_model.memory_path)."""

_DOC = "doc#"
_SK = "cur#"
_BUILT = "current-memories"
ENTRY_FIELDS = ("key", "subject")
"""What an entry holds of its memory: the fields a listing may pass over a memory by, which
an entry without them leaves to its document."""
_PUTS_AT_ONCE = 100  # DynamoDB's bound on one transaction


def entry_ops(ops: Sequence[Put | Delete]) -> list[Put | Delete]:
    """The entry op of every memory document that `ops` write or remove: put for one current after
    the write, delete otherwise (removed, deleted, superseded, expired, or no memory)."""
    entries: dict[tuple[str, str], Put | Delete] = {}
    for op in ops:
        pk, sk = (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)
        if not (pk.startswith("brain#") and sk.startswith(_DOC + MEMORIES)):
            continue
        key = (pk, _SK + sk.removeprefix(_DOC))
        data = op.item.data if isinstance(op, Put) else None
        current = data is not None and may_be_current(data)
        entries[key] = Put(Item(*key, data=_entry(data))) if data is not None and current else Delete(*key)
    return list(entries.values())


class CurrentMemories:
    def __init__(self, records: RecordStore) -> None:
        self.records = records
        self._built: set[str] = set()

    def paths(self, pk: str, prefix: str, wanted: Callable[[dict[str, Any]], bool]) -> Iterator[str]:
        """The paths under `prefix` with an entry whose data is `wanted`, in path order."""
        after: str | None = None
        while True:
            page = self.records.query(pk, _SK + prefix, after=after, limit=1000)
            yield from (item.sk.removeprefix(_SK) for item in page.items if wanted(item.data))
            if page.next_after is None:
                return
            after = page.next_after

    def built(self, pk: str) -> bool:
        if pk in self._built:
            return True
        if self.records.get(pk, _BUILT) is None:
            return False
        self._built.add(pk)
        return True

    def build(
        self, pk: str, records: Iterable[Item], may_be_current: Callable[[dict[str, Any]], bool]
    ) -> None:
        """Give an entry to each of `records` (memory documents of partition `pk`) that
        `may_be_current`, then mark the entries complete. An entry a writer put meanwhile is left
        as it is (it is as new as its document); an entry put here for a memory a writer
        superseded meanwhile only costs its reader a read."""
        made = set(self.paths(pk, MEMORIES, lambda _: True))  # by writers, or a build cut short
        puts: list[Put] = []
        for item in records:
            path = item.sk.removeprefix(_DOC)
            if path not in made and may_be_current(item.data):
                puts.append(Put(Item(pk, _SK + path, data=_entry(item.data)), 0))
            if len(puts) == _PUTS_AT_ONCE:
                self._create(puts)
                puts = []
        self._create(puts)
        with suppress(Conflict):  # another process marked it first
            self.records.put(Item(pk, _BUILT), 0)
        self._built.add(pk)

    def _create(self, puts: list[Put]) -> None:
        if not puts:
            return
        try:
            self.records.transact(puts)
        except Conflict:  # a writer put some of them: create the others one by one
            for put in puts:
                with suppress(Conflict):
                    self.records.transact([put])


def may_be_current(data: dict[str, Any]) -> bool:
    """Whether a memory document's raw record is one the current memories' listing reads: all but
    those it shows deleted, superseded, expired or holding no memory. A field of another kind
    than the document's (a number in `superseded_by`, text that is no time in `deleted_at`)
    shows nothing: the record keeps its entry, and its reader decodes it and names it damaged,
    as the listing of every record does (MemoryReads.current_of_type). Writers and builds both
    judge by this rule."""
    memory = data.get("memory")
    if is_time(data.get("deleted_at")) or memory is None:
        return False
    if not isinstance(memory, dict):
        return True
    return not (isinstance(memory.get("superseded_by"), str) or is_time(memory.get("expired_at")))


def _entry(data: dict[str, Any]) -> dict[str, Any]:
    """The fields a listing may pass over a memory by; none of a record whose memory is no object
    (damaged: its reader decodes it and names it)."""
    memory = data.get("memory")
    return {field: memory.get(field) for field in ENTRY_FIELDS} if isinstance(memory, dict) else {}
