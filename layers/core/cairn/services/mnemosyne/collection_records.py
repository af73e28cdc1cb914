"""A library's collections as stored: the collection, its name claim, and its by-uid pointer.

| record                    | pk                      | sk                 |
|---------------------------|-------------------------|--------------------|
| collection                | `collections#<brain>`   | `col#<uid>`        |
| name claim (folded name)  | `collections#<brain>`   | `name#<name>`      |
| collection by uid         | `colid#<uid>`           | `collection`       |
| folder claim              | `collections#<brain>`   | `folder#<digest>`  |

All four are created in one transaction, each only if absent, so two collections of one
library never share a name or a folder (a collection an earlier release made has no folder
claim: `create` also compares the folders of those stored). A restored collection may share its
folder with another restored one, as the archive's did: its claim is written unconditionally.
This repository is the only user of these keys.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime

from cairn.domain.errors import Conflict, reading_record
from cairn.ports.records import Item, Put, RecordStore
from cairn.services.repositories import all_items


@dataclass(frozen=True)
class CollectionRow:
    uid: str
    name: str
    description: str
    folder: str
    created_at: datetime


class CollectionRecords:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def create(self, library_id: str, row: CollectionRow, *, shared_folder: bool = False) -> None:
        """Store a new collection; Conflict when the library has one of that name, or (unless
        `shared_folder`) one owning that folder."""
        pk = collections_pk(library_id)
        if not shared_folder and self.folder_owner(library_id, row.folder) is not None:
            raise Conflict(f"folder {row.folder}/ already belongs to another collection")
        self.records.transact(
            [
                Put(Item(pk, _name_sk(row.name), {"uid": row.uid}), 0),
                Put(Item(pk, f"col#{row.uid}", _data(row)), 0),
                Put(Item(_pointer_pk(row.uid), "collection", {"brain_id": library_id}), 0),
                Put(Item(pk, _folder_sk(row.folder), {"uid": row.uid}), None if shared_folder else 0),
            ]
        )

    def folder_owner(self, library_id: str, folder: str) -> CollectionRow | None:
        """The library's collection owning `folder`, if any (claimed, or made before claims were)."""
        claim = self.records.get(collections_pk(library_id), _folder_sk(folder))
        if claim is not None:
            return self.get(library_id, str(claim.data["uid"]))
        return next((row for row in self.of(library_id) if row.folder == folder), None)

    def of(self, library_id: str) -> list[CollectionRow]:
        return [_row(item) for item in all_items(self.records, collections_pk(library_id), "col#")]

    def library_of(self, uid: str) -> str | None:
        """The library holding collection `uid`, if there is one."""
        pointer = self.records.get(_pointer_pk(uid), "collection") if uid.startswith("col_") else None
        return str(pointer.data["brain_id"]) if pointer is not None else None

    def get(self, library_id: str, uid: str) -> CollectionRow | None:
        item = self.records.get(collections_pk(library_id), f"col#{uid}")
        return _row(item) if item is not None else None

    def named(self, library_id: str, name: str) -> CollectionRow | None:
        """The library's collection of this name (compared folded), if any."""
        claim = self.records.get(collections_pk(library_id), _name_sk(name))
        return self.get(library_id, str(claim.data["uid"])) if claim is not None else None

    def pointers(self, library_id: str) -> list[Item]:
        """The by-uid pointers of the library's collections, which live outside its partition
        (deleting a library removes them; its partition goes whole)."""
        return [
            Item(_pointer_pk(str(item.data["uid"])), "collection")
            for item in all_items(self.records, collections_pk(library_id), "col#")
        ]


def collections_pk(brain_id: str) -> str:
    """The partition of a library's collections and their name claims."""
    return f"collections#{brain_id}"


def _pointer_pk(uid: str) -> str:
    return f"colid#{uid}"


def _name_sk(name: str) -> str:
    return f"name#{name.casefold()}"


def _folder_sk(folder: str) -> str:
    return f"folder#{hashlib.sha256(folder.encode()).hexdigest()[:32]}"


def _data(row: CollectionRow) -> dict[str, object]:
    return {
        "uid": row.uid,
        "name": row.name,
        "description": row.description,
        "folder": row.folder,
        "created_at": row.created_at.isoformat(),
    }


def _row(item: Item) -> CollectionRow:
    with reading_record(item.pk, item.sk, "collection"):
        return _decoded(item)


def _decoded(item: Item) -> CollectionRow:
    d = item.data
    return CollectionRow(
        uid=str(d["uid"]),
        name=str(d["name"]),
        description=str(d.get("description") or ""),
        folder=str(d["folder"]),
        created_at=datetime.fromisoformat(str(d["created_at"])),
    )
