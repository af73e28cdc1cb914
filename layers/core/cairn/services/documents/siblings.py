"""Sequential context: a document written into a folder among a burst of siblings is indexed
(BM25 only) with an excerpt of the sibling that precedes it.

Agents store conversations and logs one turn or entry at a time, and an answer rarely repeats
the words of the question it answers ("Thanks! It's been great for my mental health" after
"How is the running going?"). Indexing each such document with a short excerpt of its
predecessor lets the question's words find the answer.

The predecessor is the sibling just before it in natural path order (`turn-9` < `turn-10`)
among the folder's recently written documents, so concurrent writers arriving out of order
still link each document to the right one: when a document lands between a sibling and that
sibling's current predecessor, the sibling's context is repointed (a fix-up). Only siblings
written within `window_s` count: a burst of writing, not unrelated notes days apart. The
excerpt never appears in returned content. Measured on LoCoMo dev in docs/PERFORMANCE.md.

A document that moves leaves its folder's ring (writes.py `rename`, batch.py), and the siblings
the ring still names lose its excerpt; those the ring forgot keep it, in a folder the document is
no longer in. So the move's commit also records the paths the document has left, one record a
document, which its erasure reads to find those siblings (services/erasure/documents.py) and its
erase's commit removes:

| item              | pk                 | sk                       | data                                 |
|-------------------|--------------------|--------------------------|--------------------------------------|
| the paths it left | `brain#<brain_id>` | `siblings-left#<doc id>` | `{"paths": [...], "folders": [...]}` |

`paths` are the last 64 distinct paths it left, each its place in a folder (the sibling after it in
natural order took its excerpt). An older path leaves `paths` for `folders`, the folders it was in,
whose places there are no longer known: its erasure clears the context of every document in them
(the excerpts others took there are lost with it, never the erased one's). Past 128 such folders
the record says `everywhere` instead, and the erasure clears every document's context in the
brain. So a record stays under 200 KB however often its document moves.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cairn.domain.errors import Conflict
from cairn.domain.models import Document
from cairn.ports.records import Delete, Item, Put, RecordStore
from cairn.services.repositories import all_items, documents_pk

_WORDS = re.compile(r"([^\W_]+)")  # runs of letters and digits; the rest separates them
_NUMBERED = re.compile(r"([^\W\d_]*)(\d+)")  # `10`, `turn10`, `D10`: a word with a count


LEFT_KEPT = 64
"""The paths a document's record of those it left keeps, the last ones (a record stays small)."""
FOLDERS_KEPT = 128
"""The folders of older paths it keeps (their places unknown); past them: `everywhere`."""
_LEFT = "siblings-left#"

NaturalKey = tuple[tuple[int, str, int], ...]
_RUNS = re.compile(r"(\d+)")


def digit_runs_key(path: str) -> tuple[tuple[int, int | str], ...]:
    """How `natural_key` ordered names until ids compared as text (every digit run a number): the
    erasure uses it to find contexts linked then."""
    return tuple((0, int(run)) if run.isdigit() else (1, run) for run in _RUNS.split(path) if run)


def natural_key(path: str) -> NaturalKey:
    """Order names as people do: a word that is a number, or letters then a number (`turn-9` <
    `turn-10`, `D9:3` < `D10:1`), compares by that number; any other word (an id such as
    `mem_01jq3k7...`, sortable by creation as text but not by its digit runs) compares as text."""
    key: list[tuple[int, str, int]] = []
    for i, part in enumerate(_WORDS.split(path)):
        if i % 2 == 0:  # a separator (or nothing) between words
            if part:
                key.append((2, part, 0))
        elif numbered := _NUMBERED.fullmatch(part):
            key.append((1, numbered[1], int(numbered[2])))
        else:
            key.append((1, part, -1))
    return tuple(key)


@dataclass(frozen=True)
class Linked:
    context: str | None
    fixups: dict[str, str] = field(default_factory=dict)  # document id -> its new context
    op: Put | None = None


