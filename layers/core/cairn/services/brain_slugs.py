"""Where a brain's slug is claimed: one pointer per tenant and slug, so slugs are unique within a
tenant and two tenants may each have a brain slugged `notes`.

| record                      | pk       | sk                       |
|-----------------------------|----------|--------------------------|
| brain by slug, of a tenant  | `brains` | `slug#<slug>#<tenant>`   |
| brain by slug, earlier      | `brains` | `slug#<slug>`            |

A slug holds no `#` (services/brains.py SLUG_RE), so `slug#<slug>#` is the prefix of exactly the
tenants holding that slug: one query finds them all, for the operator (who names brains of every
tenant) and for a caller naming another tenant's public brain. The pointer carries a copy of the
brain, so resolving a slug is one read.

Earlier releases kept one pointer per slug for all tenants. The `tenant-slugs` migration (and
every later `mend_pointers`) moves each to its tenant's key. A brain a process of such a release
makes beside this one (during a rolling deploy) is found by id and in listings at once, and by its
slug once mended (`cairn serve` at start, `cairn check`, the AWS stack's scheduled mend); until
then its old pointer still keeps its tenant from making a second brain at that slug.
"""

from __future__ import annotations

from cairn.domain.errors import reading_record
from cairn.domain.models import Brain
from cairn.ports.records import Delete, Item, Put, RecordStore

BRAINS_PK = "brains"
_HOLDERS_PAGE = 100  # tenants' pointers for one slug per query


def brain_key(brain_id: str) -> tuple[str, str]:
    return BRAINS_PK, f"brain#{brain_id}"


def slug_key(slug: str, tenant: str) -> tuple[str, str]:
    return BRAINS_PK, f"slug#{slug}#{tenant}"


def legacy_slug_key(slug: str) -> tuple[str, str]:
    """The one pointer per slug an earlier release kept, whatever the tenant."""
    return BRAINS_PK, f"slug#{slug}"


def holders_prefix(slug: str) -> str:
    """The sort-key prefix of every tenant's pointer for `slug`."""
    return f"slug#{slug}#"


def pointer_data(brain: Brain) -> dict[str, object]:
    return {"brain_id": brain.id, "brain": brain.model_dump(mode="json")}


def names(pointer: Item | None, brain_id: str) -> bool:
    """Whether the slug pointer is there and names that brain."""
    return pointer is not None and pointer.data.get("brain_id") == brain_id


def pointed(records: RecordStore, pointer: Item | None) -> Brain | None:
    """The brain a slug pointer names."""
    if pointer is None:
        return None
    with reading_record(pointer.pk, pointer.sk, "slug's brain"):
        if "brain" in pointer.data:
            return Brain.model_validate(pointer.data["brain"])
        held = records.get(*brain_key(pointer.data["brain_id"]))  # a pointer from before it carried the brain
    if held is None:
        return None
    with reading_record(held.pk, held.sk, "brain"):
        return Brain.model_validate(held.data)


def holders(records: RecordStore, slug: str) -> list[Brain]:
    """Every tenant's brain at `slug`, by tenant."""
    found: dict[str, Brain] = {}
    after: str | None = None
    while True:
        page = records.query(BRAINS_PK, holders_prefix(slug), after=after, limit=_HOLDERS_PAGE)
        for item in page.items:
            brain = pointed(records, item)
            if brain is not None:
                found[brain.id] = brain
        if page.next_after is None:
            return sorted(found.values(), key=lambda b: b.owner_tenant)
        after = page.next_after


def slug_ops(records: RecordStore, before: Brain, after: Brain) -> list[Put | Delete]:
    """What a write of `before` as `after` does to its slug pointer: written again with the brain,
    moved with it to another tenant, and an earlier release's pointer for it taken over. A deleted
    brain's slug, once freed, is left alone: it may be another brain's by now."""
    key, moved_to = slug_key(before.slug, before.owner_tenant), slug_key(after.slug, after.owner_tenant)
    pointer = records.get(*key)
    legacy = None if pointer is not None else records.get(*legacy_slug_key(before.slug))
    held = pointer or (legacy if names(legacy, before.id) else None)
    if not (names(held, before.id) if held is not None else before.deleted_at is None):
        return []
    item = Item(*moved_to, data=pointer_data(after))
    if pointer is not None and key == moved_to:
        return [Put(item, expected_version=pointer.version)]
    ops: list[Put | Delete] = [Put(item, expected_version=0)]
    if pointer is not None:
        ops.append(Delete(*key, expected_version=pointer.version))
    if legacy is not None and held is legacy:
        ops.append(Delete(*legacy_slug_key(before.slug), expected_version=legacy.version))
    return ops
