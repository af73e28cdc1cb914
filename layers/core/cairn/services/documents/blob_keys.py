"""Where a document's bytes are stored: `<brain>/doc/<document id>/<token>-<sha256>`, each
version's under a key of its own (a random token of the write, then the content's address) in a
folder of the document's own.

Why a folder per document rather than one content address for the brain (`<brain>/<sha[:2]>/<sha>`,
what documents written before this layout still name): a version's bytes stay after the next
write (a reader holding the older record still reads them), and a content address shared by any
document holding the same bytes cannot tell when none does any longer; so erasing a document
left its earlier versions' text on disk. A folder that is the document's alone goes whole with it
(`own_folder`). The token makes a key once replaced never a later version's, even of the same
bytes, so the replaced version's bytes can be collected without racing a write that returns to
them (old_bytes.py). An id that could not name a folder safely keeps the brain's content
address."""

from __future__ import annotations

import re
import secrets

from cairn.domain.models import Document

_FOLDER_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")


def blob_key(brain_id: str, doc_id: str, digest: str) -> str:
    if _FOLDER_ID.fullmatch(doc_id):
        return f"{brain_id}/doc/{doc_id}/{secrets.token_hex(8)}-{digest}"
    return f"{brain_id}/{digest[:2]}/{digest}"


def uploads_folder(brain_id: str) -> str:
    """Where a brain's uploads wait to be ingested: presigned uploads (`upl_…/<name>`), the bytes
    of a queued ingest (by their digest) and its working files (`staging/<job>/`). On AWS the
    bucket's lifecycle expires them; on the embedded store the sweep does (upload_expiry.py)."""
    return f"uploads/{brain_id}/"


def own_folder(doc: Document) -> str | None:
    """The folder that holds every version of `doc`'s bytes and nothing else, or None for a
    document stored at the brain's content address (written before this layout)."""
    folder = f"{doc.brain_id}/doc/{doc.id}/"
    return folder if _FOLDER_ID.fullmatch(doc.id) and doc.blob_key.startswith(folder) else None
