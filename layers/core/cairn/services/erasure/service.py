"""Erasing a subject from everything Cairn holds, and deleting a brain with all it holds (one
module: both share one run, resume, scrub and their locks, which a split would pass back and forth).

Both are asked by a principal, checked once, recorded (services/erasure/log.py), then run as the
system, brain by brain: a brain finished is recorded as done, so one stopped by a crash or kill -9
resumes where it stopped (`resume`, run when the server starts). Every step is idempotent.

An erasure, in each brain: the audit entries that name the subject or one of its documents are
redacted first (they are found by what is about to go), then its documents go with every record
drawn from them (documents.py), its ThoughtMCP rows and its sessions; the brain is scanned again
after each pass that removed something, so what a writer committed meanwhile goes too. Once every
brain is done the stores' own files are scrubbed (vector files compacted, full-text segments merged,
the record store vacuumed), so nothing of it can be read back from them either. Who may: the
system, or a principal that may change the brain and is its owner or holds brains:admin
(auth/access.py `may_erase`).

A deletion marks the brain deleted at once (every lookup then answers NotFound, and a write that
lands meanwhile is taken back: services/repositories.py), then purges every record family the brain
keeps, its blobs and its chunks, and last its own record and slug. Work that read the brain before
the mark and writes after the purge is purged by the deletion's later looks (`settle`, run by the
sweep: services/erasure/settling.py), the last once nothing that started before it can still write.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from cairn.auth import access
from cairn.auth.api_keys import ApiKeyService
from cairn.auth.principal import ADMIN, Principal
from cairn.domain.errors import (
    CairnError,
    Conflict,
    DamagedStore,
    Forbidden,
    InvalidInput,
    NotFound,
    Unavailable,
)
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document
from cairn.domain.subjects import SubjectKind
from cairn.ports.blobs import BlobStore
from cairn.ports.change_log import ChangeLog, ChangeLogError
from cairn.ports.chunks import ChunkIndex, ScrubbableChunks
from cairn.ports.clock import Clock
from cairn.ports.records import Item
from cairn.services.audit import AuditLog
from cairn.services.brains import BrainService
from cairn.services.documents.blob_keys import uploads_folder
from cairn.services.documents.locks import KeyedLocks
from cairn.services.erasure.documents import DocumentEraser
from cairn.services.erasure.erased import ErasedSubjects
from cairn.services.erasure.keyspace import BrainKeyspace
from cairn.services.erasure.log import ErasureLog, Progress, Receipt, empty_counts
from cairn.services.erasure.scrub_failures import SCRUB_TRIES, ScrubFailed, passes, scrub_failed
from cairn.services.erasure.settling import DeletionsSettling, Settling
from cairn.services.erasure.subjects import Subject, mentioning, sessions_of, unnamed
from cairn.services.jobs.job_log import JobLog
from cairn.services.repositories import DocumentRepository, document_of
from cairn.services.thoughtmcp.memories import ThoughtMemories

log = logging.getLogger(__name__)
BRAIN_KIND = "brain"

_SCRUBBING = threading.Lock()
DELETED = "[deleted]"  # a deleted brain's name: its record stays, as a mark, and says no more
PASSES = 5
"""Scans of a brain for the subject at most, each after a pass that found something."""


@dataclass
class ErasureService:
    brains: BrainService
    documents: DocumentRepository
    eraser: DocumentEraser
    thoughts: ThoughtMemories
    chunks: ChunkIndex
    keyspace: BrainKeyspace
    blobs: BlobStore
    audit: AuditLog
    erasures: ErasureLog
    settling: DeletionsSettling
    erased: ErasedSubjects
    keys: ApiKeyService
    job_log: JobLog
    clock: Clock
    changes: ChangeLog | None = None
    _running: KeyedLocks = field(default_factory=KeyedLocks, init=False, repr=False)

    # -- asking ------------------------------------------------------------------------------------

    def erase(self, kind: str, value: str, brains: list[str] | None = None) -> Receipt:
        """Erase the subject from the named brains (default: every brain the caller may erase in);
        the receipt of what went. NotFound when nothing of it is stored there (never stored, or
        erased already)."""
        subject = Subject.of(kind, value)
        targets = self._targets(brains)
        with access.as_system():
            sessions = self._sessions_by_brain(subject)
            if not any(self._holds(brain, subject, sessions.get(brain.id, [])) for brain in targets):
                raise NotFound(
                    f"nothing of {subject.kind} {value[:64]!r} is stored in the brains this caller may "
                    "erase in (never stored, or erased already)"
                )
        self.audit.erased.usable()  # its audit marks keyed, or nothing goes (no receipt to resume)
        receipt = self._receipt(subject.kind, subject.digest(self.erased.secret), targets)
        self.erased.mark(subject, [b.id for b in targets])  # before anything goes: work under way checks it
        self.erasures.start(receipt, subject.value)
        return self._finish(receipt.id)

    def take_back(self, brain: Brain, path: str) -> None:
        """Erase the document a job wrote at `path` after its subject's erasure had scanned the
        brain (services/erasure/erased.py), as the erasure removes one: with its contexts, links,
        mentions and image references, and then the stores' files scrubbed, as a deletion's look
        scrubs them (failing, it says so to the job, whose erasure was over)."""
        with access.as_system():
            doomed: list[Document] = []
            others: list[Document] = []
            for item in self.documents.raw(brain.id):
                doc = document_of(item)
                (doomed if doc.path == path else others).append(doc)
            if doomed:
                self.eraser.erase(brain, doomed, others)
                self._scrub_now([brain.id])

    def delete_brain(self, ref: str) -> Receipt:
        """Delete a brain and everything it holds (brains:admin on it: its owner, or an admin of its
        tenant for a shared one); the receipt of what went."""
        with access.needing(ADMIN):
            brain = access.check_govern(self.brains.get(ref))
        receipt = self._receipt(BRAIN_KIND, brain.id, [brain])
        self.erasures.start(receipt, brain.id)
        self._mark_deleted(brain)  # first: from now on every lookup of it answers NotFound
        return self._finish(receipt.id)

    def _mark_deleted(self, brain: Brain) -> None:
        for _ in range(16):
            try:
                self.brains.repo.update(
                    brain.id, lambda b: b.model_copy(update={"deleted_at": self.clock.now()})
                )
                return
            except NotFound:
                return
            except Conflict:  # a lost race on the record: read it again
                continue
        raise Conflict(f"brain {brain.slug} kept changing while being deleted; try again")

    def receipt(self, erasure_id: str) -> Receipt:
        """The erasure's receipt, for the tenant that asked for it (the machine owner's for the
        operator's); one still running (its process died: a server restarted, or a Lambda past its
        time) is carried on to its end first, so asking for it finishes it."""
        receipt = self.erasures.get(erasure_id).receipt
        if not self._shown(receipt):
            raise NotFound(f"erasure not found: {erasure_id[:64]}")  # one beyond reach is not told apart
        if receipt.status == "running":
            return self._finish(erasure_id)
        with access.as_system():  # counts another attempt wrote after it finished (log.py)
            return self.erasures.fold(erasure_id).receipt

    def recent(self, limit: int = 20) -> list[Receipt]:
        """The caller's latest receipts, newest first, as `receipt` would show each."""
        shown = [r for r in self.erasures.newest(max(limit * 5, 50)) if self._shown(r)][:limit]
        with access.as_system():  # counts another attempt wrote after it finished (log.py)
            late = self.erasures.with_progress()
            return [self.erasures.fold(r.id).receipt if r.id in late else r for r in shown]

    def _shown(self, receipt: Receipt) -> bool:
        """Whether the current access may read `receipt`: the system; whoever asked for it; a
        principal of the tenant that asked (the machine owner's, for the operator's) that may read
        every brain it covered, since a receipt names its brains and counts what went from them."""
        current = access.current()
        if current is None or (receipt.by is not None and receipt.by == access.started_by()):
            return True
        if (receipt.by or access.LOCAL_TENANT).partition("/")[0] != current.principal.tenant:
            return False
        wanted = list(dict.fromkeys(receipt.brains))
        found: list[Brain] = []
        for start in range(0, len(wanted), 100):
            found += self.brains.repo.get_many(wanted[start : start + 100])
        # one it may not read, or gone (a deletion's receipt: its asker's to read)
        return len(found) == len(wanted) and all(b.deleted_at is None and not access.hidden(b) for b in found)

    def resume(self) -> list[Receipt]:
        """Finish every erasure and deletion left running (by a process that died). One that cannot
        end yet (a damaged store file, a lock held) stays running, said in the log, and the others
        are carried on."""
        done = []
        with access.as_system():
            for erasure_id in list(self.erasures.left_over()):  # counts written after it finished
                try:
                    self.erasures.fold(erasure_id)
                except CairnError as exc:
                    log.warning(
                        "erasure %s: counts written after it finished stay apart: %s", erasure_id, exc
                    )
        for pending in list(self.erasures.running()):
            log.info("resuming erasure %s", pending.receipt.id)
            try:
                done.append(self._finish(pending.receipt.id))
            except CairnError as exc:
                log.warning("erasure %s stays running: %s", pending.receipt.id, exc.message)
        return done

    def _targets(self, refs: list[str] | None) -> list[Brain]:
        if refs is not None:
            if not refs:
                raise InvalidInput("brains, when given, names at least one brain")
            targets = [self.brains.get(ref) for ref in dict.fromkeys(refs)]
            refused = [b.slug for b in targets if not access.may_erase(b)]
            if refused:
                raise Forbidden(f"only a brain's owner or an admin may erase in it: {', '.join(refused)}")
            return targets
        visible = self.brains.list()
        targets = [b for b in visible if access.may_erase(b)]
        if not visible:
            raise NotFound("there is no brain this caller may see: nothing to erase")
        if not targets:
            raise Forbidden("this caller may erase in no brain: only a brain's owner or an admin may")
        return targets

    def _receipt(self, kind: str, digest: str, targets: list[Brain]) -> Receipt:
        return Receipt(
            id=new_id("era"),
            kind=kind,
            subject_digest=digest,
            brains=[b.id for b in targets],
            removed=empty_counts(),
            status="running",
            by=access.started_by(),
            started_at=self.clock.now(),
        )

    def _finish(self, erasure_id: str) -> Receipt:
        """Run it to the end as the system; the audit records the erasure once, when it ends,
        under the principal that ran its last part (the one that asked, unless it was resumed).
        One run at a time in this process (a resume at start and a request for the receipt may
        both come for it): the second waits and finds it done."""
        with self._running.hold([erasure_id]):
            pending = self.erasures.get(erasure_id)
            if pending.receipt.status == "completed":
                return pending.receipt
            current = access.current()
            principal = current.principal if current is not None else None
            with access.as_system():
                try:
                    return self._run(erasure_id, lambda done: self._audit(principal, done))
                except CairnError as exc:  # what it says leaves the subject out (subjects.unnamed)
                    if isinstance(unnamed(exc, pending.subject), DamagedStore | ScrubFailed):
                        self._stall(erasure_id, exc)
                    raise

    def _audit(self, principal: Principal | None, receipt: Receipt) -> None:
        """The erasure's entry, before it is marked finished: recorded once whichever process
        writes it (services/audit.py ONCE_PER_TARGET), so two finishing it at once, or a resume
        after a kill between entry and finish, add none."""
        detail: dict[str, str | int | bool] = {"kind": receipt.kind}
        detail.update({k: v for k, v in receipt.removed.items() if v})
        self.audit.record(principal, "erasure", target=receipt.id, detail=detail)

    def _stall(self, erasure_id: str, why: CairnError) -> None:
        """Record on the receipt why it stops here, for the operator: only a repair (or a fix) ends it."""
        try:
            self.erasures.stall(erasure_id, why.message)
        except CairnError as exc:  # the record store is the damaged one
            log.warning("erasure %s stopped (%s); recording why failed too: %s", erasure_id, why, exc)

    # -- running -----------------------------------------------------------------------------------

    def _run(self, erasure_id: str, audit: Callable[[Receipt], None]) -> Receipt:
        pending = self.erasures.get(erasure_id)
        receipt = pending.receipt
        if receipt.status == "completed":
            return receipt
        subject = None
        if receipt.kind != BRAIN_KIND and pending.subject is not None:
            subject = Subject(SubjectKind(receipt.kind), pending.subject)
        sessions = (
            self._sessions_by_brain(subject) if any(b not in pending.done for b in receipt.brains) else {}
        )
        for brain_id in receipt.brains:
            if brain_id in pending.done:
                continue
            brain = self.brains.repo.get(brain_id)
            progress = self.erasures.progress(erasure_id, brain_id)  # what a killed attempt removed here
            try:
                if receipt.kind == BRAIN_KIND:
                    if brain is not None and brain.deleted_at is None:  # cut off between start and mark
                        self._mark_deleted(brain)
                    self.settling.start(brain_id)  # after the mark: its looks cover what was under way
                    progress.counts.update(self._purge(brain_id, sessions.get(brain_id, [])))
                elif brain is not None and subject is not None:  # else the brain went meanwhile
                    self._erase_in(brain, subject, sessions.get(brain_id, []), progress)
            except BaseException:
                self._count_stopped(erasure_id, progress)
                raise
            self.erasures.advance(erasure_id, brain_id, progress)
        self.erasures.unname(erasure_id)
        self._scrub(receipt.brains, erasure_id)
        audit(self.erasures.fold(erasure_id).receipt)  # its counts as finishing leaves them
        return self.erasures.finish(erasure_id)

    def _count_stopped(self, erasure_id: str, progress: Progress) -> None:
        """What an attempt stopped by a failure removed, kept for its resume, which finds it gone."""
        try:
            progress.save()
        except CairnError as exc:  # the record store failing too: the attempt's own failure is raised
            log.warning("erasure %s: what it removed before it stopped is not counted: %s", erasure_id, exc)

    def _holds(self, brain: Brain, subject: Subject, sessions: list[list[Item]]) -> bool:
        if any(True for _ in sessions_of(sessions, subject)) or self._queued_in_scope(brain, subject):
            return True
        return any(subject.selects(item.data) for item in self.documents.raw(brain.id, subject.prefix))

    def _queued_in_scope(self, brain: Brain, subject: Subject) -> list[str]:
        """The ids of documents an ingest is queued (or failed) to write in the subject's agent
        scope: the ingest writes nothing once the scope is erased (erased.py), and its item status
        names a path of the scope."""
        scope = subject.scope
        if scope is None:
            return []
        return [p.document_id for p in self.eraser.status.pending(brain.id) if p.path.startswith(scope)]

    def _erase_in(self, brain: Brain, subject: Subject, held: list[list[Item]], progress: Progress) -> None:
        """The subject's records in the brain, scanned again after each pass that found some: a
        write that committed while a pass ran (a memory stored after its scan) goes in the next.
        What is written after the last pass, which found nothing, came after the erasure. What
        went is added to `progress` as it goes, and kept (log.py)."""
        counts = progress.counts
        named = {subject.value}  # and every document and session that goes
        sessions = list(sessions_of(held, subject))
        for _ in range(PASSES):
            before = sum(counts.values())
            self._erase_pass(brain, subject, sessions, progress, named)
            progress.save()  # the pass's records removed after its last document's commit
            if sum(counts.values()) == before:
                break
            sessions = []  # the sessions held were scanned once, before the erasure began
        for _session, whole, items in list(sessions_of(held, subject)):
            gone = self.keyspace.delete(items)
            counts["messages"] += gone - (1 if whole else 0)
            counts["sessions"] += 1 if whole else 0
        progress.save()
        counts["jobs"] += self.job_log.forget(brain.id, mentioning(subject.value, named - {subject.value}))
        for doc_id in self._queued_in_scope(brain, subject):
            self.eraser.status.completed(brain.id, doc_id)
            counts["records"] += 1

    def _erase_pass(
        self,
        brain: Brain,
        subject: Subject,
        sessions: list[tuple[str, bool, list[Item]]],
        progress: Progress,
        named: set[str],
    ) -> None:
        counts = progress.counts
        if subject.covers(SubjectKind.thoughtmcp_user):
            # Rows first: a ThoughtMCP write that read one before finds it gone and writes nothing,
            # and a memory stored after the scan below keeps its row with its document.
            counts["memory_rows"] += self.thoughts.forget_user(brain, subject.value)
        doomed: list[Document] = []
        others: list[Document] = []
        for item in self.documents.raw(brain.id):
            (doomed if subject.selects(item.data) else others).append(document_of(item))
        named.update(*((d.id, d.path) for d in doomed), (s for s, _, _ in sessions))
        redacted = self._redact(brain, subject, named)
        if redacted:
            counts["audit_entries"] += redacted
        progress.save()  # the memory rows and audit entries, before the documents' own commits
        if doomed:
            self.eraser.erase(brain, doomed, others, counts, progress=progress)

    def _sessions_by_brain(self, subject: Subject | None) -> dict[str, list[list[Item]]]:
        """Every session's items (its record and its messages), by brain, in one scan; none when
        the subject cannot have any (only an actor has sessions; a deletion takes them all)."""
        if subject is not None and not subject.covers(SubjectKind.session_actor):
            return {}
        by_session: dict[str, list[Item]] = {}
        for item in self.keyspace.sessions():
            by_session.setdefault(item.pk, []).append(item)
        by_brain: dict[str, list[list[Item]]] = {}
        for items in by_session.values():
            head = next((i for i in items if i.sk == "session"), None)
            if head is not None:
                by_brain.setdefault(str(head.data.get("session", {}).get("brain_id")), []).append(items)
        return by_brain

    def _redact(self, brain: Brain, subject: Subject, named: set[str]) -> int:
        """The audit entries of the brain that name the subject, or one of the documents and
        sessions `named` (every one that went so far)."""

        return self.audit.redact(
            tenants=[brain.owner_tenant], brain_ids=[brain.id], subjects=[subject.value], targets=named
        )

    def _purge(
        self, brain_id: str, sessions: list[list[Item]], held: list[Item] | None = None
    ) -> Counter[str]:
        """Everything a brain being deleted holds (its records `held`, if read), then the brain itself."""
        counts: Counter[str] = Counter()
        counts["jobs"] += self.job_log.forget(brain_id)  # first: the brain's job log is purged below
        counts["documents"] += self.keyspace.drop_pointers(brain_id)
        for items in sessions:
            counts["sessions"] += 1
            counts["messages"] += self.keyspace.delete(items) - 1
        counts["chunks"] += self.chunks.drop_brain(brain_id)
        counts["blobs"] += self.blobs.delete_prefix(f"{brain_id}/") + self.blobs.delete_prefix(
            uploads_folder(brain_id)
        )
        running = set(self.job_log.unfinished(brain_id))  # forgotten by a later look, once ended
        counts["records"] += self.keyspace.purge(brain_id, keep=running, held=held) - counts["documents"]
        counts["records"] += self.documents.old_bytes.forget_brain(brain_id)
        counts["records"] += self.keys.forget_brain(brain_id)
        brain = self.brains.repo.get(brain_id)
        if brain is not None:  # its record stays as the mark late writers meet, nameless; its slug is free
            self.keyspace.free_slug(brain)
            self._forget_name(brain)
        return counts

    def settle(self, stop: Callable[[], bool] = lambda: False) -> int:
        """Purge the brains of the deletions still settling again (services/erasure/settling.py),
        for what work that read them before their mark wrote after their purge; a look that starts
        past a deletion's settling time is its last. Returns what the looks removed."""
        standing = list(self.settling.standing())
        if not standing:
            return 0
        removed = 0
        now = self.clock.now()  # before the records are read: a last look reads what came after
        with access.as_system():
            sessions = self._sessions_by_brain(None)
            held = self.keyspace.held_by([deletion.brain_id for deletion in standing])
            for deletion in standing:
                if stop():
                    break
                try:
                    removed += self._look(deletion, sessions.get(deletion.brain_id, []), held, now)
                except CairnError as exc:  # this brain's look only: its record stays, the next sweep looks
                    log.warning("deleted brain %s: its look failed: %s", deletion.brain_id, exc)
        return removed

    def _look(
        self, deletion: Settling, sessions: list[list[Item]], held: dict[str, list[Item]], now: datetime
    ) -> int:
        """One look at a deletion settling, its records read (`held`) after `now`; what it removed."""
        brain_id = deletion.brain_id
        counts = self._purge(brain_id, sessions, held[brain_id])
        found = sum(counts.values())
        if found:
            log.warning("deleted brain %s: removed %d items written after its deletion", brain_id, found)
            self._scrub_now([brain_id])  # failing: the record stays, for the next look
        if now >= deletion.until and not self.job_log.unfinished(brain_id):
            self.settling.settled(brain_id)
        return found

    def _forget_name(self, brain: Brain) -> None:
        if brain.name == DELETED and not brain.metadata:
            return  # a later look at a deletion: forgotten already
        for _ in range(16):
            try:
                self.brains.repo.update(
                    brain.id,
                    lambda b: b.model_copy(update={"name": DELETED, "metadata": {}}),
                    keep_slug=False,
                )
                return
            except Conflict:
                continue

    def _scrub(self, brain_ids: list[str], erasure_id: str) -> None:
        """Leave nothing of what went in the stores' own files (the embedded store's: a dropped
        brain's text lingers in freed pages and the log until its scrub too). One scrub at a time
        in this process (two at once keep each other's checkpoint from finishing), tried again
        while readers hold the log; still held, the erasure stays running and says how to end it.
        A damaged store file is not tried again: only its repair (`cairn check`) helps. Nor is any
        other failure (a bug, a store refusing the request itself: the same call on the same files
        fails the same way): ScrubFailed, its reason kept on the receipt as damage is."""
        with _SCRUBBING:
            for attempt in range(SCRUB_TRIES):
                try:
                    return self._scrub_once(brain_ids)
                except DamagedStore:
                    raise
                except Exception as exc:
                    if not passes(exc):
                        raise scrub_failed(erasure_id, exc) from exc
                    held = exc
                    time.sleep(0.1 * (attempt + 1))
        raise Unavailable(
            f"everything it removes is gone, but the store's files could not be scrubbed yet "
            f"({held.message}); GET /v1/erasures/{erasure_id} finishes it"
        )

    def _scrub_now(self, brain_ids: list[str]) -> None:
        """One scrub, after any other of this process (`_scrub`), its failure the caller's."""
        with _SCRUBBING:
            self._scrub_once(brain_ids)

    def _scrub_once(self, brain_ids: list[str]) -> None:
        if isinstance(self.chunks, ScrubbableChunks):
            for brain_id in brain_ids:
                self.chunks.scrub(brain_id)
        self.keyspace.scrub()
        if self.changes is not None:  # the paths in change events other processes have not read
            try:
                self.changes.forget(brain_ids)
            except ChangeLogError as exc:
                raise CairnError(f"the change log could not be scrubbed ({exc}): try again") from None
