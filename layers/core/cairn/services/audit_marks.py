"""The names an erasure redacted from the audit, kept as records: an entry that waited while the
erasure ran (one a busy store refused, kept in another process's memory or in the spill) is checked
against them by whichever process writes it, before and after it writes it (services/audit.py).

The erasure marks its names before it scans the store; a writer reads the marks after its write.
So either the write came first and the erasure's scan finds the entry, or the mark came first and
the writer sees it.

| record                  | pk                       | sk                                               |
|-------------------------|--------------------------|--------------------------------------------------|
| a name erased in a tenant | `audit-erased#<digest>` | `<field>#t#<tenant>`                          |
| a name erased in a brain  | `audit-erased#<digest>` | `<field>#b#<brain id>`                        |

`<field>` is the entry's field the name is redacted from (`subject`, `target`); the digest (sha256
of the name) stands for it, so a mark never holds the name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cairn.ports.records import MAX_GET_MANY, Item, Put, RecordStore

_WRITES = 100  # marks a transaction writes (DynamoDB's bound on one)


@dataclass(frozen=True)
class Named:
    """What of an audit entry a mark can match."""

    tenant: str
    brain_id: str | None
    subject: str | None
    target: str | None


class ErasedNames:
    def __init__(self, records: RecordStore) -> None:
        self.records = records

    def mark(
        self,
        *,
        tenants: Iterable[str],
        brain_ids: Iterable[str],
        subjects: Iterable[str],
        targets: Iterable[str],
    ) -> None:
        """From now on an entry of these tenants or brains whose subject is one of `subjects` or
        whose target is one of `targets` is redacted when it is written. Marks made already are
        not written again (an erasure marks what it found so far at each of its passes)."""
        scopes = [f"t#{t}" for t in tenants] + [f"b#{b}" for b in brain_ids]
        keys = [
            _key(field, name, scope)
            for field, names in (("subject", subjects), ("target", targets))
            for name in sorted(set(names))
            for scope in scopes
        ]
        fresh: list[Put] = []
        for start in range(0, len(keys), MAX_GET_MANY):
            batch = keys[start : start + MAX_GET_MANY]
            found = self.records.get_many(batch)
            fresh += [Put(Item(pk, sk, {})) for pk, sk in batch if (pk, sk) not in found]
        for start in range(0, len(fresh), _WRITES):
            self.records.transact(fresh[start : start + _WRITES])

    def fields(self, entries: Sequence[Named]) -> list[set[str]]:
        """For each entry, the fields a mark says to redact (empty: none)."""
        wanted = [_keys(entry) for entry in entries]
        found: set[tuple[str, str]] = set()
        flat = [key for keys in wanted for key, _ in keys]
        for start in range(0, len(flat), MAX_GET_MANY):
            found.update(self.records.get_many(flat[start : start + MAX_GET_MANY]))
        return [{field for key, field in keys if key in found} for keys in wanted]


def _keys(entry: Named) -> list[tuple[tuple[str, str], str]]:
    scopes = [f"t#{entry.tenant}"] + ([f"b#{entry.brain_id}"] if entry.brain_id is not None else [])
    return [
        (_key(field, name, scope), field)
        for field, name in (("subject", entry.subject), ("target", entry.target))
        if name is not None
        for scope in scopes
    ]


def _key(field: str, name: str, scope: str) -> tuple[str, str]:
    return f"audit-erased#{hashlib.sha256(name.encode()).hexdigest()}", f"{field}#{scope}"
