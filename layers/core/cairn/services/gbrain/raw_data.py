"""Raw structured data kept beside a document: the API response or JSON a page was written from,
one active row per (document, source).

The JSON lives in the blob store (a row may hold up to 1 MiB, past DynamoDB's 400 KB item limit);
the record holds the row's integer id, its blob key and when it was stored. Writing a source that
already has a row needs `overwrite`; the claim is the record's own conditional write, so two
writers of one (document, source) never both succeed without it. A caller that decided on the row
it read (a restore keeping a newer one) writes with `expected_version`: a row written meanwhile
makes the write fail (RawDataChanged) instead of being overwritten.

Each write stores its bytes under a key of its own in its document's folder
(`<brain>/raw/<document id>/<token>-<sha>`): a write whose record loses its race (RawDataExists,
RawDataChanged, or overwrites that kept changing) then removes them, since no row can name a key no
other write knows. An overwrite with the bytes the row already names keeps naming them. The bytes of
a row an overwrite replaced are not collected (a reader that read the older record may still read
them); no record names them then, so an erasure of the document takes its whole folder
(`raw_folder`). Rows written before this layout name `<brain>/raw/<sha[:2]>/<token>-<sha>` or the
brain's content address (`<brain>/raw/<sha[:2]>/<sha>`, shared by every row of the same bytes),
which no write reuses: a write that lost could not tell whether another had come to share it
meanwhile. An erasure takes those its rows name once no other row does; those of rows an overwrite
replaced before this layout are named by nothing and stay.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from cairn.auth import access
from cairn.domain.errors import Conflict, InvalidInput, reading_record
from cairn.domain.js_text import js_blank
from cairn.domain.models import Brain
from cairn.ports.blobs import BlobStore
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore
from cairn.services.gbrain.sequences import Sequences

MAX_BYTES = 1024 * 1024
MAX_SOURCE = 128


class RawDataExists(Conflict):
    """A row for this (document, source) exists and overwrite was not asked for."""


class RawDataChanged(Conflict):
    """The row is no longer at the version the writer expected: another writer stored it meanwhile."""


@dataclass(frozen=True)
class RawRow:
    id: int
    document_id: str
    source: str
    stored_at: datetime
    blob_key: str
    version: int = 0  # its record's: what a write conditional on this row expects


def raw_folder(brain_id: str, document_id: str) -> str:
    """Where the bytes of a document's raw rows are kept (and an extraction transcript's turns)."""
    return f"{brain_id}/raw/{document_id}/"


def _pk(brain_id: str, document_id: str) -> str:
    return f"{raw_prefix(brain_id)}{document_id}"


def raw_prefix(brain_id: str) -> str:
    """What every partition of a brain's raw data rows starts with (one partition per document)."""
    return f"raw#{brain_id}#"


def raw_sequence(brain_id: str) -> str:
    """The name of the sequence numbering a brain's raw data rows."""
    return f"raw#{brain_id}"


OVERWRITE_TRIES = 16  # concurrent overwrites of one source each read again and retry


class _Made:
    """The bytes one write stores, under a key of its own, stored when a try first needs them."""

    def __init__(self, blobs: BlobStore, folder: str, digest: str, body: bytes) -> None:
        self.blobs = blobs
        self.digest = digest
        self.body = body
        self.key = f"{folder}{secrets.token_hex(8)}-{digest}"
        self.stored = False

    def key_for(self, held: Item | None) -> str:
        """The key the row names: the one the row being overwritten names when it holds these
        same bytes, else this write's own."""
        named = str(held.data.get("blob_key", "")) if held is not None else ""
        if named.endswith(self.digest):
            return named
        if not self.stored:
            self.blobs.put(self.key, self.body)
            self.stored = True
        return self.key

    def drop(self) -> None:
        if self.stored:
            self.blobs.delete(self.key)
            self.stored = False


