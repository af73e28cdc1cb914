"""The image references earlier releases left of documents gone: one pass over each brain, in steps.

Before image_items.py read an ingest's document back after recording its references, a delete or
an erasure (its `follow` included) that ran between the ingest's commit and its record left the
erased document's references, its alt text and captions, in the store; a document written later
at the same path (not by an ingest, so no `follow` takes them) made them an image's caption again.
This pass, a chore of the sweep (services/documents/index_sweeper.py), reads every brain's
references by document (`imgref#<brain>#from#<document path>`) once, then the documents they name:

- a document standing (live) at that path keeps its references;
- one absent or deleted there has them removed, both ways, each removal conditional on the
  by-document record being at the version the pass read (the by-image one goes with it), so an
  ingest re-recording it meanwhile (which writes both, at once) keeps what it recorded. The
  document is read after its references were, so one written since is found standing;
- one whose record no longer reads (damaged) is taken for standing: its references stay.

The mark beside a document's references (image_refs.py: whose they are) goes with them, conditional
on its version as read; it names no image, so it re-indexes none.

Then every image item whose references went is re-indexed with its captions (ImageItems.refresh).
The pass is a BrainScanPass (services/brain_scan_pass.py: one page of one scan of up to
MAX_SCAN_PREFIXES brains a step, a mark each brain done, `finished` once no brain needs it):

| record                 | pk                        | sk     | data                          |
|------------------------|---------------------------|--------|-------------------------------|
| the pass               | `image-refs-pass`         | `pass` | `started`, `brains`, `cursor` |
| a brain's pass is done | `imgref#<brain_id>#swept` | `pass` | `at`                          |

A brain's mark sits under its image references' prefix, so deleting the brain takes it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Collection, Sequence
from contextlib import suppress
from typing import Final

from cairn.domain.errors import Conflict, DamagedStore
from cairn.ports.clock import Clock
from cairn.ports.records import Delete, Item, RecordStore
from cairn.services.brain_scan_pass import BrainScanPass
from cairn.services.mnemosyne.image_items import ImageItems
from cairn.services.mnemosyne.image_refs import MARK_SK, by_document, by_image, image_refs_prefix
from cairn.services.repositories import BrainRepository, doc_key, document_of, get_all

log = logging.getLogger(__name__)

PASS_KEY: Final = ("image-refs-pass", "pass")
STEP_ITEMS: Final = 200
"""The references one step's scan page holds at most: each removed may re-index an image."""
_PAIRS: Final = 25  # references removed in one transaction: two deletes each, within DynamoDB's 100


def done_key(brain_id: str) -> tuple[str, str]:
    return f"{image_refs_prefix(brain_id)}swept", "pass"


def _from_prefix(brain_id: str) -> str:
    return f"{image_refs_prefix(brain_id)}from#"


class ImageRefsSweep(BrainScanPass):
    """The pass (module docstring) over the brains the sweep names."""

    def __init__(
        self,
        records: RecordStore,
        images: ImageItems,
        brains: BrainRepository,
        clock: Clock,
        *,
        step_items: int = STEP_ITEMS,
    ) -> None:
        self.images = images
        super().__init__(
            records,
            brains,
            clock,
            pass_key=PASS_KEY,
            done_key=done_key,
            prefix=_from_prefix,
            settle=self._settle,
            step_items=step_items,
        )

    def _settle(self, items: Sequence[Item]) -> None:
        """Remove the references these by-document items hold of documents no longer standing, then
        re-index the images they named (module docstring)."""
        read: dict[tuple[str, str], list[Item]] = defaultdict(list)
        for item in items:
            if (key := _referrer(item)) is not None:
                read[key].append(item)
        if not read:
            return
        gone = [(key[0], item) for key in self._gone(read) for item in read[key]]
        removed: dict[str, set[str]] = defaultdict(set)
        for start in range(0, len(gone), _PAIRS):
            batch = gone[start : start + _PAIRS]
            try:
                self.records.transact([op for _, item in batch for op in _removal(item)])
            except Conflict:  # one re-recorded meanwhile: the others one at a time, that one kept
                batch = [(brain_id, item) for brain_id, item in batch if self._removed(item)]
            for brain_id, item in batch:
                if item.sk != MARK_SK:
                    removed[brain_id].add(item.sk)
        self._refresh(removed)

    def _gone(self, keys: Collection[tuple[str, str]]) -> set[tuple[str, str]]:
        """Which of these (brain, document path) hold no live document, in one batch read."""
        held = get_all(self.records, [doc_key(*key) for key in keys])
        gone: set[tuple[str, str]] = set()
        for key in keys:
            item = held.get(doc_key(*key))
            if item is None:
                gone.add(key)
                continue
            try:
                doc = document_of(item)
            except DamagedStore:
                log.warning(
                    "image references pass: a document of brain %s is damaged; its references are kept",
                    key[0],
                )
                continue
            if doc.deleted_at is not None:
                gone.add(key)
        return gone

    def _removed(self, item: Item) -> bool:
        with suppress(Conflict):
            self.records.transact(_removal(item))
            return True
        return False

    def _refresh(self, removed: dict[str, set[str]]) -> None:
        """Each image whose references went re-indexed with its captions; one that fails is logged
        (its references are gone: a later ingest or refresh of it makes its captions without them)."""
        for brain in self.brains.get_many(sorted(removed)):
            if brain.deleted_at is not None:
                continue
            for image in sorted(removed[brain.id]):
                try:
                    self.images.refresh(brain, image)
                except Exception:
                    log.exception("image references pass: an image of brain %s was not re-indexed", brain.id)


def _referrer(item: Item) -> tuple[str, str] | None:
    """The (brain, document path) of a by-document reference's key; None for any other item."""
    brain_id, found, path = item.pk.removeprefix("imgref#").partition("#from#")
    if not (found and brain_id and path) or item.pk != by_document(brain_id, path):
        return None
    return brain_id, path


def _removal(item: Item) -> list[Delete]:
    """A by-document reference as read, and its by-image twin (a mark: itself)."""
    if item.sk == MARK_SK:
        return [Delete(item.pk, item.sk, item.version)]
    brain_id, path = _referrer(item) or ("", "")
    return [Delete(item.pk, item.sk, item.version), Delete(by_image(brain_id, item.sk), path)]
