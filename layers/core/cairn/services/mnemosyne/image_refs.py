"""The image references documents make, recorded both ways (docs/IMAGES.md).

| record                        | pk                                       | sk                |
|-------------------------------|------------------------------------------|-------------------|
| image reference, by image     | `imgref#<brain_id>#to#<image path>`      | `<document path>` |
| image reference, by document  | `imgref#<brain_id>#from#<document path>` | `<image path>`    |

Both hold `{alt, title, caption}`: the distinct texts one per line when a document shows the same
image in several places.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Final

from cairn.ports.records import Delete, Item, Put, RecordStore

Shown = Mapping[str, Mapping[str, str | None]]
"""Image path -> that image's `{alt, title, caption}` as one document shows it."""

MAX_RECORDED: Final = 1000
"""Distinct images recorded per document, and references read per image."""
_OPS_PER_TRANSACTION: Final = 50


class ImageRefs:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def made_by(self, brain_id: str, document_path: str) -> dict[str, dict[str, str | None]]:
        """The images the document at `document_path` shows, as last recorded."""
        return {item.sk: dict(item.data) for item in self._items(by_document(brain_id, document_path))}

    def of_image(self, brain_id: str, image_path: str) -> list[tuple[str, dict[str, str | None]]]:
        """The documents showing `image_path`, in path order (at most MAX_RECORDED), with what
        each says about it."""
        items = self.records.query(by_image(brain_id, image_path), limit=MAX_RECORDED).items
        return [(item.sk, dict(item.data)) for item in items]

    def replace(self, brain_id: str, document_path: str, shown: Shown) -> set[str]:
        """Make `shown` (at most MAX_RECORDED of it) what the document shows, both ways; returns
        the images whose references changed."""
        wanted = dict(list(shown.items())[:MAX_RECORDED])
        own = by_document(brain_id, document_path)
        before = self.made_by(brain_id, document_path)
        ops: list[Put | Delete] = []
        changed: set[str] = set()
        for target, data in wanted.items():
            if before.get(target) != data:
                changed.add(target)
                ops += [
                    Put(Item(by_image(brain_id, target), document_path, dict(data))),
                    Put(Item(own, target, dict(data))),
                ]
        for target in before.keys() - wanted.keys():
            changed.add(target)
            ops += [Delete(by_image(brain_id, target), document_path), Delete(own, target)]
        for start in range(0, len(ops), _OPS_PER_TRANSACTION):
            self.records.transact(ops[start : start + _OPS_PER_TRANSACTION])
        return changed

    def _items(self, pk: str) -> Iterator[Item]:
        after: str | None = None
        while True:
            page = self.records.query(pk, after=after, limit=500)
            yield from page.items
            if page.next_after is None:
                return
            after = page.next_after


def image_refs_prefix(brain_id: str) -> str:
    """What every partition of a brain's image references starts with (by image, by document)."""
    return f"imgref#{brain_id}#"


def by_image(brain_id: str, image_path: str) -> str:
    return f"{image_refs_prefix(brain_id)}to#{image_path}"


def by_document(brain_id: str, document_path: str) -> str:
    return f"{image_refs_prefix(brain_id)}from#{document_path}"
