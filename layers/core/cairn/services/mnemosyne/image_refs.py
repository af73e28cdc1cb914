"""The image references documents make, recorded both ways (docs/IMAGES.md).

| record                        | pk                                       | sk                |
|-------------------------------|------------------------------------------|-------------------|
| image reference, by image     | `imgref#<brain_id>#to#<image path>`      | `<document path>` |
| image reference, by document  | `imgref#<brain_id>#from#<document path>` | `<image path>`    |
| whose they are (the mark)     | `imgref#<brain_id>#from#<document path>` | `/document`       |

Both references hold `{alt, title, caption}`: the distinct texts one per line when a document shows
the same image in several places. The mark (its sort key is no path: a path never starts with `/`)
names the document version they were recorded for, `{document_id, version}`. Every write of a
document's references is conditional on the mark's version as read with them, and moves it (or
deletes it, with the last reference), so two writers of one document's references never interleave:
the later one fails with Conflict and reads again.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from cairn.ports.records import Delete, Item, Put, RecordStore

Shown = Mapping[str, Mapping[str, str | None]]
"""Image path -> that image's `{alt, title, caption}` as one document shows it."""

Owner = tuple[str, int]
"""The document version references were recorded for: (document id, version)."""

MAX_RECORDED: Final = 1000
"""Distinct images recorded per document, and references read per image."""
MARK_SK: Final = "/document"
_OPS_PER_TRANSACTION: Final = 50  # and the mark's op: within DynamoDB's 100


@dataclass(frozen=True)
class Held:
    """A document's references as read: what it shows, whose they are (None: no mark, or a mark
    naming no document), and the mark's record version (0: no mark)."""

    shown: dict[str, dict[str, str | None]] = field(default_factory=dict)
    owner: Owner | None = None
    mark: int = 0


class ImageRefs:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def held(self, brain_id: str, document_path: str) -> Held:
        """The references the document at `document_path` made, as last recorded, and their mark."""
        shown: dict[str, dict[str, str | None]] = {}
        owner: Owner | None = None
        mark = 0
        for item in self._items(by_document(brain_id, document_path)):
            if item.sk == MARK_SK:
                owner, mark = _owner(item.data), item.version
            else:
                shown[item.sk] = dict(item.data)
        return Held(shown, owner, mark)

    def made_by(self, brain_id: str, document_path: str) -> dict[str, dict[str, str | None]]:
        """The images the document at `document_path` shows, as last recorded."""
        return self.held(brain_id, document_path).shown

    def of_image(self, brain_id: str, image_path: str) -> list[tuple[str, dict[str, str | None]]]:
        """The documents showing `image_path`, in path order (at most MAX_RECORDED), with what
        each says about it."""
        items = self.records.query(by_image(brain_id, image_path), limit=MAX_RECORDED).items
        return [(item.sk, dict(item.data)) for item in items]

    def replace(
        self,
        brain_id: str,
        document_path: str,
        shown: Shown,
        owner: Owner | None = None,
        held: Held | None = None,
        changed: set[str] | None = None,
    ) -> set[str]:
        """Make `shown` (at most MAX_RECORDED of it) what the document shows, both ways, recorded
        for `owner` (the mark after; None: no mark); returns the images whose references changed
        (also added to `changed`, transaction by transaction).

        Every transaction is conditional on the mark as `held` (read now if not given) found it,
        and moves it: Conflict when another writer moved it since. The transactions committed
        before one fails stay (their images are in `changed`); the writer that moved the mark
        read them. Removing every reference of a document without a mark puts one first and
        deletes it last (one more transaction), so that removal too is conditional."""
        wanted = dict(list(shown.items())[:MAX_RECORDED])
        held = held if held is not None else self.held(brain_id, document_path)
        changed = set() if changed is None else changed
        own = by_document(brain_id, document_path)
        pairs: list[tuple[str, list[Put | Delete]]] = []
        for target, data in wanted.items():
            if held.shown.get(target) != data:
                pairs.append(
                    (
                        target,
                        [
                            Put(Item(by_image(brain_id, target), document_path, dict(data))),
                            Put(Item(own, target, dict(data))),
                        ],
                    )
                )
        for target in sorted(held.shown.keys() - wanted.keys()):
            pairs.append((target, [Delete(by_image(brain_id, target), document_path), Delete(own, target)]))
        if not pairs and held.owner == owner and (owner is not None or held.mark == 0):
            return changed
        per = _OPS_PER_TRANSACTION // 2
        batches = [pairs[start : start + per] for start in range(0, len(pairs), per)] or [[]]
        mark = held.mark
        for n, batch in enumerate(batches):
            ops = [op for _, pair in batch for op in pair]
            if n == len(batches) - 1 and owner is None and mark:
                self._write(ops, Delete(own, MARK_SK, expected_version=mark))
                mark = 0
            else:
                mark = self._write(ops, Put(Item(own, MARK_SK, _mark_data(owner)), expected_version=mark))
            changed.update(target for target, _ in batch)
        if owner is None and mark:  # the mark put only to make this removal conditional
            self._write([], Delete(own, MARK_SK, expected_version=mark))
        return changed

    def _write(self, ops: list[Put | Delete], mark: Put | Delete) -> int:
        """`ops` and the mark's op in one transaction (the mark alone: one conditional write);
        returns the mark's version after (0: deleted)."""
        if ops:
            written = self.records.transact([*ops, mark])
            return written[-1].version if isinstance(mark, Put) else 0
        if isinstance(mark, Put):
            return self.records.put(mark.item, mark.expected_version).version
        self.records.delete(mark.pk, mark.sk, mark.expected_version)
        return 0

    def _items(self, pk: str) -> Iterator[Item]:
        after: str | None = None
        while True:
            page = self.records.query(pk, after=after, limit=500)
            yield from page.items
            if page.next_after is None:
                return
            after = page.next_after


def _mark_data(owner: Owner | None) -> dict[str, Any]:
    return {} if owner is None else {"document_id": owner[0], "version": owner[1]}


def _owner(data: Mapping[str, Any]) -> Owner | None:
    document_id, version = data.get("document_id"), data.get("version")
    if isinstance(document_id, str) and isinstance(version, int) and not isinstance(version, bool):
        return document_id, version
    return None


def image_refs_prefix(brain_id: str) -> str:
    """What every partition of a brain's image references starts with (by image, by document)."""
    return f"imgref#{brain_id}#"


def by_image(brain_id: str, image_path: str) -> str:
    return f"{image_refs_prefix(brain_id)}to#{image_path}"


def by_document(brain_id: str, document_path: str) -> str:
    return f"{image_refs_prefix(brain_id)}from#{document_path}"
