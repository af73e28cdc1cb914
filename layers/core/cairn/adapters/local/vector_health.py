"""Whether a brain's vector file still holds what its chunks point at, and what to do when not.

`check` re-reads the file against its sums (vector_sums.py) and against the rows the brain's
chunks point at. Rows that cannot be trusted are recorded in `vector_damage`, which every
process's vector leg consults (one indexed lookup) before reading the file: a brain with damage
is not searched by vector (IndexDamaged, a 503 with Retry-After) until `discard_unsound` removes
the chunks that point into it and the caller embeds their documents again. A file shorter than
what its chunks point at is padded with zero rows up to that length first, so rows appended later
never take the numbers of lost ones (a chunk would read another's vector).

A brain found damaged is logged and told to the listeners (who repair it) once, however many of
its searches are refused meanwhile; again only after it has been found sound in between (its
damage discarded here, or a search that finds none: repaired by another process), as the keyword
index's damage is (fts_damage.py).
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from cairn.adapters.local import ann_index, vector_checkpoint, vector_sums
from cairn.adapters.local import chunk_schema as schema
from cairn.adapters.local.chunk_writes import WriteBatch
from cairn.adapters.local.damage_notices import DamageNotices
from cairn.adapters.local.sqlite_threads import ThreadConnections
from cairn.adapters.local.vector_store import VectorFile, VectorStore
from cairn.domain.errors import Unavailable
from cairn.ports.chunks import ANN_NONE, Discarded, FileCheck, Stop

SCHEMA = """
CREATE TABLE IF NOT EXISTS vector_damage (
    brain_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    low INTEGER NOT NULL,
    high INTEGER NOT NULL,
    PRIMARY KEY (brain_id, epoch, low)
) WITHOUT ROWID;
"""
RETRY_AFTER_S = 10
log = logging.getLogger(__name__)


class Maintenance(Protocol):
    def ann_state(self, brain_id: str, epoch: int) -> str: ...

    def index_path(self, brain_id: str, epoch: int) -> Path: ...

    def forget(self, brain_id: str) -> None: ...


class IndexDamaged(Unavailable):
    """The brain's vectors are being rebuilt: its vector search waits for them."""

    def __init__(self) -> None:
        super().__init__(
            "this brain's search index is being rebuilt from its documents; retry shortly",
            retry_after_s=RETRY_AFTER_S,
        )


@dataclass(frozen=True)
class Found:
    """What `check` found in one brain's vector file."""

    epoch: int
    file_rows: int
    unsound_rows: int  # rows chunks point at that cannot be read back as written


