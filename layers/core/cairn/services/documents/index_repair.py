"""The chunk index checked against the records it is derived from, and rebuilt from them.

What the index holds follows from the records: every live document's chunks, embedded from its
stored text. Checking a brain compares the two and repairs what differs:

- its files, where the index keeps its own (VerifiableChunks, the embedded store): vector rows
  that no longer read back as written are discarded with their chunks and those documents are
  embedded again; a damaged ANN index is set aside by the index itself (exact search until
  compaction builds it again), which loses nothing; a keyword index SQLite cannot read (its
  searches refused as damaged) is made again from the chunks' text, and the documents of chunks
  whose text was lost with it are indexed again;
- its chunks: per document, the index holds as many active chunks as the record says (`held`),
  and none of a document that is not live (a ghost); a document whose record was written after
  the index last wrote the brain (StampedChunks: the embedded store's database restored from an
  older backup, or its last writes lost) is also cut again from its text and compared chunk by
  chunk (fingerprints, no embedding), which catches an older version's chunks that happen to be
  as many, or a renamed document's old path; with `deep`, every live document is. A document that
  differs is reconciled from its record (DocumentService.reconcile);
- with `deep`, the vectors other services keep beside the documents (DerivedVectors: ThoughtMCP's
  sector vectors): those embedding their text now would store differently (another model, or
  another vector version of the same model) are embedded again. Searches are not refused
  meanwhile: the older vectors still answer until each is replaced.

While a brain is repaired its searches are refused with Unavailable (503 and Retry-After): the
index is incomplete, and an answer from it would be silently wrong. Other brains are untouched.
`cairn serve` and `cairn mcp` compare every brain when they start and repair in the background
(`at_start`: small brains before they listen, a big one after, refused until it has been compared);
the embedded index also reports a brain whose files it finds damaged while serving (its vector
leg, or its keyword index, refuses it meanwhile), and that brain is repaired at once. `cairn check`
runs the same.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

from cairn.auth import access
from cairn.domain.errors import CairnError, DamagedContent
from cairn.domain.models import Brain, Document
from cairn.ports.chunks import ANN_NONE, CheckStopped, ChunkIndex, StampedChunks, Stop, VerifiableChunks
from cairn.ports.records import Delete, Item, Put
from cairn.services.documents.rebuilding import Progress, RebuildingBrains
from cairn.services.documents.service import DocumentService
from cairn.services.repositories import all_items, document_of, documents_pk

log = logging.getLogger(__name__)
T = TypeVar("T")

CHECK_LATER_ABOVE_CHUNKS = 50_000
LOST = "lost#"
"""Sort-key prefix, in a brain's documents partition, of a document found indexed with no record."""
CHECK_FIRST_BUDGET_S = 1.5


@dataclass(frozen=True)
class BrainCheck:
    """What checking one brain found, and what was done about it."""

    brain_id: str
    slug: str
    documents: int  # live documents
    chunks: int  # active chunks the index holds
    vector_rows: int = 0
    unsound_chunks: int = 0  # chunks whose vectors did not read back as written
    ann: str = ANN_NONE
    keywords: str = ""  # why its keyword index cannot be read ("" when it can)
    stale: tuple[str, ...] = ()  # live documents whose chunks differ from the record
    ghosts: tuple[str, ...] = ()  # documents not live that still have chunks
    damaged: tuple[str, ...] = ()  # paths of live documents whose stored bytes are gone or damaged (deep)
    unrecorded: tuple[str, ...] = ()  # indexed, or taken out of search before, and no record names (lost)
    repaired: int = 0  # documents indexed again
    failed: tuple[str, ...] = ()  # documents that could not be (left for the next check)
    stale_vectors: tuple[str, ...] = ()  # documents whose derived vectors are stale (deep)
    remade: int = 0  # of those, embedded again
    keywords_rebuilt: bool = False
    tenant: str | None = None  # the brain's owner tenant: whose /healthz may name its rebuild

    @property
    def indexed_right(self) -> bool:
        return not (self.unsound_chunks or self.keywords or self.stale or self.ghosts)

    @property
    def sound(self) -> bool:
        return self.indexed_right and not self.damaged and not self.unrecorded and not self.stale_vectors


