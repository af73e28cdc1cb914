"""A credential record that is revoked, never deleted (API keys, registered OAuth clients), and the
one way its record is revoked: read, stamp `revoked_at`, write back on the version read, again if
another writer got there first."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, TypeVar, cast

from pydantic import BaseModel

from cairn.domain.errors import Conflict, NotFound
from cairn.ports.clock import Clock
from cairn.ports.records import Item, RecordStore

ATTEMPTS = 5


class Revocable(Protocol):
    """What the record's model has besides its fields: revoked_at None means active."""

    @property
    def active(self) -> bool: ...


R = TypeVar("R", bound=BaseModel)


def revoke_record(
    records: RecordStore,
    pk: str,
    sk: str | None,
    kind: type[R],
    clock: Clock,
    *,
    missing: str,
    busy: str,
    only_if: Callable[[R], bool] | None = None,
) -> R:
    """The record at (pk, sk), of a model with `revoked_at` and `active`, revoked (idempotent).
    NotFound(`missing`) when there is none (`sk` None: an id that cannot name one);
    Conflict(`busy`) when it kept changing. With `only_if`, a record it refuses, as read on the
    version written to, is returned as it is."""
    for _ in range(ATTEMPTS):
        item = records.get(pk, sk) if sk is not None else None
        if item is None:
            raise NotFound(missing)
        current = kind.model_validate(item.data)
        if not cast(Revocable, current).active or (only_if is not None and not only_if(current)):
            return current
        revoked = current.model_copy(update={"revoked_at": clock.now()})
        try:
            records.put(Item(pk, item.sk, revoked.model_dump(mode="json")), expected_version=item.version)
        except Conflict:
            continue
        return revoked
    raise Conflict(busy)
