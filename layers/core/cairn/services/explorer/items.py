"""A brain's items, filtered and paged, reading a bounded number of records per page.

Items are read in path order, a batch at a time, through DocumentRepository (so the access rule
hides what the caller may not see). Filters apply to what is read; a page stops when it is full,
when the brain is exhausted, or when SCAN_BUDGET records were read without filling it. In the last
case the page says so (`exhausted` False with a cursor), and the next page resumes from where the
read stopped: a rare filter over a large brain costs several pages, never one unbounded read.

The cursor is the last path read (base64url), opaque to the UI.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from datetime import datetime
from typing import Final, Literal

from cairn.domain.errors import InvalidInput
from cairn.domain.models import Brain, Document
from cairn.services.explorer.kinds import ItemKind, kind_of, type_of
from cairn.services.repositories import DocumentRepository

Validity = Literal["current", "superseded", "deleted", "any"]
VALIDITIES: Final[tuple[Validity, ...]] = ("current", "superseded", "deleted", "any")
PAGE_SIZE: Final = 50
BATCH: Final = 200
SCAN_BUDGET: Final = 5000
"""Records read for one page at most: a page of a selective filter returns within this bound."""


@dataclass(frozen=True)
class ItemFilter:
    kind: ItemKind | None = None
    type: str | None = None
    tag: str | None = None
    since: datetime | None = None  # updated at or after
    until: datetime | None = None  # updated before
    validity: Validity = "current"
    prefix: str = ""

    def admits(self, doc: Document) -> bool:
        if not _valid(doc, self.validity):
            return False
        if self.kind is not None and kind_of(doc) != self.kind:
            return False
        if self.type and type_of(doc) != self.type:
            return False
        if self.tag and self.tag not in doc.tags:
            return False
        if self.since is not None and doc.updated_at < self.since:
            return False
        return self.until is None or doc.updated_at < self.until


def _valid(doc: Document, validity: Validity) -> bool:
    deleted = doc.deleted_at is not None
    superseded = doc.memory is not None and (
        doc.memory.superseded_by is not None or doc.memory.expired_at is not None
    )
    if validity == "any":
        return True
    if validity == "deleted":
        return deleted
    if validity == "superseded":
        return superseded and not deleted
    return not deleted and not superseded


@dataclass(frozen=True)
class ItemPage:
    items: list[Document]
    cursor: str | None
    """Where the next page starts; None when the brain has been read to its end."""
    exhausted: bool
    """False when the read budget ran out before the page filled: more may match further on."""
    scanned: int


def encode(path: str) -> str:
    return base64.urlsafe_b64encode(path.encode()).decode().rstrip("=")


def decode(cursor: str) -> str:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        return base64.b64decode(padded, altchars=b"-_", validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidInput("the page cursor is not one this listing gave") from None


class ItemListing:
    def __init__(self, repo: DocumentRepository) -> None:
        self.repo = repo

    def page(
        self, brain: Brain, flt: ItemFilter, *, cursor: str | None = None, limit: int = PAGE_SIZE
    ) -> ItemPage:
        if not 1 <= limit <= 500:
            raise InvalidInput("a page holds 1..500 items")
        after = decode(cursor) if cursor else None
        found: list[Document] = []
        scanned = 0
        while scanned < SCAN_BUDGET:
            batch, more = self.repo.page(
                brain.id, flt.prefix, after=after, limit=min(BATCH, SCAN_BUDGET - scanned)
            )
            for doc in batch:
                scanned += 1
                after = doc.path
                if flt.admits(doc):
                    found.append(doc)
                    if len(found) == limit:
                        full = more is not None or doc is not batch[-1]
                        return ItemPage(found, encode(doc.path) if full else None, True, scanned)
            if more is None:
                return ItemPage(found, None, True, scanned)
        return ItemPage(found, encode(after) if after else None, False, scanned)