class FileHealth:
    """The checks of one index's vector files, and who is told of a brain found damaged."""

    def __init__(
        self,
        db: ThreadConnections,
        vectors: VectorStore,
        write_lock: threading.Lock,
        maintenance: Maintenance,
    ) -> None:
        self.db = db
        self.vectors = vectors
        self.write_lock = write_lock
        self.maintenance = maintenance
        self.listeners: list[Callable[[str], None]] = []
        self._checked: set[tuple[str, int]] = set()  # (brain, epoch) this process has checked
        self._told = DamageNotices()

    def check(self, brain_id: str, *, reread: bool = True, stop: Stop | None = None) -> FileCheck:
        """`reread` False: a file found as last verified (vector_checkpoint.py) is not read, nor
        is an ANN index file (ann_index.verified); True reads both in full. CheckStopped when
        `stop` says so while a file is read: nothing is recorded."""
        found = None if reread else self._as_verified(brain_id)
        if found is None:
            found = check(self.db, self.vectors, brain_id, self.write_lock, stop)
        if found is None:
            return FileCheck(brain_id, 0, 0, ANN_NONE)
        self._checked.add((brain_id, found.epoch))
        if found.unsound_rows:
            self._found_damaged(brain_id)
        index = self.maintenance.index_path(brain_id, found.epoch)
        if reread and index.exists() and not ann_index.verified(index, reread=True, stop=stop):
            self.maintenance.forget(brain_id)  # its next use reads it, passes it over, rebuilds it
        return FileCheck(
            brain_id, found.file_rows, found.unsound_rows, self.maintenance.ann_state(brain_id, found.epoch)
        )

    def ensure_checked(self, brain_ids: Sequence[str]) -> None:
        """Check each brain's files the first time this process reads its vectors: in full only
        when the file is not as last verified."""
        for brain_id in brain_ids:
            with self.db.snapshot() as conn:
                epoch = schema.vector_epoch(conn, brain_id)
            if (brain_id, epoch) not in self._checked:
                self.check(brain_id, reread=False)

    def _as_verified(self, brain_id: str) -> Found | None:
        """What a check would find, without reading the file, when it is as last verified."""
        with self.db.snapshot() as conn:
            if schema.brain_state(conn, brain_id) is None:
                return None
            epoch = schema.vector_epoch(conn, brain_id)
            file = self.vectors.file(brain_id, epoch)
            if not vector_checkpoint.unchanged(conn, brain_id, epoch, file.path):
                return None
            unsound = _unsound_rows(conn, brain_id, epoch) if damaged(conn, brain_id, epoch) else 0
        return Found(epoch, file.stored_rows(), unsound)

    def verified(self, conn: sqlite3.Connection, brain_id: str, epoch: int) -> bool:
        """Inside a write transaction, before an append: whether the file is as last verified (or
        there is none yet, nor any sum: the append makes it, all of it summed)."""
        path = self.vectors.file(brain_id, epoch).path
        if vector_checkpoint.identity(path) is None and not path.exists():
            return vector_sums.covered(conn, brain_id, epoch) == 0
        return vector_checkpoint.unchanged(conn, brain_id, epoch, path)

    def appended(self, conn: sqlite3.Connection, brain_id: str, epoch: int, verified: bool) -> None:
        """Inside the write transaction of an append whose rows its sums now cover: the file is as
        verified after it when it was before it."""
        found = vector_checkpoint.identity(self.vectors.file(brain_id, epoch).path) if verified else None
        vector_checkpoint.record(conn, brain_id, epoch, found)

    def guard(self, conn: sqlite3.Connection, brain_id: str, epoch: int) -> None:
        """Refuse the brain's vector leg while it has damage (before anything reads the file)."""
        if damaged(conn, brain_id, epoch):
            self._found_damaged(brain_id)
            raise IndexDamaged()
        if brain_id in self._told:  # sound again: repaired, maybe by another process
            self._told.sound(brain_id)

    def floor(self, conn: sqlite3.Connection, brain_id: str, epoch: int) -> int:
        """Inside a write transaction: the rows the brain's file must hold before an append, what
        its sums cover. A file that lost some (truncated while in use) is padded by the append and
        the loss recorded, so no new row takes a lost row's number."""
        floor = vector_sums.covered(conn, brain_id, epoch)
        have = self.vectors.file(brain_id, epoch).stored_rows()
        if have < floor:
            conn.execute(
                "INSERT OR REPLACE INTO vector_damage (brain_id, epoch, low, high) VALUES (?, ?, ?, ?)",
                (brain_id, epoch, have, floor),
            )
            self._found_damaged(brain_id)
        return floor

    def discard(self, conn: sqlite3.Connection, brain_id: str, batch: WriteBatch) -> dict[str, Discarded]:
        if schema.brain_state(conn, brain_id) is None:
            return {}
        file = self.vectors.file(brain_id, schema.vector_epoch(conn, brain_id))
        removed = discard_unsound(conn, brain_id, batch, file)
        self._told.sound(brain_id)
        return removed

    def forget(self, brain_id: str) -> None:
        self._told.sound(brain_id)

    def tell(self, brain_id: str) -> None:
        """Tell the listeners of damage (the keyword index's too, which says it once itself)."""
        for listener in list(self.listeners):
            listener(brain_id)

    def _found_damaged(self, brain_id: str) -> None:
        if self._told.damaged(brain_id):
            log.warning(
                "the vector file of brain %s is damaged: its vector searches are refused until it is "
                "rebuilt (a running server rebuilds it in the background, `cairn check` rebuilds it now)",
                brain_id,
            )
            self.tell(brain_id)


def damaged(conn: sqlite3.Connection, brain_id: str, epoch: int) -> bool:
    row = conn.execute(
        "SELECT 1 FROM vector_damage WHERE brain_id = ? AND epoch = ? LIMIT 1", (brain_id, epoch)
    ).fetchone()
    return row is not None


