"""A pypdf reader that finds objects its cross-reference table misses without scanning the file
for each one.

Asked for an object the table does not list, or lists at an offset holding another, pypdf
searches the whole file with a regular expression for that object's header, once per object: a
2 MB PDF whose page names 2,000 objects that do not exist took 10 s to read, and the cost grows
with the file's size times the objects named. `IndexedReader` reads every object header in the
file once, on the first such miss, and answers from that index what pypdf's search would have
found: the object's first header, written as the reference writes it, is put in the table before
pypdf looks, and when there is none pypdf's search is given nothing to read, so it fails at once
and pypdf goes on as it does after a failed search (no object for an unlisted one; the object at
the listed offset, whatever number its header gives, for a listed one).

Reading at a listed offset whatever header is there lets one body be read again for every number
that lists it: 1,000 numbers listed at a 2 MB stream made 2 GB of copies. So the file's bytes may
be read at most READ_BUDGET times over (real PDFs read 1.2 times over, small ones a few times,
the fixed cost of their trailer and table), and a file that asks more is refused as damaged.
"""

from __future__ import annotations

import io
import re

from pypdf import PdfReader
from pypdf.generic import IndirectObject, PdfObject

from cairn.domain.errors import UnsupportedContent

READ_BUDGET = 4
"""Times over a PDF's bytes may be read, plus READ_SLACK for small files' fixed cost."""
READ_SLACK = 4 * 1024 * 1024

_HEADER = re.compile(rb"\s(\d+)\s+(\d+)\s+obj")
"""pypdf's search for one object's header, for every object at once (digits as written)."""


class _Stream(io.BytesIO):
    """The file, whose whole buffer pypdf's header search reads (withheld while the reader knows
    the search's answer), and whose reads are counted against the budget."""

    searchable = True

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.left = READ_BUDGET * len(data) + READ_SLACK

    def getbuffer(self) -> memoryview:
        return super().getbuffer() if self.searchable else memoryview(b"")

    def read(self, size: int | None = -1) -> bytes:
        read = super().read(size)
        self.left -= len(read)
        if self.left < 0:
            raise UnsupportedContent(
                "PDF could not be read (it reads its own bytes over and over: objects overlap or "
                "are cut short); the file may be damaged"
            )
        return read


class IndexedReader(PdfReader):
    def __init__(self, data: bytes) -> None:
        self._data = data
        self._headers: dict[tuple[bytes, bytes], int] | None = None
        self._file = _Stream(data)
        super().__init__(self._file)

    def get_object(self, indirect_reference: int | IndirectObject) -> PdfObject | None:
        ref = indirect_reference
        if isinstance(ref, int):
            ref = IndirectObject(ref, 0, self)
        if (ref.generation, ref.idnum) not in self.resolved_objects and not self._listed_here(ref):
            at = self._header_at(ref)
            if at is not None:
                self.xref.setdefault(ref.generation, {})[ref.idnum] = at
        searchable, self._file.searchable = self._file.searchable, False
        try:
            return super().get_object(ref)
        finally:
            self._file.searchable = searchable

    def _listed_here(self, ref: IndirectObject) -> bool:
        """Whether pypdf reads the object without a search: in an object stream, free, or listed
        where its header is."""
        if ref.generation == 0 and ref.idnum in self.xref_objStm:
            return True
        listed = self.xref.get(ref.generation, {})
        if ref.idnum not in listed:
            return False
        if self.xref_free_entry.get(ref.generation, {}).get(ref.idnum, False):
            return True
        position = self._file.tell()
        try:
            self._file.seek(listed[ref.idnum], 0)
            return self.read_object_header(self._file) == (ref.idnum, ref.generation)
        except Exception:  # a header pypdf cannot read makes it search
            return False
        finally:
            self._file.seek(position, 0)

    def _header_at(self, ref: IndirectObject) -> int | None:
        """Where pypdf's search would find the object's header (None: nowhere)."""
        if self._headers is None:
            self._headers = {}
            for found in _HEADER.finditer(self._data):
                self._headers.setdefault((found.group(1), found.group(2)), found.start() + 1)
        return self._headers.get((str(ref.idnum).encode(), str(ref.generation).encode()))