class SiblingContext:
    def __init__(
        self, records: RecordStore, *, window_s: float, excerpt_chars: int = 300, remembered: int = 16
    ) -> None:
        self.records = records
        self.window_s = window_s
        self.excerpt_chars = excerpt_chars
        self.remembered = remembered

    def link(self, doc: Document, text: str, now: datetime) -> Linked:
        """Place a newly created document among its folder's recent siblings.

        Call with the folder's lock held and commit `op` with the document. `op` is conditional on
        the version read here (another process may add its own sibling meanwhile): when the commit
        fails and `moved` says so, link again and commit again.
        """
        if self.window_s <= 0:
            return Linked(None)
        key = _ring_key(doc.brain_id, doc.path)
        item = self.records.get(*key)
        entries: list[dict[str, Any]] = [
            e
            for e in (item.data["entries"] if item else [])
            if _age(e, now) <= self.window_s and e["path"] != doc.path
        ]
        mine = natural_key(doc.path)
        before = [e for e in entries if natural_key(e["path"]) < mine]
        predecessor = max(before, key=lambda e: natural_key(e["path"]), default=None)
        excerpt = " ".join(text.split())[: self.excerpt_chars]
        fixups: dict[str, str] = {}
        for entry in entries:
            theirs = natural_key(entry["path"])
            current = entry.get("after")
            if theirs > mine and (current is None or natural_key(current) < mine):
                entry["after"] = doc.path
                fixups[entry["doc_id"]] = excerpt
        entries.append(
            {
                "path": doc.path,
                "doc_id": doc.id,
                "excerpt": excerpt,
                "after": predecessor["path"] if predecessor else None,
                "at": now.isoformat(),
            }
        )
        entries = entries[-self.remembered :]
        op = Put(Item(*key, data={"entries": entries}), expected_version=item.version if item else 0)
        return Linked(predecessor["excerpt"] if predecessor else None, fixups, op)

    def moved(self, linked: Linked) -> bool:
        """Whether the folder's recent siblings changed since `linked` was made from them (a commit
        of its `op` then fails on them, whatever else it holds)."""
        if linked.op is None:
            return False
        item = self.records.get(linked.op.item.pk, linked.op.item.sk)
        return (item.version if item else 0) != linked.op.expected_version

    def context_of(self, doc: Document, ring: Item | None = None) -> str | None:
        """The context `link` gave the document (fix-ups included), as its folder's recent
        siblings still record it: "" for none, None when they no longer tell (it left the ring,
        or its predecessor did). For a reconcile that finds the document's chunks missing.
        `ring`: their record as a commit just wrote it, taken for the folder's instead of a read."""
        if self.window_s <= 0:
            return None
        key = _ring_key(doc.brain_id, doc.path)
        item = ring if ring is not None and (ring.pk, ring.sk) == key else self.records.get(*key)
        entries: list[dict[str, Any]] = item.data["entries"] if item else []
        mine = next((e for e in entries if e["doc_id"] == doc.id and e["path"] == doc.path), None)
        if mine is None:
            return None
        if mine.get("after") is None:
            return ""
        predecessor = next((e for e in entries if e["path"] == mine["after"]), None)
        return str(predecessor["excerpt"]) if predecessor is not None else None

    def forget(
        self,
        brain_id: str,
        paths: set[str],
        left: Collection[tuple[str, str]] = (),
        left_in: Collection[tuple[str, str]] = (),
    ) -> set[str]:
        """Take these documents out of their folders' recent siblings (an erasure: the ring keeps an
        excerpt of each); returns the ids of the siblings whose indexed context was one of them.
        `left`: (path, document id) of paths the documents lived at before (`paths_left`): their
        entries there go (another document's at that path stays), and the contexts taken there.
        `left_in`: (folder, document id) of folders they lived in at places no longer known: any
        entry of theirs there goes, and the contexts taken of it."""
        cleared: set[str] = set()
        named = paths | {path for path, _ in left}
        for folder in {folder_of(p) for p in named} | {folder for folder, _ in left_in}:
            key = _folder_key(brain_id, folder)
            for _ in range(16):
                item = self.records.get(*key)
                if item is None:
                    break
                entries = item.data["entries"]
                theirs = {e["path"] for e in entries if (folder, e["doc_id"]) in left_in}
                kept = [
                    e
                    for e in entries
                    if e["path"] not in paths
                    and (e["path"], e["doc_id"]) not in left
                    and e["path"] not in theirs
                ]
                for entry in kept:
                    if entry.get("after") in named or entry.get("after") in theirs:
                        cleared.add(entry["doc_id"])
                        entry["after"] = None
                try:
                    if kept:
                        self.records.put(Item(*key, data={"entries": kept}), expected_version=item.version)
                    else:  # the folder's ring is empty: its key names the folder, which may be theirs
                        self.records.delete(*key, expected_version=item.version)
                    break
                except Conflict:
                    continue
            else:  # the erasure fails, and is resumed, rather than leave an excerpt behind
                raise Conflict(f"the recent siblings of {folder!r} kept changing; try again")
        return cleared

    def left_op(self, doc: Document) -> Put | None:
        """For the commit of `doc`'s move away from its path: its record of the paths it has left,
        this one added (module docstring); None for a document that gives no sibling an excerpt."""
        if keeps_to_itself(doc):
            return None
        key = left_key(doc.brain_id, doc.id)
        held = _left_of(self.records.get(*key))
        paths = [p for p in held.paths if p != doc.path] + [doc.path]
        older, paths = paths[:-LEFT_KEPT], paths[-LEFT_KEPT:]
        folders = list(dict.fromkeys([*held.folders, *(folder_of(p) for p in older)]))
        data: dict[str, Any] = {"paths": paths}
        if held.everywhere or len(folders) > FOLDERS_KEPT:
            data["everywhere"] = True
        elif folders:
            data["folders"] = folders
        # unconditional: a move of the same document in another process loses on its record
        return Put(Item(*key, data=data))

    def paths_left(self, brain_id: str) -> dict[str, Left]:
        """Where each document of the brain lived before it moved, by its id (one query)."""
        found = all_items(self.records, documents_pk(brain_id), _LEFT)
        return {item.sk.removeprefix(_LEFT): _left_of(item) for item in found}

    def forget_left(self, brain_id: str, doc_ids: Iterable[str]) -> int:
        """Drop these documents' records of the paths they left; returns how many."""
        ops = [Delete(*left_key(brain_id, doc_id)) for doc_id in doc_ids]
        for start in range(0, len(ops), 100):  # DynamoDB's 100-item transaction
            self.records.transact(list(ops[start : start + 100]))
        return len(ops)


