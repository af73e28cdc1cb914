"""How many typed memories a brain holds, kept by every commit that writes or removes one.

| record                       | pk              | sk              | data                          |
|------------------------------|-----------------|-----------------|-------------------------------|
| a brain's memory counts      | `brain#<brain>` | `memory-counts` | `owners`, `after` or `built`  |

`owners` maps each owner (`-` for none, `=<owner>` for one) to buckets: a memory document's
folder under `memories/`, whether it is deleted, whether it holds a memory and is current, and its
type (`bucket`), each bucket's [records, chunks]. A record whose raw data a count could not read
without decoding (a field of another kind than the document's) is counted in the `damaged` bucket
instead: a reader meeting one counts the old way, which names the record damaged.

Every commit writing or removing a document under `memories/` reads the counts, then the records
it replaces, and writes the counts at the version read in the same transaction
(DocumentRepository.commit, through `MemoryCounts.ops`). A record its writer read already and puts
at the version read (a superseded memory: `Replacing`) is taken as read, not read again: the put's
condition fails the commit if it changed since. So the counts of a brain move with each of
its memory writes, in any process, and a crash leaves both or neither; two commits in one brain
meet on the counts' version, the loser counting again (`MemoryCounts.transact`).

A brain written before the counts has none: they are built in steps of `step_records` memory
records in path order (`step`; a count takes one, the sweep takes more), `after` naming the last
record passed. A commit adds its changes only for the paths the build has passed, and writes the
counts all the same, so a step that read a record a commit then changed loses on the version and
is taken again. Until `built`, counts are made by reading every record, as before.

The record holds a bucket per folder and per owner, and both are the writers' to choose (a folder
under `memories/` of up to 985 characters, a ThoughtMCP userId of up to 256): kept whole, it would
outgrow what one record may hold (DynamoDB refuses an item over 400 KB, and with it every memory
commit of the brain). A commit or step that would make it larger than `MAX_BYTES` writes it
`over` instead, with no counts but when (`at`): from then on commits leave it alone and counts are
made by reading every record, as before the counts. The folders and owners that blew it up may go
(deleted, erased), so the sweep's build (`carry_on`) counts an `over` brain again from its first
record once `RETRY_OVER_S` has passed since its mark: the retry's first step only replaces the
mark by an empty build (at the version read; commits leave a mark's version alone, so a step
counting beside them could not tell a record changed under it), which commits write again, and
the brain has kept counts again once that build ends within `MAX_BYTES`, or is marked `over` anew
(the next try an hour later)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from cairn import faults
from cairn.domain.errors import Conflict
from cairn.ports.records import MAX_GET_MANY, Delete, Item, Put, RecordStore
from cairn.services.documents import memory_times
from cairn.services.documents.current_memories import stepped
from cairn.services.documents.raw_memory import read_raw

_DOC = "doc#"
_MEMORIES = "memories/"
COUNTS_SK = "memory-counts"
_SK = COUNTS_SK
DAMAGED = "damaged"
STEP_RECORDS = 2_000
"""The memory records one step of a build reads."""
COUNTS_BUDGET_S = 10.0
"""How long a sweep tick builds counts."""
TIMES_STEP = 99
"""The memory records one step of the creation-time entries' build reads: its entries and the
counts' record are one transaction, within DynamoDB's 100 items."""
MAX_BYTES = 256_000
"""The most the counts' data may take encoded (DynamoDB's items hold 400 KB): past it, `over`."""
OVER = "over"
RETRY_OVER_S = 3600.0
"""How long counts marked `over` stay so before the sweep's build counts them again."""
COMMIT_TRIES = 32
"""How often a commit counts again after losing only on the counts' version to another commit."""


def bucket(folder: str, data: dict[str, Any]) -> str:
    """A memory document's bucket from its raw record (documents/raw_memory.py)."""
    raw = read_raw(data)
    if raw is None:
        return DAMAGED
    state = "deleted" if raw.deleted else "live"
    if not raw.memory:
        return f"{folder}|{state}|none|"
    return f"{folder}|{state}|{'current' if raw.current else 'past'}|{raw.type}"


