"""Consolidation: a background pass that tidies a brain's memory without losing any of it.

Four steps over the small notes under `memory/` (generated `_` files and large documents are not
notes), each checkpointed so a rerun after a crash skips what is done, each idempotent:

1. merge — near-duplicate notes (services/memory/near_duplicates.py) fold into one survivor (most
   confirmed, then most important, then oldest); a variant that adds words is kept in the
   survivor's body under "Also recorded as", provenance is unioned, and the others are
   soft-deleted with `deleted_reason: merged` and `replaced_by: <survivor id>`.
2. promote — facts confirmed by at least `promote_confirmations` distinct sessions or
   transcripts become stable: `metadata.stable`, sector `semantic`, importance at least 0.8.
3. prune — episodic notes older than `prune_after_days`, never accessed and below
   `prune_max_importance` move into the folder's monthly archive (`_archive-YYYY-MM.md`, source
   `compile`, still searchable) and are soft-deleted with `deleted_reason: pruned` and
   `replaced_by: <archive id>`.
4. summaries — every folder with at least `summary_min_notes` notes gets `_summary.md` (source
   `compile`): its notes grouped by category, most important first.

Nothing is lost: a soft-deleted note keeps its record and bytes, and its replacement carries its
text (tests/unit/consolidation prove every pre-consolidation note is reachable).
"""

from __future__ import annotations

import hashlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np

from cairn import faults
from cairn.auth import access
from cairn.domain.errors import NotFound, VersionConflict
from cairn.domain.models import Brain, Document, DocumentSource, Job, JobStatus
from cairn.ports.clock import Clock
from cairn.ports.embedder import Embedder
from cairn.ports.jobs import JobContext, JobRunner, JobSteps, StepHandler
from cairn.services.brains import BrainService
from cairn.services.documents.inputs import DocumentInput
from cairn.services.documents.service import DocumentService
from cairn.services.documents.unreadable import read_or_skip
from cairn.services.memory.consolidation_notes import (
    Note,
    archive_entry,
    archive_marker,
    merged_info,
    promoted_info,
    summary_markdown,
)
from cairn.services.memory.fact_memory import merged_body
from cairn.services.memory.near_duplicates import near_duplicate_groups
from cairn.services.search.access import AccessLog

CONSOLIDATE_JOB = "consolidate"
MEMORY_PREFIX = "memory/"
EMBED_BATCH = 64
MAX_CHAIN = 32
"""How many finished consolidations of a brain in one minute `queue` walks past (see there)."""


@dataclass(frozen=True)
class ConsolidationTuning:
    merge_min_cosine: float = 0.9
    merge_min_overlap: float = 0.7
    promote_confirmations: int = 2
    prune_after_days: float = 30.0
    prune_max_importance: float = 0.5
    summary_min_notes: int = 3
    max_note_bytes: int = 4096


Progress = Callable[[float, str], None]
STEPS = ("merge", "promote", "prune", "summaries")
_SPANS = {"merge": (0.0, 0.55), "promote": (0.55, 0.7), "prune": (0.7, 0.85), "summaries": (0.85, 1.0)}


