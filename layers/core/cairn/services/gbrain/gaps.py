"""Knowledge gaps: questions a brain could not answer well, kept without their text.

Only the SHA-256 of a query is stored (a gap says *that* something was asked, never what), so a
gap log can be shared and audited without leaking the questions agents ask. A context may be
given and is checked, then discarded. One gap per query hash and brain: logging the same question
again returns the gap already logged, atomically (a claim item written with the gap in one
conditional transaction). Ids are integers (services/gbrain/sequences.py).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime

from cairn.auth import access
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain
from cairn.ports.clock import Clock
from cairn.ports.records import Item, Put, RecordStore
from cairn.services.gbrain.sequences import Sequences

MAX_CONTEXT = 500
MAX_LIMIT = 1000
_ID_DIGITS = 20
_DIGEST = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class KnowledgeGap:
    id: int
    brain_id: str
    query_hash: str
    page_id: str | None
    confidence_score: float | None
    sensitivity: str
    detected_at: datetime
    resolved_at: datetime | None = None
    resolved_by: str | None = None


def query_hash(query: str) -> str:
    return hashlib.sha256(query.encode()).hexdigest()


def gaps_pk(brain_id: str) -> str:
    """The partition of a brain's knowledge gaps and their hash claims."""
    return f"gaps#{brain_id}"


def _gap_sk(gap_id: int) -> str:
    # Newest first in sort-key order: ids count up, so their complement counts down.
    return f"gap#{10**_ID_DIGITS - gap_id:0{_ID_DIGITS}d}"


def _hash_sk(digest: str) -> str:
    return f"hash#{digest}"