@dataclass(frozen=True)
class Replacing(Put):
    """A put conditional on the version of the record it replaces, carrying that record as its
    writer read it: `MemoryCounts.ops` takes it from here instead of reading it again. Taken only
    while it is the record the put expects (same key, same version), so a record changed since
    that read still fails the commit's condition, as one read again would."""

    replaced: Item | None = None


def replacing(put: Put, replaced: Item | None) -> Put:
    """`put`, carrying the record it replaces as read (None: nothing known, the counts read it)."""
    return put if replaced is None else Replacing(put.item, put.expected_version, replaced)


def _known(key: tuple[str, str], op: Put | Delete) -> Item | None:
    """The record a `Replacing` put carries, when it is the one the put's condition names."""
    if not isinstance(op, Replacing) or op.replaced is None:
        return None
    held = op.replaced
    return held if (held.pk, held.sk) == key and held.version == op.expected_version else None


class Bucket:
    """A bucket's parts: its folder, whether deleted, whether current, its memory's type."""

    __slots__ = ("current", "deleted", "folder", "memory", "type")

    def __init__(self, name: str) -> None:
        self.folder, state, current, self.type = name.split("|")
        self.deleted = state == "deleted"
        self.memory = current != "none"
        self.current = current == "current"


def _owner(data: dict[str, Any]) -> str:
    memory = data.get("memory")
    owner = memory.get("user_id") if isinstance(memory, dict) else None
    return f"={owner}" if isinstance(owner, str) else "-"


def _folder(sk: str) -> str:
    return sk.removeprefix(_DOC + _MEMORIES).partition("/")[0]


def _is_memory(pk: str, sk: str) -> bool:
    return pk.startswith("brain#") and sk.startswith(_DOC + _MEMORIES)


def _add(owners: dict[str, Any], sk: str, data: dict[str, Any], sign: int) -> None:
    buckets = owners.setdefault(_owner(data), {})
    name = bucket(_folder(sk), data)
    chunks = data.get("chunk_count", 0)
    held = buckets.get(name, [0, 0])
    held = [held[0] + sign, held[1] + sign * (chunks if type(chunks) is int else 0)]
    if held == [0, 0]:
        buckets.pop(name, None)
    else:
        buckets[name] = held


def owner_of(key: str) -> str | None:
    """The owner an owner key of the counts stands for (None: the unowned records)."""
    return None if key == "-" else key[1:]


