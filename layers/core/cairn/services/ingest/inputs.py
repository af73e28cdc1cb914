"""What ingest takes and answers: its limits, the result of one ingest, the rule for local files,
and the names it gives (tags checked, safe file names, note paths, upload keys)."""

from __future__ import annotations

import hashlib
import posixpath
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from cairn.domain.errors import InvalidInput
from cairn.domain.ids import new_id
from cairn.domain.models import Brain, Document
from cairn.domain.paths import GLOBAL_PREFIX
from cairn.domain.text import check_label, excerpt
from cairn.ports.uploads import UploadSigner
from cairn.services.documents.blob_keys import uploads_folder

INGEST_JOB = "ingest"


MAX_TAG = 64


MAX_TAGS = 64
MAX_HELD_TAGS = 128
MAX_HELD_TAG = 128


MAX_TITLE = 512


MAX_NAME = 200
"""The longest file name ingest keeps as it is."""


UPLOAD_TTL_S = 15 * 60


KIND_TYPE = {
    "markdown": "text/markdown",
    "text": "text/plain",
    "json": "application/json",
    "html": "text/markdown",
    "pdf": "text/markdown",
}


@dataclass(frozen=True)
class IngestResult:
    document_id: str
    path: str
    hash: str
    chunk_count: int
    embedded_count: int
    duration_ms: int
    reused: bool
    status: str = "completed"  # or "queued": `job_id` finishes it and `document` is None until then
    document: Document | None = None
    job_id: str | None = None


@dataclass(frozen=True)
class LocalFilePolicy:
    """Where memory_ingest_file may read: below `root`, or anywhere the process can (stdio)."""

    root: Path | None
    max_bytes: int


def uploads_prefix(brain: Brain) -> str:
    return uploads_folder(brain.id)


def upload_key(signer: UploadSigner, location: str) -> str:
    """The blob key `location` names, refusing what cannot be an upload: the URL of another
    bucket, and anything outside `uploads/` (such as a path on the caller's own disk)."""
    key = location
    if "://" in location:
        named = signer.key_of(location)
        if named is None:
            raise InvalidInput(f"{excerpt(location)} is not an object of this server's upload bucket")
        key = named
    if not key.startswith("uploads/"):
        raise InvalidInput(
            f"{excerpt(key)} is not an upload key: this server ingests files from its upload store. "
            "POST /v1/brains/{brainId}/documents/uploads, send the file to the URL it returns, "
            "then pass its key (uploads/...)"
        )
    return key


def checked_tags(tags: Sequence[str], *, held: bool = False) -> list[str]:
    """Tags as given, repeats dropped. `held`: a document's tags as a brain holds them (a restore),
    within what any surface writes: a ThoughtMCP memory keeps up to 50 keywords and 50 tags of 100
    characters each, commas included, as `kw:…` / `tag:…` tags. Otherwise a tag list coming in here
    is shown comma-joined as metadata.tags, so a tag holding a comma is refused. The limit counts
    distinct tags: canonical memory_remember's comma-joined tags may repeat one many times."""
    most, longest = (MAX_HELD_TAGS, MAX_HELD_TAG) if held else (MAX_TAGS, MAX_TAG)
    tags = list(dict.fromkeys(tags))
    if len(tags) > most:
        raise InvalidInput(f"at most {most} tags")
    for tag in tags:
        if not 1 <= len(tag) <= longest:
            raise InvalidInput(f"each tag must be 1..{longest} characters")
        if "," in tag and not held:
            raise InvalidInput("tags must not contain commas (they are stored comma-joined)")
        check_label("a tag", tag)
    return tags


def checked_title(title: str | None) -> str | None:
    """A title as given, or None: 1..MAX_TITLE characters, no control characters."""
    if title is not None and not 1 <= len(title) <= MAX_TITLE:
        raise InvalidInput(f"title must be 1..{MAX_TITLE} characters")
    return None if title is None else check_label("title", title)


def safe_name(name: str) -> str:
    """A file name usable as one path segment: no separators, no leading dots, letters and digits
    of any script kept. A name that had to change (`a|b.txt`, `...txt`, one over 200 characters)
    gets a digest of itself before its extension (`a-b-1a2b3c4d.txt`), so two files whose names
    clean to the same text never land on one path, and the same name always lands on the same."""
    base = unicodedata.normalize("NFC", posixpath.basename(name.replace("\\", "/")))
    cleaned = re.sub(r"[^\w.()\[\]+,@&'~ -]+", "-", base).strip(" .-")
    if not base:
        return "document"
    if cleaned == base and len(base) <= MAX_NAME:
        return base
    stem, ext = posixpath.splitext(cleaned)
    stem = stem[: MAX_NAME - 20].rstrip(" .-") or "document"
    digest = hashlib.sha256(base.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{stem}-{digest}{ext[:11]}"


def url_path(url: str) -> str:
    """Where a fetched page is stored: `ingest/<host>/<its path>`, so pages of different sites, or
    different pages ending alike, never overwrite each other; a query string adds a digest of
    itself to the last segment (`page-1a2b3c4d.html`), a bare site is its `index`. Fetching the
    same URL again updates the same document."""
    parts = urlsplit(url)
    host = safe_name((parts.hostname or "site") + (f"-{parts.port}" if parts.port else ""))
    segments = [safe_name(unquote(s)) for s in parts.path.split("/") if s.strip(" .")] or ["index"]
    if parts.query:
        stem, ext = posixpath.splitext(segments[-1])
        digest = hashlib.sha256(parts.query.encode("utf-8")).hexdigest()[:8]
        segments[-1] = f"{stem}-{digest}{ext}"
    return "/".join(["ingest", host, *segments[-20:]])


def slug_of(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:60] or "note"


def note_path(seed: str) -> str:
    first_line = seed.strip().splitlines()[0].lstrip("# ") if seed.strip() else "note"
    return f"{GLOBAL_PREFIX}{slug_of(first_line)}-{new_id('n')[-10:]}.md"