def left_key(brain_id: str, doc_id: str) -> tuple[str, str]:
    return documents_pk(brain_id), f"{_LEFT}{doc_id}"


@dataclass(frozen=True)
class Left:
    """Where a document lived before it moved (module docstring): `paths` exactly, `folders` those
    of older paths (places unknown), `everywhere` when more folders than those were left."""

    paths: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    everywhere: bool = False


def _left_of(item: Item | None) -> Left:
    """What a record of the paths left holds (a damaged field reads as none; the rest is read)."""
    if item is None:
        return Left()
    return Left(
        _strings(item.data.get("paths")),
        _strings(item.data.get("folders")),
        item.data.get("everywhere") is True,
    )


def _strings(values: object) -> tuple[str, ...]:
    return tuple(v for v in values if isinstance(v, str)) if isinstance(values, list) else ()


def keeps_to_itself(doc: Document) -> bool:
    """An image item is described by its own text only: it neither takes nor gives a sibling's
    excerpt (docs/IMAGES.md). Nor does a user's memory (ThoughtMCP), whose hard forget must leave
    no trace of its text in another memory's index context."""
    return doc.content_type.startswith("image/") or (
        doc.memory is not None and doc.memory.user_id is not None
    )


def folder_of(path: str) -> str:
    return posixpath.dirname(path)


def _age(entry: dict[str, Any], now: datetime) -> float:
    return (now - datetime.fromisoformat(entry["at"])).total_seconds()


def _ring_key(brain_id: str, path: str) -> tuple[str, str]:
    return _folder_key(brain_id, folder_of(path))


def _folder_key(brain_id: str, folder: str) -> tuple[str, str]:
    return documents_pk(brain_id), f"siblings#{folder}/"