class MemoryCounts:
    def __init__(
        self,
        records: RecordStore,
        *,
        step_records: int = STEP_RECORDS,
        times_step: int = TIMES_STEP,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.records = records
        self.now = now
        self.step_records = step_records
        self.times_step = times_step

    def ops(self, ops: Sequence[Put | Delete]) -> list[Put | Delete]:
        """The puts of the counts of every brain whose memory documents `ops` write or remove,
        moved by what each replaces, each after the ops of the creation-time entries those
        records change (memory_times.py); none when they touch no memory document. The counts
        are read before the records replaced, so a commit of these puts at the versions read
        means no other commit changed those records since (a record a `Replacing` put carries was
        read before the counts, and its put's condition says it is unchanged since)."""
        touched: dict[tuple[str, str], Put | Delete] = {}
        for op in ops:
            pk, sk = (op.item.pk, op.item.sk) if isinstance(op, Put) else (op.pk, op.sk)
            if _is_memory(pk, sk):
                touched[(pk, sk)] = op
        if not touched:
            return []
        pks = sorted({pk for pk, _ in touched})
        counts = self.records.get_many([(pk, _SK) for pk in pks])
        # a put of a record that must not exist yet replaces none (if one is there, the commit fails)
        keys = [key for key, op in touched.items() if not (isinstance(op, Put) and op.expected_version == 0)]
        before = {key: held for key in keys if (held := _known(key, touched[key])) is not None}
        keys = [key for key in keys if key not in before]
        for start in range(0, len(keys), MAX_GET_MANY):
            before.update(self.records.get_many(keys[start : start + MAX_GET_MANY]))
        faults.reached("counts.read")
        puts: list[Put | Delete] = []
        for pk in pks:
            held = counts.get((pk, _SK))
            if held is not None and held.data.get(OVER) is True:
                continue  # nothing kept: counts read every record
            data: dict[str, Any] = {"owners": {}} if held is None else _copy(held.data)
            for (op_pk, sk), op in touched.items():
                if op_pk != pk:
                    continue
                old = before.get((pk, sk))
                new = op.item.data if isinstance(op, Put) else None
                if _passed(data.get("built"), data.get("after"), sk):
                    if old is not None:
                        _add(data["owners"], sk, old.data, -1)
                    if new is not None:
                        _add(data["owners"], sk, new, 1)
                if _passed(data.get("times"), _times_after(data), sk):
                    puts += _entry_ops(pk, sk, old, new)
            puts.append(Put(Item(pk, _SK, data=self._bounded(data)), held.version if held is not None else 0))
        return puts

    def transact(self, ops: Sequence[Put | Delete]) -> list[Item]:
        """`RecordStore.transact` with the memory counts of the brains `ops` touch, and their
        memories' creation-time entries, moved in the same transaction (their puts not
        returned); counted again when it lost on the counts' version alone."""
        for _ in range(COMMIT_TRIES):
            counts = self.ops(ops)
            try:
                written = self.records.transact([*ops, *counts])
            except Conflict:
                if not counts or not self.conditions_hold(ops):
                    raise
                continue
            return written[: len(written) - sum(isinstance(op, Put) for op in counts)]
        raise Conflict("too many concurrent writers of this brain's memories; retry")

    def conditions_hold(self, ops: Sequence[Put | Delete]) -> bool:
        """Whether every condition of `ops` holds now: a commit that lost while they do lost on
        the counts' version alone, and counts again."""
        wanted: dict[tuple[str, str], int] = {}
        for op in ops:
            key, expected = (
                ((op.item.pk, op.item.sk), op.expected_version)
                if isinstance(op, Put)
                else ((op.pk, op.sk), op.expected_version)
            )
            if expected is not None:
                wanted[key] = expected
        keys = list(wanted)
        found: dict[tuple[str, str], Item] = {}
        for start in range(0, len(keys), MAX_GET_MANY):
            found.update(self.records.get_many(keys[start : start + MAX_GET_MANY]))
        return all(
            (found[key].version if key in found else 0) == expected for key, expected in wanted.items()
        )

    def held(self, pk: str) -> dict[str, Any] | None:
        """The counts' record as stored (None: there is none), for `built_owners` and
        `times_done` to read both from one read."""
        held = self.records.get(pk, _SK)
        return None if held is None else held.data

    def read(self, pk: str) -> dict[str, Any] | None:
        """The brain's built counts (owner -> bucket -> [records, chunks]); None until built."""
        return built_owners(self.held(pk))

    def step(self, pk: str, *, retry_over: bool = False) -> bool:
        """Carry the build of `pk`'s counts over the next `step_records` memory records; True
        once they are built (or `over`). A step that loses to a commit (or another step) is not
        kept. With `retry_over` (the sweep's), counts marked `over` `RETRY_OVER_S` ago or more
        are counted again from the first record: this step replaces the mark by an empty build."""
        held = self.records.get(pk, _SK)
        data: dict[str, Any] = {"owners": {}} if held is None else _copy(held.data)
        if data.get(OVER) is True and retry_over and self.over_due(data):
            # Commits leave an `over` mark alone, its version too: a step counting beside them
            # would keep a record's count from before a commit changed it. The mark is replaced
            # first, by a build from the start, which commits write again (its version moving).
            with suppress(Conflict):
                self.records.put(Item(pk, _SK, data={"owners": {}}), held.version if held else 0)
            return False
        if data.get("built") is True or data.get(OVER) is True:
            return True
        after = data.get("after")
        start = after if isinstance(after, str) and after.startswith(_DOC + _MEMORIES) else None
        page = self.records.query(pk, _DOC + _MEMORIES, after=start, limit=self.step_records)
        for item in page.items:
            _add(data["owners"], item.sk, item.data, 1)
        faults.reached("counts.step")
        if page.next_after is None or not page.items:
            data.pop("after", None)
            data["built"] = True
        else:
            data["after"] = page.items[-1].sk
        data = self._bounded(data)
        try:
            self.records.put(Item(pk, _SK, data=data), held.version if held is not None else 0)
        except Conflict:
            return False
        return data.get("built") is True or data.get(OVER) is True

    def carry_on(
        self, pks: Iterable[str], *, budget_s: float, stop: Callable[[], bool] = lambda: False
    ) -> int:
        """Step the builds of these partitions' counts (current_memories.stepped), counting those
        `over` for an hour or more again."""
        return stepped(lambda pk: self.step(pk, retry_over=True), pks, budget_s=budget_s, stop=stop)

    def unfinished(self, pks: Sequence[str]) -> tuple[list[str], list[str]]:
        """Of these partitions, those whose counts' build the sweep has to step (no counts yet,
        being built, or `over` and due again) and those whose creation-time entries it has to:
        one batch read of their counts' records a MAX_GET_MANY, where stepping each would read
        each (on DynamoDB, 10,000 brains' reads outlast the sweep's budget, leaving the later
        brains' builds unreached every tick)."""
        held: dict[tuple[str, str], Item] = {}
        keys = [(pk, _SK) for pk in pks]
        for start in range(0, len(keys), MAX_GET_MANY):
            held.update(self.records.get_many(keys[start : start + MAX_GET_MANY]))
        counts, times = [], []
        for pk in pks:
            item = held.get((pk, _SK))
            data = item.data if item is not None else None
            if data is not None and data.get(OVER) is True:
                if self.over_due(data):  # counted again, then its entries built, once it fits
                    counts.append(pk)
                    times.append(pk)
                continue
            if data is None or data.get("built") is not True:
                counts.append(pk)
            if not times_done(data):
                times.append(pk)
        return counts, times

    def over_due(self, data: dict[str, Any]) -> bool:
        """Whether counts marked `over` are due to be counted again (a mark with no time is one
        an earlier release wrote: due at once)."""
        at = data.get("at")
        return not isinstance(at, int | float) or self.now() - at >= RETRY_OVER_S

    def _bounded(self, data: dict[str, Any]) -> dict[str, Any]:
        """The counts to write, or the mark that they grew past what one record may hold, and when."""
        if len(json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()) > MAX_BYTES:
            return {OVER: True, "at": self.now()}
        return data

    def times_built(self, pk: str) -> bool:
        """Whether every live memory record of `pk` has its creation-time entry (memory_times.py)."""
        return times_done(self.held(pk))

    def step_times(self, pk: str) -> bool:
        """Carry the build of `pk`'s creation-time entries over the next `times_step` memory
        records, the entries and the build's progress written with the counts' record at the
        version read, so a step that read a record a commit changed since is not kept; True once
        they are built. A build starting without progress (the counts' record lost) first
        removes the entries left, `times_step` at a time. Counts grown `over` keep no entries
        either (commits leave both alone): nothing to build."""
        held = self.records.get(pk, _SK)
        data: dict[str, Any] = {"owners": {}} if held is None else _copy(held.data)
        times = data.get("times")
        if times is True or data.get(OVER) is True:
            return True
        ops: list[Put | Delete] = []
        if not isinstance(times, dict):
            left = self.records.query(pk, memory_times.PREFIX, limit=self.times_step)
            ops = [Delete(pk, item.sk) for item in left.items]
            times = None if ops else {}
        if times is not None:
            after = times.get("after")
            start = after if isinstance(after, str) and after.startswith(_DOC + _MEMORIES) else None
            page = self.records.query(pk, _DOC + _MEMORIES, after=start, limit=self.times_step)
            for item in page.items:
                entry = memory_times.entry_of(pk, item.sk, item.data)
                if entry is not None:
                    ops.append(Put(entry))
            done = page.next_after is None or not page.items
            times = True if done else {"after": page.items[-1].sk}
        faults.reached("counts.times_step")
        if times is not None:
            data["times"] = times
        try:
            self.records.transact([*ops, Put(Item(pk, _SK, data=data), held.version if held else 0)])
        except Conflict:
            return False
        return times is True

    def carry_on_times(
        self, pks: Iterable[str], *, budget_s: float, stop: Callable[[], bool] = lambda: False
    ) -> int:
        """Step the builds of these partitions' creation-time entries (current_memories.stepped)."""
        return stepped(self.step_times, pks, budget_s=budget_s, stop=stop)

    def newest(self, pk: str, *, page: int = 128) -> Iterator[Item]:
        """`pk`'s creation-time entries, newest first (those to be read instead first of all),
        in pages from `page` entries on, each twice the one before up to MAX_GET_MANY."""
        after: str | None = None
        while True:
            found = self.records.query(pk, memory_times.PREFIX, after=after, limit=page, descending=True)
            yield from found.items
            if found.next_after is None:
                return
            after, page = found.next_after, min(page * 2, MAX_GET_MANY)

    def recount_times(self, pk: str) -> list[Item]:
        """The creation-time entries every memory record of `pk` gives now (what the kept ones
        must equal), in key order."""
        entries = []
        after: str | None = None
        while True:
            page = self.records.query(pk, _DOC + _MEMORIES, after=after, limit=1000)
            entries += [e for i in page.items if (e := memory_times.entry_of(pk, i.sk, i.data))]
            if page.next_after is None:
                return sorted(entries, key=lambda e: e.sk)
            after = page.next_after

    def recount(self, pk: str) -> dict[str, Any]:
        """The counts every memory record of `pk` gives now (what the kept ones must equal)."""
        owners: dict[str, Any] = {}
        after: str | None = None
        while True:
            page = self.records.query(pk, _DOC + _MEMORIES, after=after, limit=1000)
            for item in page.items:
                _add(owners, item.sk, item.data, 1)
            if page.next_after is None:
                return {owner: buckets for owner, buckets in owners.items() if buckets}
            after = page.next_after


def built_owners(data: dict[str, Any] | None) -> dict[str, Any] | None:
    """The built counts a counts' record holds (owner -> bucket -> [records, chunks]); None
    until built, and once `over`."""
    if data is None or data.get("built") is not True:
        return None
    owners: dict[str, Any] = data["owners"]
    return owners


def times_done(data: dict[str, Any] | None) -> bool:
    """Whether a counts' record says every live memory record has its creation-time entry."""
    return data is not None and data.get("times") is True and data.get(OVER) is not True


def _passed(state: Any, after: Any, sk: str) -> bool:
    """Whether a build (the counts', the entries') has passed the record at `sk`."""
    return state is True or (isinstance(after, str) and sk <= after)


def _times_after(data: dict[str, Any]) -> Any:
    times = data.get("times")
    return times.get("after") if isinstance(times, dict) else None


def _entry_ops(pk: str, sk: str, old: Item | None, new: dict[str, Any] | None) -> list[Put | Delete]:
    """The entry ops of a memory record replaced: its old entry gone, its new one put."""
    was = memory_times.entry_of(pk, sk, old.data) if old is not None else None
    now = memory_times.entry_of(pk, sk, new) if new is not None else None
    ops: list[Put | Delete] = []
    if was is not None and (now is None or now.sk != was.sk):
        ops.append(Delete(pk, was.sk))
    if now is not None:
        ops.append(Put(now))
    return ops


def _copy(data: dict[str, Any]) -> dict[str, Any]:
    owners = data.get("owners")
    copied = {
        owner: {name: list(held) for name, held in buckets.items()}
        for owner, buckets in (owners.items() if isinstance(owners, dict) else ())
    }
    return {**data, "owners": copied}