class GapService:
    def __init__(self, records: RecordStore, clock: Clock) -> None:
        self.records = records
        self.clock = clock
        self.sequences = Sequences(records)

    def log(
        self,
        brain: Brain,
        query: str,
        *,
        page_id: str | None = None,
        context: str | None = None,
        confidence: float | None = None,
        noticed: bool = False,
    ) -> tuple[KnowledgeGap, bool]:
        """The gap of this query (logged now, or the one logged before) and whether it is new.
        A gap someone reports (brain_gap) needs the right to change the brain; one a search
        `noticed` (nothing answered it well) is logged for whoever of the brain's tenant may
        search, as gbrain does (page_search.py: never for a reader of another tenant's public brain)."""
        if not noticed:
            access.check_change(brain, None, f"the knowledge gaps of {brain.slug}")
        if not isinstance(query, str) or js_blank(query):
            raise InvalidInput("query must not be empty")
        if context is not None and len(context) > MAX_CONTEXT:
            raise InvalidInput(f"context exceeds maximum length of {MAX_CONTEXT} characters")
        digest = query_hash(query)

        def gap(gap_id: int) -> KnowledgeGap:
            return KnowledgeGap(gap_id, brain.id, digest, page_id, confidence, "internal", self.clock.now())

        return self._log(brain, digest, gap)

    def restore(
        self,
        brain: Brain,
        digest: str,
        *,
        detected_at: datetime,
        page_id: str | None = None,
        confidence: float | None = None,
        sensitivity: str = "internal",
        resolved_at: datetime | None = None,
        resolved_by: str | None = None,
    ) -> tuple[KnowledgeGap, bool]:
        """Log a gap known only by its query's hash (an archive's), keeping its stamps; the gap
        already logged for that hash, unchanged, when there is one (and False)."""
        if not _DIGEST.fullmatch(digest):
            raise InvalidInput("query_hash must be a SHA-256 digest: 64 lowercase hex digits")
        by = resolved_by

        def gap(gap_id: int) -> KnowledgeGap:
            return KnowledgeGap(
                gap_id, brain.id, digest, page_id, confidence, sensitivity, detected_at, resolved_at, by
            )

        return self._log(brain, digest, gap)

    def _log(
        self, brain: Brain, digest: str, gap_numbered: Callable[[int], KnowledgeGap]
    ) -> tuple[KnowledgeGap, bool]:
        """The gap already logged for `digest` (and False), else `gap_numbered(next id)` logged."""
        for _ in range(3):
            claim = self.records.get(gaps_pk(brain.id), _hash_sk(digest))
            if claim is not None:
                return self._get(brain, int(claim.data["id"])), False
            gap = gap_numbered(self.sequences.next(gap_sequence(brain.id)))
            try:
                self.records.transact(
                    [
                        Put(
                            Item(gaps_pk(brain.id), _hash_sk(digest), data={"id": gap.id}), expected_version=0
                        ),
                        Put(Item(gaps_pk(brain.id), _gap_sk(gap.id), data=_data(gap)), expected_version=0),
                    ]
                )
                return gap, True
            except Conflict:
                continue  # someone logged it first: theirs is the gap
        raise Conflict("this gap kept being logged concurrently; retry")

    def every(self, brain: Brain) -> Iterator[KnowledgeGap]:
        """Every gap of the brain, oldest first, read a page at a time."""
        after: str | None = None
        while True:
            page = self.records.query(
                gaps_pk(brain.id), "gap#", after=after, limit=MAX_LIMIT, descending=True
            )
            for item in page.items:
                yield _gap(brain.id, item)
            if page.next_after is None:
                return
            after = page.next_after

    def list(self, brain: Brain, *, resolved: bool = False, limit: int = 20) -> list[KnowledgeGap]:
        """Newest first: unresolved gaps, or with `resolved` every gap (resolved or not)."""
        limit = max(1, min(limit, MAX_LIMIT))
        out: list[KnowledgeGap] = []
        after: str | None = None
        while len(out) < limit:
            page = self.records.query(gaps_pk(brain.id), "gap#", after=after, limit=max(limit, 100))
            for item in page.items:
                gap = _gap(brain.id, item)
                if resolved or gap.resolved_at is None:
                    out.append(gap)
            if page.next_after is None:
                break
            after = page.next_after
        return out[:limit]

    def resolve(self, brain: Brain, gap_id: int, *, by: str | None = None) -> KnowledgeGap:
        access.check_change(brain, None, f"the knowledge gaps of {brain.slug}")
        item = self.records.get(gaps_pk(brain.id), _gap_sk(gap_id))
        if item is None:
            raise NotFound(f"gap not found: id {gap_id}")
        gap = _gap(brain.id, item)
        done = KnowledgeGap(**{**gap.__dict__, "resolved_at": self.clock.now(), "resolved_by": by})
        self.records.put(Item(item.pk, item.sk, data=_data(done)), expected_version=item.version)
        return done

    def count(self, brain: Brain) -> int:
        """How many gaps the brain holds (its sequence would also count numbers taken by loggers
        that lost a race to log the same question)."""
        total, after = 0, None
        while True:
            page = self.records.query(gaps_pk(brain.id), "gap#", after=after, limit=1000)
            total += len(page.items)
            if page.next_after is None:
                return total
            after = page.next_after

    def _get(self, brain: Brain, gap_id: int) -> KnowledgeGap:
        item = self.records.get(gaps_pk(brain.id), _gap_sk(gap_id))
        if item is None:
            raise NotFound(f"gap not found: id {gap_id}")
        return _gap(brain.id, item)


def _data(gap: KnowledgeGap) -> dict[str, object]:
    return {
        "id": gap.id,
        "query_hash": gap.query_hash,
        "page_id": gap.page_id,
        "confidence_score": gap.confidence_score,
        "sensitivity": gap.sensitivity,
        "detected_at": gap.detected_at.isoformat(),
        "resolved_at": gap.resolved_at.isoformat() if gap.resolved_at else None,
        "resolved_by": gap.resolved_by,
    }


def _gap(brain_id: str, item: Item) -> KnowledgeGap:
    d = item.data
    resolved = d.get("resolved_at")
    return KnowledgeGap(
        id=int(d["id"]),
        brain_id=brain_id,
        query_hash=str(d["query_hash"]),
        page_id=d.get("page_id"),
        confidence_score=d.get("confidence_score"),
        sensitivity=str(d.get("sensitivity") or "internal"),
        detected_at=datetime.fromisoformat(d["detected_at"]),
        resolved_at=datetime.fromisoformat(resolved) if resolved else None,
        resolved_by=d.get("resolved_by"),
    )


def gap_sequence(brain_id: str) -> str:
    """The name of the sequence numbering a brain's gaps."""
    return f"gaps#{brain_id}"
