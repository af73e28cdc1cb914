"""Sector memories (the ThoughtMCP surface): a user's memories with strength, salience, decay,
waypoint links, composite recall and boolean full-text search.

A memory is a document at `thoughts/<user key>/<memory id>.md` whose memory facet names its user,
session, primary sector, keywords, category, context, importance and salience; keywords and tags
are its chunks' tags (`kw:…`, `tag:…`), so every filter of recall and search runs inside the
index legs. Its bytes carry its id in a front-matter line, so no two memories share a blob and a
hard forget can remove every byte of it. Beside it, the memory's row: one record item per memory
in its user's partition, holding what changes on every read (strength, last access, access count,
reinforcement) and its link statistics, so a read does not rewrite the document:

| item          | pk                               | sk            |
|---------------|----------------------------------|---------------|
| memory row    | `thoughts#<brain>#<user key>`    | `<memory id>` |
| waypoint link | the keyed links of services/links/repository.py, kind = link type, both ways |

The user key is a digest of the userId, so a userId never becomes a path or key unescaped, and a
user's partition holds only their memories: a query of one user's memories cannot reach
another's. Scores, decay and link weights: services/thoughtmcp/thought_scoring.py.

The parts: models.py (inputs, rows, keys), checks.py (argument rules), store.py (rows and
documents), waypoints.py (links), recall.py (recall and search), forgetting.py (a hard forget),
brain.py (which brain); this module composes them and holds the writes.
"""

from __future__ import annotations

from typing import Any

from cairn.domain.errors import Conflict, VersionConflict
from cairn.domain.ids import new_id
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain, Document
from cairn.services.documents.inputs import expect_version
from cairn.services.thoughtmcp import thought_scoring as ts
from cairn.services.thoughtmcp.checks import (
    REMEMBER_EMPTY,
    auto_keywords,
    check_content,
    check_metadata,
    check_new_user_id,
    check_sector,
    check_user,
)
from cairn.services.thoughtmcp.forgetting import MOVED, MOVED_SUGGESTION, WRITE_TRIES, ThoughtForgetting
from cairn.services.thoughtmcp.models import (
    ROW_CONTENT_CHARS,
    Metadata,
    NewMemory,
    Row,
    ThoughtError,
    bytes_content,
    memory_path,
    stored_bytes,
)
from cairn.services.thoughtmcp.sectors import EMBEDDINGS
from cairn.services.thoughtmcp.waypoints import WAYPOINTS

MAX_SESSION_ID = 256
"""As a userId's bound (checks.py)."""


