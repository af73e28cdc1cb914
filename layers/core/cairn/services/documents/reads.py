"""Reading documents: by path or id, their bytes, info, listings and pages."""

from __future__ import annotations

import builtins
from collections.abc import Iterator

from cairn.domain.errors import (
    InvalidInput,
    NotFound,
)
from cairn.domain.models import Brain, Document
from cairn.domain.paths import validate_path
from cairn.domain.text import excerpt
from cairn.ports.downloads import DownloadSigner, PresignedDownload
from cairn.services.documents import listing
from cairn.services.documents.core import DocumentCore
from cairn.services.documents.inputs import (
    FileInfo,
    file_info,
    stamp,
)

DOWNLOAD_TTL_S = 300
"""How long a presigned read stays valid: a client follows the redirect at once."""
RAW_BYTES = "application/octet-stream"


class DocumentReads(DocumentCore):
    """The read side of DocumentService."""

    def get(self, brain: Brain, path: str) -> Document:
        return live_at(path, self.repo.get(brain.id, validate_path(path)))

    def get_by_id(self, brain: Brain, doc_id: str) -> Document:
        doc = self.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id or doc.deleted_at is not None:
            raise NotFound(f"document not found: {excerpt(doc_id)}")
        return doc

    def record_by_id(self, brain: Brain, doc_id: str) -> Document:
        """The document's record even when soft-deleted (to follow `replaced_by`); NotFound otherwise."""
        doc = self.repo.get_by_id(doc_id)
        if doc is None or doc.brain_id != brain.id:
            raise NotFound(f"document not found: {excerpt(doc_id)}")
        return doc

    def content(self, doc: Document) -> bytes:
        """The bytes of any record, live or soft-deleted (blobs outlive soft deletes)."""
        return self.bytes_of(doc)

    def read(self, brain: Brain, path: str) -> bytes:
        return self.bytes_of(self.get(brain, path))

    def read_or_link(
        self, brain: Brain, path: str, signer: DownloadSigner | None, *, inline_max: int
    ) -> bytes | PresignedDownload:
        """The document's bytes; or, when there are more than `inline_max` of them and the blob
        store signs downloads (`signer`), a presigned GET of its blob, which is then never read
        here. Access is decided as for `read`: by the record, before anything is signed."""
        doc = self.get(brain, path)
        if signer is not None and doc.byte_size > inline_max:
            return signer.presign_download(doc.blob_key, expires_in=DOWNLOAD_TTL_S, content_type=RAW_BYTES)
        return self.bytes_of(doc)

    def exists(self, brain: Brain, path: str) -> bool:
        try:
            self.get(brain, path)
        except NotFound:
            return False
        return True

    def stat(self, brain: Brain, path: str) -> FileInfo:
        try:
            return file_info(self.get(brain, path))
        except NotFound:
            child = next(self._live(brain, path + "/"), None)
            if child is None:
                raise
            return FileInfo(path=path, size=0, mtime=stamp(child), is_dir=True)

    def list(
        self,
        brain: Brain,
        directory: str = "",
        *,
        recursive: bool = False,
        glob: str | None = None,
        include_generated: bool = False,
    ) -> list[FileInfo]:
        """Every entry of the listing, all pages of `list_page` read in turn."""
        items: list[FileInfo] = []
        cursor: str | None = None
        while True:
            page = self.list_page(
                brain,
                directory,
                recursive=recursive,
                glob=glob,
                include_generated=include_generated,
                cursor=cursor,
            )
            items += page.items
            if page.next_cursor is None:
                return items
            cursor = page.next_cursor

    def list_page(
        self,
        brain: Brain,
        directory: str = "",
        *,
        recursive: bool = False,
        glob: str | None = None,
        include_generated: bool = False,
        limit: int | None = None,
        cursor: str | None = None,
    ) -> listing.Page[FileInfo]:
        """One page of the path listing (at most `max_list_items`, the default); `next_cursor`
        resumes it. Order and cursor: services/documents/listing.py."""
        page = listing.entries(
            self.repo,
            brain.id,
            directory,
            recursive=recursive,
            glob=glob,
            include_generated=include_generated,
            limit=self._page_limit(limit),
            cursor=cursor,
        )
        infos = [
            FileInfo(path=e.path, size=0, mtime=stamp(e.document), is_dir=True)
            if e.is_dir
            else file_info(e.document)
            for e in page.items
        ]
        return listing.Page(infos, page.next_cursor)

    def documents_page(
        self, brain: Brain, *, limit: int | None = None, cursor: str | None = None
    ) -> listing.Page[Document]:
        """One page of every live document in path order (the legacy listing)."""
        return listing.documents(self.repo, brain.id, limit=self._page_limit(limit), cursor=cursor)

    def _page_limit(self, limit: int | None) -> int:
        if limit is not None and not 1 <= limit <= self.max_list_items:
            raise InvalidInput(f"limit must be between 1 and {self.max_list_items}")
        return self.max_list_items if limit is None else limit

    def documents(self, brain: Brain, prefix: str = "") -> builtins.list[Document]:
        """Live documents whose path starts with `prefix`, in path order."""
        return list(self._live(brain, prefix))

    def _live(self, brain: Brain, prefix: str) -> Iterator[Document]:
        return (doc for doc in self.repo.list(brain.id, prefix) if doc.deleted_at is None)


def live_at(path: str, doc: Document | None) -> Document:
    """The live document read at `path` (as the principal sees it); NotFound when there is none."""
    if doc is None or doc.deleted_at is not None:
        raise NotFound(f"not found: {excerpt(path)}")
    return doc
