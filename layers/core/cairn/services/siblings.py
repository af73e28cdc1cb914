"""Sequential context: a document written into a folder right after another gets an excerpt of
that sibling as index-only context.

Agents store conversations and logs one turn or entry at a time, and an answer rarely repeats
the words of the question it answers ("Thanks! It's been great for my mental health" after
"How is the running going?"). Indexing each new document with a short excerpt of the one
written just before it in the same folder lets both retrieval legs find the answer from the
question's words. Only siblings written within `window_s` count (one burst of writing: a
conversation, not unrelated notes days apart); the excerpt never appears in returned content.
Measured effect on LoCoMo dev in docs/PERFORMANCE.md.
"""

from __future__ import annotations

import posixpath
from datetime import datetime

from cairn.domain.models import Document
from cairn.ports.records import Item, Put, RecordStore


class SiblingContext:
    def __init__(self, records: RecordStore, *, window_s: float, excerpt_chars: int = 300) -> None:
        self.records = records
        self.window_s = window_s
        self.excerpt_chars = excerpt_chars

    def context_for(self, brain_id: str, path: str, now: datetime) -> str | None:
        if self.window_s <= 0:
            return None
        item = self.records.get(*_key(brain_id, path))
        if item is None or item.data["path"] == path:
            return None
        written = datetime.fromisoformat(item.data["at"])
        if (now - written).total_seconds() > self.window_s:
            return None
        return str(item.data["excerpt"])

    def remember_op(self, doc: Document, text: str, now: datetime) -> Put:
        """The record op that makes `doc` the folder's latest sibling (committed with the doc)."""
        excerpt = " ".join(text.split())[: self.excerpt_chars]
        data = {"path": doc.path, "excerpt": excerpt, "at": now.isoformat()}
        return Put(Item(*_key(doc.brain_id, doc.path), data=data))


def _key(brain_id: str, path: str) -> tuple[str, str]:
    return f"brain#{brain_id}", f"latest#{posixpath.dirname(path)}/"