class ThoughtMemories(ThoughtForgetting):
    """A user's sector memories: remember, recall, search, update, forget (module docstring)."""

    def remember(self, brain: Brain, m: NewMemory) -> dict[str, Any]:
        check_new_user_id(m.user_id)
        check_user(m.user_id, brain)
        check_content(m.content, empty_suggestion=REMEMBER_EMPTY)
        check_sector(m.sector)
        if js_blank(m.session_id):
            raise ThoughtError("sessionId is required", "Provide the session the memory belongs to")
        if len(m.session_id) > MAX_SESSION_ID:  # kept in every record of the memory, as userId is
            raise ThoughtError(
                f"sessionId must be at most {MAX_SESSION_ID} characters", "Use a shorter sessionId"
            )
        check_metadata(m.metadata)
        now = self.clock.now()
        keywords = list(m.metadata.keywords) if m.metadata.keywords is not None else auto_keywords(m.content)
        memory_id = new_id("mem")
        row = Row(
            id=memory_id,
            user_id=m.user_id,
            session_id=m.session_id,
            sector=m.sector,
            created_at=now,
            last_access=now,
            reinforced_at=None,
            access_count=0,
            strength=1.0,
            salience=ts.initial_salience(m.content, m.metadata.importance),
            importance=m.metadata.importance,
            category=m.metadata.category,
            context=m.metadata.context,
            keywords=keywords,
            tags=list(m.metadata.tags or ()),
            link_sum=0.0,
            link_count=0,
            content=m.content if len(m.content) <= ROW_CONTENT_CHARS else None,
            path=memory_path(m.user_id, memory_id),
        )
        # the links come after the memory's commit, which marks them pending (waypoints.py): a
        # store refusing them leaves the memory stored, answered as such, and the mark to the sweep
        mark = self.pending.mark(brain.id, row.id, WAYPOINTS)
        self._write(brain, row, m.content, held=None, embed=True, also=[self.pending.put_op(mark)])
        links, _ = self._link(brain, row, mark=mark)
        return {
            "memoryId": row.id,
            "embeddingsGenerated": EMBEDDINGS,
            "linksCreated": links,
            "salience": round(row.salience, 6),
            "strength": row.strength,
        }

    def update(
        self,
        brain: Brain,
        memory_id: str,
        user_id: str,
        *,
        content: str | None = None,
        strength: float | None = None,
        salience: float | None = None,
        metadata: Metadata | None = None,
        expected_version: int | None = None,
    ) -> dict[str, Any]:
        """Change a memory in place; with `expected_version` (the web UI's edit), only the
        version of its document the caller read (VersionConflict otherwise)."""
        check_user(user_id, brain)
        if content is None and strength is None and salience is None and metadata is None:
            raise ThoughtError("No fields to update", "Provide content, strength, salience or metadata")
        if content is not None:
            check_content(content)
        for name, value in (("strength", strength), ("salience", salience)):
            if value is not None and not 0 <= value <= 1:
                raise ThoughtError(f"{name.capitalize()} must be between 0 and 1", f"Give {name} in 0..1")
        if metadata is not None:
            check_metadata(metadata)
        for _ in range(WRITE_TRIES):
            try:
                return self._update_once(
                    brain, memory_id, user_id, content, strength, salience, metadata, expected_version
                )
            except Conflict as exc:
                if expected_version is not None and isinstance(exc, VersionConflict):
                    raise  # changed since the caller read it: applying this on top would lose that
                if self._moved(brain, memory_id):
                    raise ThoughtError(MOVED, MOVED_SUGGESTION) from None
                continue  # another update of it landed first: apply this one on top of it
        raise ThoughtError(
            "Memory kept changing while it was being updated", "Try the update again", code="CONFLICT"
        )

    def _update_once(
        self,
        brain: Brain,
        memory_id: str,
        user_id: str,
        content: str | None,
        strength: float | None,
        salience: float | None,
        metadata: Metadata | None,
        expected_version: int | None = None,
    ) -> dict[str, Any]:
        row = self._owned(brain, memory_id, user_id)
        if expected_version is not None:
            expect_version(row.path, self._live(brain, row), expected_version)
        before = stored_bytes(row.id, self._content(brain, row))
        text = content if content is not None else bytes_content(before)
        if strength is not None:
            row.strength = strength
        if salience is not None:
            row.salience = salience
        if metadata is not None:
            row.keywords = list(metadata.keywords) if metadata.keywords is not None else row.keywords
            row.tags = list(metadata.tags) if metadata.tags is not None else row.tags
            row.category = metadata.category if metadata.category is not None else row.category
            row.context = metadata.context if metadata.context is not None else row.context
            row.importance = metadata.importance if metadata.importance is not None else row.importance
        changed = content is not None and content != bytes_content(before)
        kept = metadata is not None and metadata.keywords is not None
        if changed and not kept and row.keywords == auto_keywords(bytes_content(before)):
            # keywords extracted from the old text go with it; the caller's own stay
            row.keywords = auto_keywords(text)
        if content is not None:
            row.content = content if len(content) <= ROW_CONTENT_CHARS else None
        held = self._live(brain, row)
        mark = self.pending.mark(brain.id, row.id, WAYPOINTS, relink=True)
        also = [self.pending.put_op(mark)] if changed else []
        written = self._write(brain, row, text, held=held, embed=changed or metadata is not None, also=also)
        connections = 0
        if changed:  # the replaced text's bytes go after the grace a reader may need (old_bytes.py)
            connections, whole = self._relink(brain, row.user_id, row.id, mark)
            if whole:  # another update's commit meanwhile may have relinked it before this link
                self._caught_up(brain, written)
        return {
            "memoryId": row.id,
            "embeddingsRegenerated": changed,
            "connectionsUpdated": connections,
            "strength": round(row.strength, 6),
            "salience": round(row.salience, 6),
        }

    def forget(
        self, brain: Brain, memory_id: str, user_id: str | None, *, soft: bool = False
    ) -> dict[str, Any]:
        """Soft: strength 0, kept (hidden from recall and search unless minStrength is 0). Hard:
        the document (wherever it is now), its chunks and blob, its row, then its links both ways
        (forgetting.py)."""
        if user_id is not None:
            check_user(user_id, brain)
        if not soft:
            self._forget_hard(brain, memory_id, user_id)
            return {
                "memoryId": memory_id,
                "deletionType": "hard",
                "message": "Memory and all related data removed",
            }
        row = self._owned(brain, memory_id, user_id, combined=True)
        for _ in range(WRITE_TRIES):
            try:
                row.strength = 0.0
                text = self._content(brain, row)
                self._write(brain, row, text, held=self._live(brain, row), forgotten=self.clock.now())
                break
            except Conflict:  # changed meanwhile: forget what it is now (gone: "not found")
                if self._moved(brain, memory_id):
                    raise ThoughtError(MOVED, MOVED_SUGGESTION) from None
                row = self._owned(brain, memory_id, user_id, combined=True)
        else:
            raise ThoughtError(
                "Memory kept changing while it was being forgotten", "Try again", code="CONFLICT"
            )
        return {
            "memoryId": row.id,
            "deletionType": "soft",
            "message": "Memory strength set to 0, data preserved",
        }

    def adopt(self, brain: Brain, doc: Document) -> bool:
        """Give a restored memory document (an archive's: services/archive/) its row, from its
        facet and tags, and link it again; False when it has its row already."""
        memory = doc.memory
        if memory is None or memory.user_id is None or doc.deleted_at is not None:
            return False
        if self._rows(brain.id, memory.user_id, [doc.id]):
            return False
        text = bytes_content(self.documents.content(doc))
        tags = [t.removeprefix("tag:") for t in doc.tags if t.startswith("tag:")]
        row = Row(
            id=doc.id,
            user_id=memory.user_id,
            session_id=memory.session_id or "",
            sector=memory.sector or "semantic",
            created_at=doc.created_at,
            last_access=memory.last_access or doc.created_at,
            reinforced_at=None,
            access_count=memory.access_count,
            strength=0.0
            if memory.expired_at is not None
            else (memory.strength if memory.strength is not None else 1.0),
            salience=memory.salience
            if memory.salience is not None
            else ts.initial_salience(text, memory.importance),
            importance=memory.importance,
            category=memory.category,
            context=memory.context,
            keywords=list(memory.keywords or []),
            tags=tags,
            link_sum=0.0,
            link_count=0,
            content=text if len(text) <= ROW_CONTENT_CHARS else None,
            path=doc.path,
        )
        vectors = self.sectors.embed(text, row)
        mark = self.pending.mark(brain.id, row.id, WAYPOINTS)
        try:
            self.rows.commit(
                [
                    self.rows.put_op(brain.id, row, 0),
                    self.sectors.put_op(brain.id, row.user_id, row.id, vectors),
                    self.pending.put_op(mark),
                ]
            )
        except Conflict:
            return False
        self._touched(brain.id, row.user_id, row.id)
        self._link(brain, row, mark=mark)
        return True

    def forget_user(self, brain: Brain, user_id: str) -> int:
        """Remove every row of the user (an erasure: their memories' documents go on their own);
        returns how many."""
        gone = self.rows.delete_user(brain.id, user_id)
        self.sectors.delete_user(brain.id, user_id)
        if self._kept is not None:
            with self._kept_lock:
                self._kept.pop((brain.id, user_id), None)
        return gone