class DerivedVectors(Protocol):
    """Vectors a service keeps beside a brain's documents, embedded from their text outside the
    chunk index (ThoughtMCP's sector vectors, services/thoughtmcp/stale_sectors.py)."""

    def stale(self, brain: Brain) -> list[str]:
        """The documents whose vectors embedding them now would make differently (no embedding)."""

    def remake(self, brain: Brain, ids: Sequence[str]) -> int:
        """Embed those of these documents' vectors again that are still stale; how many were."""


class IndexRepair:
    def __init__(self, documents: DocumentService, chunks: ChunkIndex, rebuilding: RebuildingBrains) -> None:
        """`chunks`: the index itself (not the access-filtered view: a check sees everything)."""
        self.documents = documents
        self.chunks = chunks
        self.rebuilding = rebuilding
        self._derived: list[DerivedVectors] = []
        self._lock = threading.Lock()
        self._wanted: set[str] = set()
        self._wake = threading.Condition(self._lock)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- checking -----------------------------------------------------------------------------

    def compare(
        self, brain: Brain, *, deep: bool = False, reread: bool = True, stop: Stop | None = None
    ) -> BrainCheck:
        """Check the brain's files and compare its chunks with its records (read-only, but for
        what the index itself sets aside: an unsound ANN index, unsound rows it stops reading).
        `reread` False (a start): files the index knows nothing wrote since it verified them are
        not read again. CheckStopped as soon as `stop` says the process is stopping (a big
        brain's comparison takes seconds: about 9 per million chunks on the embedded store)."""
        stopped = stop or _never
        with access.as_system():
            files = (
                self.chunks.check(brain.id, deep=deep, reread=reread, stop=stop)
                if isinstance(self.chunks, VerifiableChunks)
                else None
            )
            held = self.chunks.held(brain.id)
            # Only a record's id, deletion and chunk count are compared: read from the stored
            # fields (decoding 200,000 records as documents took 4 of the 13 s at a million chunks).
            live: dict[str, Item] = {}
            recorded: set[str] = set()
            for item in self.documents.repo.raw(brain.id):
                if stopped():
                    raise CheckStopped()
                recorded.add(str(item.data["id"]))
                if item.data.get("deleted_at") is None:
                    live[str(item.data["id"])] = item
            stale = [i for i, item in live.items() if held.get(i, 0) != (item.data.get("chunk_count") or 0)]
            damaged: dict[str, str] = {}  # id -> path
            suspects = live if deep else self._written_since(brain.id, live)
            if files is not None and files.keywords:  # their chunks' text cannot be read: after the rebuild
                suspects = {}
            if suspects:
                counted = set(stale)
                for doc_id, item in suspects.items():
                    if stopped():
                        raise CheckStopped()
                    doc = document_of(item)
                    try:
                        differs = self._differs(doc)
                    except DamagedContent:  # its chunks are the last copy of its text: left alone
                        damaged[doc_id] = doc.path
                        continue
                    if differs and doc_id not in counted:
                        stale.append(doc_id)
                stale = [i for i in stale if i not in damaged]
            ghosts = [doc_id for doc_id in held if doc_id not in live]
            # A document erased for good has no record either, but its intent stands until its
            # chunks are gone; chunks no record and no intent names were written for records lost.
            intents = self.documents.repo.intents
            unrecorded = [i for i in ghosts if i not in recorded and intents.get(i) is None]
            # and those an earlier repair took out of search, until a restore brings their records back
            unrecorded += [i for i in self._noted_lost(brain.id) if i not in recorded and i not in unrecorded]
            stale_vectors = [i for d in self._derived for i in d.stale(brain)] if deep else []
        if unrecorded:
            log.error(
                "brain %s: %d indexed documents have no record at all (%s): the records database "
                "has lost them (damaged, or restored from an older backup); their chunks are taken "
                "out of search, their content files are kept. Restore the records from a backup.",
                brain.slug,
                len(unrecorded),
                ", ".join(unrecorded[:10]),
            )
        return BrainCheck(
            brain.id,
            brain.slug,
            documents=len(live),
            chunks=sum(held.values()),
            vector_rows=files.vector_rows if files else 0,
            unsound_chunks=files.unsound_chunks if files else 0,
            ann=files.ann if files else ANN_NONE,
            keywords=files.keywords if files else "",
            stale=tuple(stale),
            ghosts=tuple(ghosts),
            damaged=tuple(damaged.values()),
            unrecorded=tuple(unrecorded),
            stale_vectors=tuple(dict.fromkeys(stale_vectors)),
            tenant=brain.owner_tenant,
        )

    def also_check(self, derived: DerivedVectors) -> None:
        """Check these vectors too in a deep check, and embed the stale ones again in its repair."""
        self._derived.append(derived)

    def _written_since(self, brain_id: str, live: dict[str, Item]) -> dict[str, Item]:
        """The live documents whose records were written after the index last wrote the brain
        (with a second's slack), where the index says when that was: those it may not reflect
        (its database restored from an older backup, or its last writes lost), compared chunk by
        chunk even when their counts agree. After a clean stop there are few or none."""
        if not isinstance(self.chunks, StampedChunks):
            return {}
        last = self.chunks.last_written(brain_id)
        if last is None:
            return {}
        since = last - timedelta(seconds=1)
        return {i: item for i, item in live.items() if _written_at(item) > since}

    def _noted_lost(self, brain_id: str) -> list[str]:
        """Documents a repair took out of search because no record named them (lost records)."""
        items = all_items(self.documents.repo.records, documents_pk(brain_id), LOST)
        return [item.sk.removeprefix(LOST) for item in items]

    def _note_lost(self, found: BrainCheck) -> None:
        """Record the documents found with chunks and no record, so that they are still reported
        once their chunks are gone; forget those a restore has brought back."""
        records, pk = self.documents.repo.records, documents_pk(found.brain_id)
        noted = set(self._noted_lost(found.brain_id))
        now = {"at": datetime.now(UTC).isoformat()}
        ops: list[Put | Delete] = [
            Put(Item(pk, f"{LOST}{i}", data=now)) for i in found.unrecorded if i not in noted
        ]
        ops += [Delete(pk, f"{LOST}{i}") for i in noted if i not in found.unrecorded]
        for start in range(0, len(ops), 100):
            records.transact(ops[start : start + 100])

    def forget_lost(self, brain_id: str) -> int:
        """Stop reporting the documents a repair found lost from the records (the operator has
        taken note: `cairn check --forget-lost`); how many were noted."""
        pk, noted = documents_pk(brain_id), self._noted_lost(brain_id)
        for start in range(0, len(noted), 100):
            self.documents.repo.records.transact(
                [Delete(pk, f"{LOST}{i}") for i in noted[start : start + 100]]
            )
        return len(noted)

    def _differs(self, doc: Document) -> bool:
        plan = self.documents.indexer.plan(doc, self.documents.text_of(doc), capped=False)  # no embedding
        return bool(plan.changed or plan.removed)

    def repair(self, found: BrainCheck) -> BrainCheck:
        """Rebuild what `found` says differs; the brain's searches are refused meanwhile. A document
        whose stored bytes are damaged is not rebuilt: they are reported, and its chunks kept."""
        self._note_lost(found)  # before their chunks go: what `cairn check` reports them by afterwards
        found = self._remade(found)
        if found.indexed_right:
            return found
        todo: dict[str, str | None] = dict.fromkeys([*found.stale, *found.ghosts])  # -> context
        progress = Progress(total=len(todo) + found.unsound_chunks, tenant=found.tenant)
        self.rebuilding.mark(found.brain_id, progress)
        failed: list[str] = []
        rebuilt = stopped = False
        try:
            with access.as_system():
                if found.keywords and isinstance(self.chunks, VerifiableChunks):
                    lost = self.chunks.rebuild_keywords(found.brain_id)  # its text lost too: indexed again
                    todo.update({doc_id: gone.context for doc_id, gone in lost.items()})
                    todo.update(dict.fromkeys(self._differing_now(found.brain_id, todo)))
                    rebuilt, progress.total = True, len(todo) + found.unsound_chunks
                if found.unsound_chunks and isinstance(self.chunks, VerifiableChunks):
                    removed = self.chunks.discard_unsound(found.brain_id)
                    todo.update({doc_id: gone.context for doc_id, gone in removed.items()})
                    progress.total = len(todo)
                for doc_id, context in todo.items():
                    if self._stop.is_set():  # the process stops: the rest is found stale at the next start
                        stopped = True
                        break
                    try:
                        self.documents.reconcile(found.brain_id, doc_id, context=context)
                    except CairnError as exc:  # its blob is gone, say: left for the next check
                        log.warning("could not index document %s again: %s", doc_id, exc.message)
                        failed.append(doc_id)
                    progress.done += 1
        finally:
            self.rebuilding.unmark(found.brain_id)
        repaired = progress.done - len(failed)
        log.warning(
            "%s the index of brain %s: %s%d documents indexed again, %d unsound vectors replaced%s",
            "stopped rebuilding" if stopped else "rebuilt",
            found.slug,
            "its keyword index made again, " if rebuilt else "",
            repaired,
            found.unsound_chunks,
            f" ({len(todo) - progress.done} left for the next start's check)" if stopped else "",
        )
        done = {"repaired": repaired, "failed": tuple(failed), "keywords_rebuilt": rebuilt}
        return BrainCheck(**{**found.__dict__, **done})

    def _differing_now(self, brain_id: str, known: dict[str, str | None]) -> list[str]:
        """The documents a comparison finds differing once the brain's chunks can be read again
        (the one before the keyword index was rebuilt could not compare them chunk by chunk)."""
        brain = self.documents.repo.brains.get(brain_id)
        if brain is None:
            return []
        try:
            again = self.compare(brain, stop=self._stop.is_set)
        except CheckStopped:  # the repair's loop then stops too: the rest is the next start's
            return []
        return [doc_id for doc_id in (*again.stale, *again.ghosts) if doc_id not in known]

    def _remade(self, found: BrainCheck) -> BrainCheck:
        """`found` once the stale derived vectors it names are embedded again (the documents'
        own chunks answer searches meanwhile, so none is refused)."""
        if not found.stale_vectors:
            return found
        brain = self.documents.repo.brains.get(found.brain_id)
        if brain is None:
            return found
        remade = 0
        with access.as_system():
            for derived in self._derived:
                try:
                    remade += derived.remake(brain, found.stale_vectors)
                except CairnError as exc:  # the embedder failed, say: left for the next check
                    log.warning(
                        "could not embed derived vectors of brain %s again: %s", found.slug, exc.message
                    )
        log.warning("brain %s: the derived vectors of %d documents embedded again", found.slug, remade)
        return BrainCheck(**{**found.__dict__, "remade": remade})

    def check(
        self, brain: Brain, *, repair: bool = True, deep: bool = False, stop: Stop | None = None
    ) -> BrainCheck:
        found = self.compare(brain, deep=deep, stop=stop)
        return self.repair(found) if repair else found

    def check_all(
        self, brains: Iterable[Brain], *, repair: bool = True, deep: bool = False
    ) -> list[BrainCheck]:
        return [self.check(brain, repair=repair, deep=deep) for brain in brains]

    def at_start(
        self,
        brains: Iterable[Brain],
        *,
        later_above: int = CHECK_LATER_ABOVE_CHUNKS,
        budget_s: float = CHECK_FIRST_BUDGET_S,
    ) -> tuple[list[BrainCheck], list[Brain]]:
        """What a start compares before serving: the brains of at most `later_above` chunks, for
        up to `budget_s`; the others (big, or left when time ran out) are returned to be compared
        in the background by `start`, their searches refused until then. Comparing costs about
        9 s per million chunks on the embedded store, which a server should not wait for to listen."""
        started = time.monotonic()
        found: list[BrainCheck] = []
        later: list[Brain] = []
        for brain in brains:
            with access.as_system():
                big = self.chunks.count(brain.id) > later_above
            if big or time.monotonic() - started > budget_s:
                later.append(brain)
            else:
                found.append(self.compare(brain, reread=False))
        return found, later

    # -- in the background --------------------------------------------------------------------

    def start(self, pending: Iterable[BrainCheck] = (), unchecked: Iterable[Brain] = ()) -> None:
        """Compare `unchecked` and repair what differs, repair `pending` (what a start-up
        comparison found), then whatever brain is requested (`request`: the index found its files
        damaged) until `stop`. Brains in both lists are refused at once, before the thread gets
        to them."""
        later = list(unchecked)
        for brain in later:
            self.rebuilding.mark(brain.id, Progress(0, checking=True, tenant=brain.owner_tenant))
        queued = [found for found in pending if not found.indexed_right]
        for found in queued:
            total = len(found.stale) + len(found.ghosts) + found.unsound_chunks
            self.rebuilding.mark(found.brain_id, Progress(total, tenant=found.tenant))
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(later, queued), name="cairn-index-repair", daemon=True
        )
        self._thread.start()

    def request(self, brain_id: str) -> None:
        """Repair this brain soon (its files were found damaged)."""
        with self._lock:
            self._wanted.add(brain_id)
            self._wake.notify()

    @property
    def stopping(self) -> bool:
        """Whether `stop` was asked: a repair under way ends after the document it is indexing."""
        return self._stop.is_set()

    def stop(self, within_s: float = 30.0) -> bool:
        """Ask the repair to stop, and wait up to `within_s` for it to end; whether it has (a
        repair cut short is finished by the next start's comparison)."""
        self._stop.set()
        with self._lock:
            self._wake.notify()
        thread = self._thread
        if thread is None:
            return True
        thread.join(timeout=within_s)
        if thread.is_alive():
            return False
        self._thread = None
        return True

    def _run(self, later: list[Brain], queued: list[BrainCheck]) -> None:
        for brain in later:
            if self._stop.is_set():
                return
            self._attempt(self._compared, brain)
        for found in queued:
            if self._stop.is_set():
                return
            self._attempt(self.repair, found)
        while not self._stop.is_set():
            with self._lock:
                while not self._wanted and not self._stop.is_set():
                    self._wake.wait()
                wanted, self._wanted = self._wanted, set()
            for brain_id in wanted:
                asked = self.documents.repo.brains.get(brain_id)
                if asked is not None and asked.deleted_at is None:
                    self._attempt(self._requested, asked)

    def _requested(self, brain: Brain) -> None:
        self.check(brain, stop=self._stop.is_set)

    def _compared(self, brain: Brain) -> None:
        """Compare a brain refused until now; serve it again if sound, else repair it (refused
        meanwhile). A comparison that fails serves it as it is, as a start without one would."""
        try:
            found = self.compare(brain, reread=False, stop=self._stop.is_set)
        except Exception:
            self.rebuilding.unmark(brain.id)
            raise
        if found.indexed_right:
            self.rebuilding.unmark(brain.id)
        else:
            log.warning("brain %s: its index differs from its records; rebuilding it", brain.slug)
            self.repair(found)

    @staticmethod
    def _attempt(work: Callable[[T], object], on: T) -> None:
        try:
            work(on)
        except CheckStopped:  # nothing recorded: the next start compares the brain again
            log.info("a brain's comparison ended early: the process is stopping")
        except Exception:  # the next start, request or `cairn check` tries again
            log.exception("repairing a brain's index failed")


def _never() -> bool:
    return False


def _written_at(item: Item) -> datetime:
    """When a document's stored record was written (its updated_at; the epoch when unreadable)."""
    try:
        moment = datetime.fromisoformat(str(item.data.get("updated_at")))
    except ValueError:
        return datetime.fromtimestamp(0, UTC)
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
