"""One document whose stored bytes cannot be read (DamagedContent: its blob deleted, truncated or
never stored, as an erasure killed between its two steps leaves it) must not take down an answer
about many: a listing, an export, a search's hits. `read_or_skip` reads one document's content for
such an answer; a damaged one gives None, is logged as a warning naming its id (never its
content), and is added to the answer's `Unreadable` list, so that a surface whose
shape has a place for it can say which were left out. A read of that document alone still
answers damaged_content (DocumentCore.bytes_of).

A document removed with its bytes (an erasure, a hard forget) between the answer's read of its
record and the read of its bytes is left out too, as if the answer had come a moment later: it is
not damaged, so it is neither logged nor named."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from cairn.domain.errors import DamagedContent, DamagedStore, NotFound

log = logging.getLogger("cairn.documents.unreadable")


class Named(Protocol):
    """What names a document: a Document, or a surface's row of one."""

    @property
    def id(self) -> str: ...

    @property
    def path(self) -> str: ...


T = TypeVar("T")
N = TypeVar("N", bound=Named)


@dataclass(frozen=True)
class Unreadable:
    """A document an answer left out because its stored content is damaged: what its record holds."""

    id: str
    path: str
    code: str = DamagedContent.code

    def shown(self) -> dict[str, str]:
        return {"id": self.id, "path": self.path, "code": self.code}


def read_or_skip(
    doc: N, read: Callable[[N], T], skipped: list[Unreadable] | None = None, *, or_raise: bool = False
) -> T | None:
    """`read(doc)`, or None when the document's stored content is damaged (then logged and added
    to `skipped`) or the document was removed meanwhile. With `or_raise`, a damaged document
    raises DamagedContent instead of being left out (an export that was not told to skip)."""
    try:
        return read(doc)
    except DamagedStore:  # a file of the store itself: not this one document's
        raise
    except NotFound:  # removed meanwhile, bytes and all
        return None
    except DamagedContent:
        if or_raise:
            raise
        log.warning("document %s: its stored content is damaged; left out of the answer", doc.id)
        if skipped is not None:
            skipped.append(Unreadable(doc.id, doc.path))
        return None
