"""What consolidation reads from a note and the texts and records it writes (pure functions)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from cairn.domain.models import Document, MemoryFacet
from cairn.services.documents.inputs import DocumentInput, keep_info
from cairn.services.memory.fact_memory import MAX_ORIGINS, MAX_SOURCE_IDS, csv_values

SUMMARY_LINES_PER_CATEGORY = 40
SUMMARY_LINE_CHARS = 200
MAX_MERGED_FROM = 64


@dataclass(frozen=True)
class Note:
    doc: Document
    text: str

    @property
    def kind(self) -> str:
        return str(self.doc.metadata.get("kind") or "")

    @property
    def is_fact(self) -> bool:
        return self.kind == "fact"

    @property
    def is_episode(self) -> bool:
        memory = self.doc.memory
        return self.kind == "episode" or (memory is not None and memory.sector == "episodic")

    @property
    def is_stable(self) -> bool:
        return self.doc.metadata.get("stable") is True

    @property
    def confirmations(self) -> int:
        value = self.doc.metadata.get("confirmations")
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 1

    @property
    def importance(self) -> float:
        memory = self.doc.memory
        return memory.importance if memory and memory.importance is not None else 0.5

    @property
    def category(self) -> str:
        value = self.doc.metadata.get("category") or (self.doc.memory.category if self.doc.memory else None)
        return str(value or "notes")

    def accessed_since(self, cutoff: datetime) -> bool:
        memory = self.doc.memory
        if memory is None:
            return False
        return memory.last_access is not None and memory.last_access >= cutoff

    def rank(self) -> tuple[int, float, float]:
        """Survivor order in a merge: most confirmed, most important, then oldest."""
        return (self.confirmations, self.importance, -self.doc.created_at.timestamp())


def merged_info(doc: Document, others: Sequence[Note]) -> DocumentInput:
    meta = dict(doc.metadata)
    origins = csv_values(meta.get("origins"))
    sources = csv_values(meta.get("source_ids"))
    merged_from = csv_values(meta.get("merged_from"))
    for other in others:
        origins += csv_values(other.doc.metadata.get("origins"))
        sources += csv_values(other.doc.metadata.get("source_ids"))
        merged_from.append(other.doc.id)
    if origins:
        unique = list(dict.fromkeys(origins))[-MAX_ORIGINS:]
        meta.update(origins=",".join(unique), confirmations=len(unique))
    if sources:
        meta["source_ids"] = ",".join(list(dict.fromkeys(sources))[-MAX_SOURCE_IDS:])
    meta["merged_from"] = ",".join(list(dict.fromkeys(merged_from))[-MAX_MERGED_FROM:])
    return keep_info(doc, metadata=meta)


def promoted_info(doc: Document, now: datetime) -> DocumentInput:
    meta = dict(doc.metadata)
    meta.update(stable=True, promoted_at=now.isoformat())
    memory = doc.memory or MemoryFacet()
    importance = max(memory.importance or 0.0, 0.8)
    memory = memory.model_copy(update={"sector": "semantic", "importance": importance})
    return keep_info(doc, metadata=meta, memory=memory)


def archive_marker(doc: Document) -> str:
    return f"<!-- archived {doc.id} -->"


def archive_entry(note: Note) -> str:
    doc = note.doc
    return (
        f"## {doc.title}\n\n{archive_marker(doc)}\n"
        f"From {doc.path} ({doc.id}), written {doc.created_at:%Y-%m-%d}.\n\n{note.text.strip()}\n"
    )


def summary_markdown(folder: str, notes: Sequence[Note]) -> str:
    """A folder's notes grouped by category, most confirmed and important first (deterministic)."""
    by_category: dict[str, list[Note]] = {}
    for note in notes:
        by_category.setdefault(note.category, []).append(note)
    lines = [f"# Summary of {folder}", "", f"{len(notes)} notes in {len(by_category)} categories."]
    for category in sorted(by_category, key=lambda c: (-len(by_category[c]), c)):
        group = sorted(by_category[category], key=lambda n: (-n.confirmations, -n.importance, n.doc.path))
        lines += ["", f"## {category} ({len(group)})", ""]
        for note in group[:SUMMARY_LINES_PER_CATEGORY]:
            first = " ".join(note.text.split())
            first = first if len(first) <= SUMMARY_LINE_CHARS else first[: SUMMARY_LINE_CHARS - 1] + "…"
            lines.append(f"- {first} ({note.doc.path})")
        if len(group) > SUMMARY_LINES_PER_CATEGORY:
            lines.append(f"- … and {len(group) - SUMMARY_LINES_PER_CATEGORY} more")
    return "\n".join(lines) + "\n"