class ConsolidationService:
    def __init__(
        self,
        brains: BrainService,
        documents: DocumentService,
        embedder: Embedder,
        jobs: JobRunner,
        clock: Clock,
        tuning: ConsolidationTuning | None = None,
        access: AccessLog | None = None,
        expire_events: Callable[[Brain], int] | None = None,
    ) -> None:
        self.brains = brains
        self.documents = documents
        self.embedder = embedder
        self.jobs = jobs
        self.clock = clock
        self.tuning = tuning or ConsolidationTuning()
        self.access = access
        self.expire_events = expire_events
        """Typed memories' expiry (services/memory/memories.py), run with the prune step."""

    def queue(self, brain: Brain, idempotency_key: str | None = None) -> Job:
        """The brain's consolidation job: the one queued with `idempotency_key`, or without one the
        caller's consolidation of the brain still queued or running, else a new one.

        Asking while one is pending returns it, so a caller cannot pile consolidations up; each
        starter has its own (a job runs with its starter's reach). The keys form a chain: the
        minute's first `consolidate:<brain>:<starter digest>:<minute>`, each next
        `consolidate:<brain>:after:<the finished job>`, so concurrent callers that find the same
        finished job start the same next one, between processes too (the runner's key is the
        check). The minute bounds the walk; past MAX_CHAIN runs in a minute, the latest answers."""
        by = access.job_principal()
        starter = hashlib.sha256(by.encode()).hexdigest()[:16] if by else "system"

        def start(key: str) -> Job:
            return self.jobs.start(CONSOLIDATE_JOB, {}, brain_id=brain.id, principal=by, idempotency_key=key)

        if idempotency_key is not None:
            return start(idempotency_key)
        job = start(f"consolidate:{brain.id}:{starter}:{self.clock.now():%Y%m%d%H%M}")
        for _ in range(MAX_CHAIN):
            if job.status in (JobStatus.queued, JobStatus.running):
                break
            job = start(f"consolidate:{brain.id}:after:{job.id}")
        return job

    def run(self, job: Job, ctx: JobContext) -> dict[str, Any]:
        """The whole consolidation: each step in order, skipping those already checkpointed."""
        result = {name: self.run_step(job, ctx, name) for name in STEPS}
        ctx.progress(1.0, "done")
        return result

    def steps(self) -> JobSteps:
        """The same work as `run`, one step per state (infra/statemachines/consolidate.asl.json);
        the last returns every step's result."""

        def one(name: str) -> StepHandler:
            def handle(job: Job, ctx: JobContext, item: dict[str, Any]) -> dict[str, Any]:
                outcome = self.run_step(job, ctx, name)
                if name != STEPS[-1]:
                    return {name: outcome}
                done = ctx.checkpoints()
                ctx.progress(1.0, "done")
                return {step: done[step] for step in STEPS}

            return handle

        return JobSteps({name: one(name) for name in STEPS}, finish=STEPS[-1])

    def run_step(self, job: Job, ctx: JobContext, name: str) -> Any:
        """One step, checkpointed; a step already done returns its recorded result."""
        done = ctx.checkpoints()
        if name in done:
            return done[name]
        steps = {
            "merge": self.merge,
            "promote": self.promote,
            "prune": self.prune,
            "summaries": self.summaries,
        }
        step = steps[name]
        lo, hi = _SPANS[name]

        def report(fraction: float, message: str) -> None:
            ctx.progress(lo + (hi - lo) * fraction, message)

        report(0.0, f"{name}: starting")
        result = step(self.brains.get(job.brain_id or ""), report)
        ctx.checkpoint(name, result)
        return result

    # -- steps -------------------------------------------------------------------------------

    def notes(self, brain: Brain) -> list[Note]:
        out = []
        for doc in self.documents.documents(brain, MEMORY_PREFIX):
            if posixpath.basename(doc.path).startswith("_") or doc.byte_size > self.tuning.max_note_bytes:
                continue
            data = read_or_skip(doc, self.documents.content)  # a damaged note: not consolidated
            if data is not None:
                out.append(Note(doc, data.decode("utf-8", "replace")))
        return out

    def merge(self, brain: Brain, report: Progress) -> dict[str, Any]:
        notes = [n for n in self.notes(brain) if not n.is_episode]
        texts = [n.text[:1000] for n in notes]
        rows = []
        for start in range(0, len(texts), EMBED_BATCH):
            rows.append(self.embedder.embed(texts[start : start + EMBED_BATCH]))
            report(0.8 * min(1.0, (start + EMBED_BATCH) / max(1, len(texts))), f"merge: embedded {start}")
        if not rows:
            return {"groups": 0, "merged": 0}
        vectors = np.vstack(rows)
        # Only one actor's notes merge: two whose names share a folder (user/42, user:42) keep theirs.
        folders = [f"{posixpath.dirname(n.doc.path)}\x00{n.doc.metadata.get('actor_id', '')}" for n in notes]
        t = self.tuning
        groups = near_duplicate_groups(
            texts, folders, vectors, min_cosine=t.merge_min_cosine, min_overlap=t.merge_min_overlap
        )
        merged = 0
        for g, group in enumerate(groups):
            members = [notes[i] for i in group]
            survivor = max(members, key=Note.rank)
            others = [m for m in members if m is not survivor]
            folded = self._fold_into(brain, survivor, others)  # a survivor deleted meanwhile folds nothing
            if folded is not None:
                faults.reached("consolidation.merged")
                for other in others:
                    if self._carries(brain, folded) and self._retire(brain, other.doc, "merged", folded.id):
                        merged += 1
            report(0.8 + 0.2 * (g + 1) / len(groups), f"merge: {g + 1} of {len(groups)} groups")
        return {"groups": len(groups), "merged": merged}

    def promote(self, brain: Brain, report: Progress) -> dict[str, Any]:
        stable = [
            n
            for n in self.notes(brain)
            if n.is_fact and n.confirmations >= self.tuning.promote_confirmations and not n.is_stable
        ]
        now = self.clock.now()
        for i, note in enumerate(stable):
            self.documents.modify(
                brain,
                note.doc.path,
                lambda doc, body: None if doc is None else (body or b"", promoted_info(doc, now)),
                reason="consolidate",
            )
            report((i + 1) / len(stable), f"promote: {i + 1} of {len(stable)}")
        return {"promoted": len(stable)}

    def prune(self, brain: Brain, report: Progress) -> dict[str, Any]:
        cutoff = self.clock.now() - timedelta(days=self.tuning.prune_after_days)
        if self.access is not None:
            self.access.flush()
        stale = [
            n
            for n in self.notes(brain)
            if n.is_episode
            and n.doc.created_at < cutoff
            and n.importance < self.tuning.prune_max_importance
            and not self._accessed_since(brain, n, cutoff)
        ]
        by_archive: dict[str, list[Note]] = {}
        for note in stale:
            folder = posixpath.dirname(note.doc.path)
            by_archive.setdefault(f"{folder}/_archive-{note.doc.created_at:%Y-%m}.md", []).append(note)
        pruned = done = 0
        for archive_path, notes in sorted(by_archive.items()):
            archive = self._archive(brain, archive_path, notes)  # one write per archive, then retire
            for note in notes:
                if self._retire(brain, note.doc, "pruned", archive.id):
                    pruned += 1
                done += 1
                report(done / len(stale), f"prune: {done} of {len(stale)}")
        expired = self.expire_events(brain) if self.expire_events is not None else 0
        return {"pruned": pruned, "events_expired": expired}

    def summaries(self, brain: Brain, report: Progress) -> dict[str, Any]:
        by_folder: dict[str, list[Note]] = {}
        for note in self.notes(brain):
            by_folder.setdefault(posixpath.dirname(note.doc.path), []).append(note)
        folders = {f: ns for f, ns in by_folder.items() if len(ns) >= self.tuning.summary_min_notes}
        written = 0
        for i, (folder, notes) in enumerate(sorted(folders.items())):
            body = summary_markdown(folder, notes).encode("utf-8")
            info = DocumentInput(
                title=f"Summary of {folder}",
                source=DocumentSource.compile,
                content_type="text/markdown",
                metadata={"kind": "summary", "notes": len(notes)},
            )
            if self.documents.write(brain, f"{folder}/_summary.md", body, info, reason="consolidate").changed:
                written += 1
            report((i + 1) / len(folders), f"summaries: {i + 1} of {len(folders)}")
        return {"folders": len(folders), "written": written}

    # -- helpers -----------------------------------------------------------------------------

    def _fold_into(self, brain: Brain, survivor: Note, others: list[Note]) -> Document | None:
        """The survivor at the version that carries the others' texts; None when it is gone."""

        def change(doc: Document | None, body: bytes | None) -> tuple[bytes, DocumentInput] | None:
            if doc is None:
                return None
            text = (body or b"").decode("utf-8", "replace")
            return merged_body(text, [o.text for o in others]).encode("utf-8"), merged_info(doc, others)

        outcome = self.documents.modify(brain, survivor.doc.path, change, reason="consolidate")
        return outcome.document if outcome is not None else None

    def _carries(self, brain: Brain, folded: Document) -> bool:
        """Whether the survivor is still live at the version the fold wrote, so what it carries is
        there to replace what is retired. A delete landing between this read and the retirement's
        commit is not seen: `DocumentService.retire` takes no condition on another record."""
        try:
            live = self.documents.get(brain, folded.path)
        except NotFound:
            return False
        return live.id == folded.id and live.version == folded.version

    def _archive(self, brain: Brain, path: str, notes: list[Note]) -> Document:
        """Append every note not yet in the archive (a rerun finds them by their markers)."""

        def change(doc: Document | None, body: bytes | None) -> tuple[bytes, DocumentInput] | None:
            text = (body or b"").decode("utf-8", "replace")
            entries = [archive_entry(n) for n in notes if archive_marker(n.doc) not in text]
            if not entries:
                return None
            head = text or f"# Archive of {posixpath.dirname(path)}\n"
            info = DocumentInput(
                title=f"Archive of {path}",
                source=DocumentSource.compile,
                content_type="text/markdown",
                metadata={"kind": "archive"},
            )
            return (head.rstrip("\n") + "\n\n" + "\n".join(entries)).encode("utf-8"), info

        outcome = self.documents.modify(brain, path, change, reason="consolidate")
        return outcome.document if outcome else self.documents.get(brain, path)

    def _accessed_since(self, brain: Brain, note: Note, cutoff: datetime) -> bool:
        if note.accessed_since(cutoff):
            return True
        last = self.access.get(brain.id, note.doc.id).last if self.access is not None else None
        return last is not None and last >= cutoff

    def _retire(self, brain: Brain, doc: Document, why: str, replaced_by: str) -> bool:
        """Retire the version whose text was folded or archived, and only that one."""
        try:
            self.documents.retire(
                brain,
                doc.path,
                reason="consolidate",
                why=why,
                replaced_by=replaced_by,
                expected_version=doc.version,
            )
        except NotFound:
            return False  # already retired by an earlier attempt
        except VersionConflict:
            return False  # written or deleted since it was read: the next run folds what it is now
        return True