def check(
    db: ThreadConnections,
    vectors: VectorStore,
    brain_id: str,
    write_lock: threading.Lock,
    stop: Stop | None = None,
) -> Found | None:
    """Check the brain's vector file; record what is unsound. None for a brain the index does not
    hold. The file is read outside any transaction; a bad segment is recorded only if its sum did
    not change meanwhile (another process rebased it). A read that `stop` ends (CheckStopped)
    records nothing: the file is not taken as verified, and the next check reads it again."""
    with db.snapshot() as conn:
        if schema.brain_state(conn, brain_id) is None:
            return None
        epoch = schema.vector_epoch(conn, brain_id)
        sums = vector_sums.pieces(conn, brain_id, epoch)
        top = conn.execute("SELECT max(vec_row) FROM chunks WHERE brain_id = ?", (brain_id,)).fetchone()[0]
    file = vectors.file(brain_id, epoch)
    before = vector_checkpoint.identity(file.path)  # taken first: a write while reading moves it
    found = vector_sums.check_sums(file, sums, stop)
    wanted = max(found.covered_rows, -1 if top is None else int(top) + 1)
    lost = (found.file_rows, wanted) if wanted > found.file_rows else None
    with write_lock, db.transaction() as conn:
        if schema.brain_state(conn, brain_id) is None:
            return None  # dropped meanwhile: nothing of it is left to check, nor to record
        if schema.vector_epoch(conn, brain_id) != epoch:
            return Found(epoch, found.file_rows, 0)  # compacted meanwhile: the next check sees it
        now = vector_sums.pieces(conn, brain_id, epoch)
        ranges = [(low, high) for low, high in found.bad if now.get(low) == sums.get(low)]
        if lost is not None:
            file.pad_to(lost[1])
            ranges.append(lost)
        elif found.covered_rows < found.file_rows:  # rows no piece covers: written before the sums
            vector_sums.extend(conn, brain_id, epoch, file, found.file_rows)
        conn.executemany(
            "INSERT OR REPLACE INTO vector_damage (brain_id, epoch, low, high) VALUES (?, ?, ?, ?)",
            [(brain_id, epoch, low, high) for low, high in ranges],
        )
        sound = not ranges and before is not None and vector_checkpoint.identity(file.path) == before
        vector_checkpoint.record(conn, brain_id, epoch, before if sound else None)
        unsound = _unsound_rows(conn, brain_id, epoch)
        if not unsound and damaged(conn, brain_id, epoch):
            # Only rows no chunk uses are damaged (dead rows a compaction has not reclaimed yet):
            # nothing reads them, and there is no chunk whose discarding would clear them.
            _take_as_is(conn, brain_id, epoch, file)
    return Found(epoch, file.stored_rows(), unsound)


def discard_unsound(
    conn: sqlite3.Connection, brain_id: str, batch: WriteBatch, file: VectorFile
) -> dict[str, Discarded]:
    """Inside a write transaction: remove the chunks that point at damaged rows, forget the damage
    and take the file as it is now as what its sums describe. Document id -> what was removed."""
    epoch = schema.vector_epoch(conn, brain_id)
    state = schema.brain_state(conn, brain_id)
    if state is None:
        return {}
    ids: dict[str, list[str]] = {}
    contexts: dict[str, str | None] = {}
    for chunk_id, document_id, ordinal, indexed, context in conn.execute(
        f"SELECT chunks.id, chunks.document_id, chunks.ordinal, f.rowid, f.context FROM chunks "
        f"LEFT JOIN {schema.fts_table(state[0])} f ON f.rowid = chunks.rowid WHERE {_IN_DAMAGE}",
        (brain_id, epoch),
    ).fetchall():
        ids.setdefault(document_id, []).append(chunk_id)
        if ordinal == 0:  # index-only context lives on the first chunk
            contexts[document_id] = (context or "") if indexed is not None else None
    removed = {doc: Discarded(tuple(chunk_ids), contexts.get(doc)) for doc, chunk_ids in ids.items()}
    if removed:
        batch.remove(_IN_DAMAGE, (brain_id, epoch))
    _take_as_is(conn, brain_id, epoch, file)
    return removed


def _take_as_is(conn: sqlite3.Connection, brain_id: str, epoch: int, file: VectorFile) -> None:
    """Inside a write transaction, no chunk pointing at damaged rows any more: forget the damage
    and take the file as it is now as what its sums describe."""
    conn.execute("DELETE FROM vector_damage WHERE brain_id = ?", (brain_id,))
    found = vector_checkpoint.identity(file.path)
    vector_sums.rebase(conn, brain_id, epoch, file)  # the sums of what the file holds now
    if found != vector_checkpoint.identity(file.path):  # written meanwhile: not known to match
        found = None
    vector_checkpoint.record(conn, brain_id, epoch, found)


def forget(conn: sqlite3.Connection, brain_id: str, *, below_epoch: int | None = None) -> None:
    limit = below_epoch if below_epoch is not None else 1 << 62
    conn.execute("DELETE FROM vector_damage WHERE brain_id = ? AND epoch < ?", (brain_id, limit))
    vector_checkpoint.forget(conn, brain_id, below_epoch=below_epoch)


_IN_DAMAGE = (
    "brain_id = ? AND EXISTS (SELECT 1 FROM vector_damage d WHERE d.brain_id = chunks.brain_id "
    "AND d.epoch = ? AND chunks.vec_row >= d.low AND chunks.vec_row < d.high)"
)


def _unsound_rows(conn: sqlite3.Connection, brain_id: str, epoch: int) -> int:
    return int(
        conn.execute(f"SELECT count(*) FROM chunks WHERE {_IN_DAMAGE}", (brain_id, epoch)).fetchone()[0]
    )