class RawDataService:
    def __init__(self, records: RecordStore, blobs: BlobStore, clock: Clock) -> None:
        self.records = records
        self.blobs = blobs
        self.clock = clock
        self.sequences = Sequences(records)

    def put(
        self,
        brain: Brain,
        document_id: str,
        source: str,
        data: Any,
        *,
        overwrite: bool = False,
        expected_version: int | None = None,
    ) -> RawRow:
        """Store the row. With `expected_version` (0: there is none), only over the row at that
        version (`RawRow.version`), else RawDataChanged and nothing is written."""
        if not isinstance(source, str) or js_blank(source):
            raise InvalidInput("source must not be empty")
        if len(source) > MAX_SOURCE:
            raise InvalidInput(f"source exceeds maximum length of {MAX_SOURCE} characters")
        if not isinstance(data, dict):
            raise InvalidInput("data must be a JSON object, not an array or scalar")
        access.check_change(brain, None, f"the raw data of {brain.slug}")
        try:
            body = json.dumps(data, ensure_ascii=False, sort_keys=True, allow_nan=False).encode()
        except ValueError:
            raise InvalidInput("data numbers must be finite: NaN and Infinity are not JSON") from None
        if len(body) > MAX_BYTES:
            raise InvalidInput(f"data too large: {len(body)} bytes exceeds maximum of {MAX_BYTES} bytes")
        pk, sk = _pk(brain.id, document_id), f"src#{source}"
        held = self.records.get(pk, sk) if expected_version is None else None
        if held is not None and not overwrite:
            raise RawDataExists(f"raw data for source '{source}' already exists")
        digest = hashlib.sha256(body).hexdigest()
        row = RawRow(
            id=self.sequences.next(raw_sequence(brain.id)),
            document_id=document_id,
            source=source,
            stored_at=self.clock.now(),
            blob_key="",
        )
        made = _Made(self.blobs, raw_folder(brain.id, document_id), digest, body)
        try:
            return self._commit(pk, sk, row, made, held, overwrite=overwrite, expected=expected_version)
        except Conflict:  # the record store's condition failed: nothing was written
            made.drop()  # no record names it: its key is this write's own
            raise

    def _commit(
        self,
        pk: str,
        sk: str,
        row: RawRow,
        made: _Made,
        held: Item | None,
        *,
        overwrite: bool,
        expected: int | None,
    ) -> RawRow:
        source = row.source
        if expected is not None:
            try:
                return self._put(pk, sk, row, made.key_for(None), expected)
            except Conflict:
                raise RawDataChanged(f"raw data for source '{source}' changed while being written") from None
        for _ in range(OVERWRITE_TRIES):
            try:
                written = self._put(pk, sk, row, made.key_for(held), held.version if held else 0)
            except Conflict:
                if not overwrite:
                    raise RawDataExists(f"raw data for source '{source}' already exists") from None
                held = self.records.get(pk, sk)  # a concurrent overwrite: the last one wins
                continue
            if written.blob_key != made.key:
                made.drop()  # an earlier try's, the row it then met holding other bytes
            return written
        raise Conflict(f"raw data for source '{source}' kept changing while being written; try again")

    def _put(self, pk: str, sk: str, row: RawRow, blob_key: str, expected: int) -> RawRow:
        data_item = {"id": row.id, "blob_key": blob_key, "stored_at": row.stored_at.isoformat()}
        written = self.records.put(Item(pk, sk, data=data_item), expected_version=expected)
        return replace(row, blob_key=blob_key, version=written.version)

    def get(self, brain: Brain, document_id: str, source: str) -> tuple[RawRow, dict[str, Any]] | None:
        item = self.records.get(_pk(brain.id, document_id), f"src#{source}")
        if item is None:
            return None
        with reading_record(item.pk, item.sk, "raw data record"):
            row = RawRow(
                id=int(item.data["id"]),
                document_id=document_id,
                source=source,
                stored_at=datetime.fromisoformat(item.data["stored_at"]),
                blob_key=str(item.data["blob_key"]),
                version=item.version,
            )
            value: dict[str, Any] = json.loads(self.blobs.get(row.blob_key))  # the bytes it names
        return row, value

    def sources(self, brain: Brain, document_id: str) -> list[str]:
        page = self.records.query(_pk(brain.id, document_id), "src#")
        return [item.sk.removeprefix("src#") for item in page.items]

    def erase_all_of(self, brain: Brain, document_id: str) -> tuple[int, set[str]]:
        """Remove the document's raw rows (an erasure): how many, and the keys of their bytes,
        which the caller removes once no other row holds them (they are content-addressed)."""
        items = self.records.query(_pk(brain.id, document_id), "src#").items  # one read for both
        keys = {str(item.data["blob_key"]) for item in items}
        return self._remove(items), keys

    def blob_keys(self, brain: Brain) -> set[str]:
        """The keys of the bytes every raw row of the brain holds (a scan: for erasures only)."""
        keys: set[str] = set()
        cursor: str | None = None
        while True:
            page = self.records.scan([raw_prefix(brain.id)], cursor=cursor)
            keys.update(str(item.data["blob_key"]) for item in page.items if "blob_key" in item.data)
            if page.cursor is None:
                return keys
            cursor = page.cursor

    def remove_all_of(self, brain: Brain, document_id: str) -> int:
        return self._remove(self.records.query(_pk(brain.id, document_id), "src#").items)

    def _remove(self, items: Sequence[Item]) -> int:
        return sum(self.records.delete(item.pk, item.sk) for item in items)
