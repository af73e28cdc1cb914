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

Brains written before the entries existed have no `current-memories` mark: their entries are
built in steps of at most `step_records` memory records, in path order, each step's end kept in a
`current-memories-step` record, and the mark written once a step reaches the last record. A
listing takes one step and reads the entries for the paths the build has passed and every record
after them (`reached`); the sweep (`carry_on`) takes steps for a while each tick. So no request
builds a brain's entries whole, and each answer is the one every record would give: a writer
keeps the entries of the paths already passed, as it does once they are complete.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from typing import Any

from cairn.domain.errors import Conflict
from cairn.domain.stored_time import is_time
from cairn.ports.records import MAX_GET_MANY, Delete, Item, Put, RecordStore

MEMORIES = "memories/"
"""The folder of every typed memory's document (memory_model.memory_path)."""

_DOC = "doc#"
_SK = "cur#"
_BUILT = "current-memories"
_STEP = "current-memories-step"
STEP_RECORDS = 2_000
"""The memory records one step of a build reads (about a quarter of a second on the embedded store)."""
ENTRIES_BUDGET_S = 20.0
"""How long a sweep tick builds entries (the AWS sweep runs every 5 minutes, `cairn serve`'s every
30 s): 110,000 memory records took 6.7 s on the embedded store, on a busy machine."""
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
    def __init__(self, records: RecordStore, *, step_records: int = STEP_RECORDS) -> None:
        self.records = records
        self.step_records = step_records
        self._built: set[str] = set()

    def paths(
        self, pk: str, prefix: str, wanted: Callable[[dict[str, Any]], bool], *, upto: str | None = None
    ) -> Iterator[str]:
        """The paths under `prefix` with an entry whose data is `wanted` (with `upto`, those up
        to that path), in path order."""
        after: str | None = None
        while True:
            page = self.records.query(pk, _SK + prefix, after=after, limit=1000)
            for item in page.items:
                path = item.sk.removeprefix(_SK)
                if upto is not None and path > upto:
                    return
                if wanted(item.data):
                    yield path
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

    def reached(self, pk: str) -> str | None:
        """The path of the last memory record the build of `pk`'s entries has passed (every one up
        to it has its entry, if it may be current); None before its first step."""
        progress = self.records.get(pk, _STEP)
        after = progress.data.get("after") if progress is not None else None
        return after.removeprefix(_DOC) if isinstance(after, str) and after.startswith(_DOC) else None

    def step(self, pk: str) -> bool:
        """Carry the build of `pk`'s entries over the next `step_records` memory records; True
        when the entries are complete. Two processes stepping at once may read the same records:
        the entries are created once, and the step's end moves forward only."""
        if self.built(pk):
            return True
        progress = self.records.get(pk, _STEP)
        after = progress.data.get("after") if progress is not None else None
        start = after if isinstance(after, str) and after.startswith(_DOC + MEMORIES) else None
        page = self.records.query(pk, _DOC + MEMORIES, after=start, limit=self.step_records)
        self._create_entries(pk, page.items)
        if page.next_after is None or not page.items:
            with suppress(Conflict):  # another process marked it first
                self.records.put(Item(pk, _BUILT), 0)
            self.records.delete(pk, _STEP)
            self._built.add(pk)
            return True
        with suppress(Conflict):  # another process took this step too, and recorded it first
            moved = Item(pk, _STEP, data={"after": page.items[-1].sk})
            self.records.put(moved, progress.version if progress is not None else 0)
        return False

    def carry_on(
        self, pks: Iterable[str], *, budget_s: float, stop: Callable[[], bool] = lambda: False
    ) -> int:
        """Step the builds of these partitions' entries (`stepped`)."""
        return stepped(self.step, pks, budget_s=budget_s, stop=stop)

    def _create_entries(self, pk: str, items: Sequence[Item]) -> None:
        """An entry for each of these memory records that may be current, unless one is there (a
        writer's: it is as new as its record)."""
        candidates = {_SK + i.sk.removeprefix(_DOC): i for i in items if may_be_current(i.data)}
        keys = [(pk, sk) for sk in candidates]
        there: set[str] = set()
        for start in range(0, len(keys), MAX_GET_MANY):
            there.update(sk for _, sk in self.records.get_many(keys[start : start + MAX_GET_MANY]))
        puts = [Put(Item(pk, sk, data=_entry(i.data)), 0) for sk, i in candidates.items() if sk not in there]
        for start in range(0, len(puts), _PUTS_AT_ONCE):
            self._create(puts[start : start + _PUTS_AT_ONCE])

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


def stepped(
    step: Callable[[str], bool], pks: Iterable[str], *, budget_s: float, stop: Callable[[], bool]
) -> int:
    """Take `step`s of each partition's build until it answers that the build is complete,
    `budget_s` has passed (the sweep's share of a build) or `stop` says the process is stopping;
    the steps taken."""
    ends = time.monotonic() + budget_s
    steps = 0
    for pk in pks:
        while time.monotonic() < ends and not stop():
            steps += 1
            if step(pk):
                break
        if time.monotonic() >= ends or stop():
            break
    return steps
