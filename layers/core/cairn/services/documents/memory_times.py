"""A brain's live typed memories by creation time, kept beside its memory counts.

| record                   | pk              | sk                           | data                       |
|--------------------------|-----------------|------------------------------|----------------------------|
| a live memory, made when | `brain#<brain>` | `made#<created, UTC>#<path>` | `o`wner, `t`ype, `c`urrent |

Every record under `memories/` that is not deleted and holds a memory has an entry, its path
without `memories/`; a record whose raw data cannot say when it was made or what it holds (a
field of another kind than the document's) has one under `made#~#<path>`, above every time, so
that a reader meets it first and reads the records instead (decoding names the damaged record).
The entries are kept in the transaction of the counts (memory_counts.py `MemoryCounts.ops`):
each commit replacing a memory record deletes the entry its old record had and puts its new one,
for the paths their build has passed (`times` in the counts' record), so zengram's stats reads
the newest entries instead of every record."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, NamedTuple

from pydantic import ValidationError

from cairn.domain.errors import CairnError
from cairn.domain.stored_time import MOMENT
from cairn.ports.records import Item
from cairn.services.documents.raw_memory import read_raw

PREFIX = "made#"
_DOC = "doc#"
_MEMORIES = "memories/"
_DAMAGED = "~"


def moment(at: datetime) -> str | None:
    """A time as the entries sort it (UTC, to the microsecond, fixed width); None out of range."""
    try:
        utc = at.astimezone(UTC)
    except (OverflowError, ValueError):
        return None
    return f"{utc.year:04d}-{utc:%m-%dT%H:%M:%S.%f}"


def entry_of(pk: str, sk: str, data: dict[str, Any]) -> Item | None:
    """The entry of a memory document's record (`doc#memories/...`); None for one that is deleted
    or holds no memory."""
    rest = sk.removeprefix(_DOC + _MEMORIES)
    memory = data.get("memory")
    owner = memory.get("user_id") if isinstance(memory, dict) else None
    held: dict[str, Any] = {"o": f"={owner}" if isinstance(owner, str) else "-"}
    raw = read_raw(data)
    if raw is None:
        return Item(pk, f"{PREFIX}{_DAMAGED}#{rest}", held)
    if raw.deleted or not raw.memory:
        return None
    made = _created(pk, sk, data)
    if made is None:
        return Item(pk, f"{PREFIX}{_DAMAGED}#{rest}", held)
    return Item(pk, f"{PREFIX}{made}#{rest}", {**held, "t": raw.type, "c": raw.current})


def _created(pk: str, sk: str, data: dict[str, Any]) -> str | None:
    """The record's creation time as a count reads it (memory_glance.py `Glance.created_at`: its
    raw value, else the record decoded); None when neither reads."""
    from cairn.services.repositories import document_of  # repositories imports this package

    try:
        at = MOMENT.validate_python(data["created_at"])
    except (KeyError, ValidationError):
        try:
            at = document_of(Item(pk, sk, data)).created_at
        except (CairnError, ValidationError, ValueError, TypeError):
            return None
    return moment(at)


class Made(NamedTuple):
    """An entry as read."""

    at: str | None
    """Its sortable creation time (`moment`); None for a record to be read instead (damaged)."""
    folder: str
    path: str
    owner: str
    type: str | None
    current: bool


def made(item: Item) -> Made:
    at, _, rest = item.sk.removeprefix(PREFIX).partition("#")
    folder, slash, _ = rest.partition("/")
    data = item.data
    return Made(
        None if at == _DAMAGED else at,
        folder if slash else "",  # a document at `memories/<name>` is in no type's folder
        _MEMORIES + rest,
        str(data.get("o", "-")),
        data.get("t"),
        data.get("c") is True,
    )
