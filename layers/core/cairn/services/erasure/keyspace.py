"""Every record a brain keeps, as one keyspace: what deleting a brain, and erasing a subject's
sessions, remove in bulk. Each family's partition is named by the module that keeps it; this one
only composes those names, and is the erasure's only user of the record store.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import suppress
from typing import Final

from cairn.domain.errors import Conflict
from cairn.domain.models import Brain
from cairn.ports.records import MAX_SCAN_PREFIXES, Delete, Item, RecordStore, ScrubbableRecords
from cairn.services.brain_slugs import legacy_slug_key, names, slug_key
from cairn.services.gbrain.gaps import gap_sequence, gaps_pk
from cairn.services.gbrain.page_assertions import assertions_pk
from cairn.services.gbrain.raw_data import raw_prefix, raw_sequence
from cairn.services.gbrain.sequences import sequence_pk
from cairn.services.jobs.job_log import jobs_pk
from cairn.services.links.graph import link_sequence
from cairn.services.links.repository import links_prefix
from cairn.services.memory.claims import claims_pk, memtime_pk
from cairn.services.memory.entities import entities_pk
from cairn.services.mnemosyne.collection_records import CollectionRecords, collections_pk
from cairn.services.mnemosyne.image_refs import image_refs_prefix
from cairn.services.mnemosyne.item_status import pending_pk
from cairn.services.repositories import SESSIONS_PREFIX, all_items, doc_id_key, documents_pk
from cairn.services.search.access import access_pk
from cairn.services.thoughtmcp.rows import thoughts_prefix
from cairn.services.zengram.runs import consolidation_pk

_BATCH: Final = 100  # deletes per transaction (DynamoDB's bound)


def brain_prefixes(brain_id: str) -> list[str]:
    """Every record family a brain keeps under its own id (docs/ARCHITECTURE.md's table)."""
    return [
        documents_pk(brain_id),
        claims_pk(brain_id),
        memtime_pk(brain_id),
        entities_pk(brain_id),
        links_prefix(brain_id),
        gaps_pk(brain_id),
        assertions_pk(brain_id),
        access_pk(brain_id),
        collections_pk(brain_id),
        pending_pk(brain_id),
        consolidation_pk(brain_id),
        raw_prefix(brain_id),
        thoughts_prefix(brain_id),
        image_refs_prefix(brain_id),
        jobs_pk(brain_id),
        sequence_pk(link_sequence(brain_id)),
        sequence_pk(gap_sequence(brain_id)),
        sequence_pk(raw_sequence(brain_id)),
    ]


class BrainKeyspace:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def sessions(self) -> Iterator[Item]:
        """Every session's items (records and messages) of every brain, in one scan."""
        return self._scan([SESSIONS_PREFIX])

    def drop_pointers(self, brain_id: str) -> int:
        """Delete the global pointers into the brain (document ids, Mnemosyne collection uids),
        which live outside its partitions; returns how many documents it holds."""
        documents = 0
        pointers: list[Item] = []
        for item in all_items(self.records, documents_pk(brain_id), "doc#"):
            documents += 1
            pointers.append(Item(*doc_id_key(item.data["id"])))
        pointers += CollectionRecords(self.records).pointers(brain_id)
        self.delete(pointers)
        return documents

    def purge(
        self, brain_id: str, keep: Collection[tuple[str, str]] = (), held: Iterable[Item] | None = None
    ) -> int:
        """Delete every record under the brain's partitions but those `keep` names (of `held`,
        what `held_by` found of it, when given); returns how many there were."""
        items = self._scan(brain_prefixes(brain_id)) if held is None else held
        return self.delete([i for i in items if (i.pk, i.sk) not in keep])

    def held_by(self, brain_ids: Sequence[str]) -> dict[str, list[Item]]:
        """Every record under these brains' partitions, by brain, in one scan a MAX_SCAN_PREFIXES
        prefixes rather than one a brain: on DynamoDB each scan reads the whole table."""
        brain_of = {prefix: brain_id for brain_id in brain_ids for prefix in brain_prefixes(brain_id)}
        found: dict[str, list[Item]] = {brain_id: [] for brain_id in brain_ids}
        prefixes = list(brain_of)
        for start in range(0, len(prefixes), MAX_SCAN_PREFIXES):
            group = prefixes[start : start + MAX_SCAN_PREFIXES]
            for item in self._scan(group):
                prefix = next(p for p in group if item.pk.startswith(p))
                found[brain_of[prefix]].append(item)
        return found

    def free_slug(self, brain: Brain) -> None:
        """Delete the brain's slug pointer (its tenant's, and an earlier release's) while it still
        names the brain: a deletion resumed after the slug went to a new brain leaves that brain's
        pointer alone."""
        for key in (slug_key(brain.slug, brain.owner_tenant), legacy_slug_key(brain.slug)):
            for _ in range(5):
                pointer = self.records.get(*key)
                if pointer is None or not names(pointer, brain.id):
                    break
                with suppress(Conflict):  # rewritten meanwhile: read it again
                    self.records.delete(pointer.pk, pointer.sk, expected_version=pointer.version)
                    break

    def scrub(self) -> None:
        """Leave nothing of deleted records in the store's own files, where it keeps some."""
        if isinstance(self.records, ScrubbableRecords):
            self.records.scrub()

    def delete(self, items: Sequence[Item]) -> int:
        """Delete these items, a transaction at a time; returns how many were there (an item gone
        already is not counted, so a resumed run counts each item once)."""
        gone = 0
        for start in range(0, len(items), _BATCH):
            keys = list(dict.fromkeys((i.pk, i.sk) for i in items[start : start + _BATCH]))
            present = self.records.get_many(keys)
            if present:
                self.records.transact([Delete(pk, sk) for pk, sk in present])
            gone += len(present)
        return gone

    def _scan(self, prefixes: list[str]) -> Iterator[Item]:
        for start in range(0, len(prefixes), MAX_SCAN_PREFIXES):
            cursor: str | None = None
            while True:
                page = self.records.scan(prefixes[start : start + MAX_SCAN_PREFIXES], cursor=cursor)
                yield from page.items
                if page.cursor is None:
                    break
                cursor = page.cursor
