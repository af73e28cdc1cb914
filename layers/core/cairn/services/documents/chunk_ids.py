"""A chunk's id names its document and ordinal, and for a version indexed in the background (a
queued ingest, services/ingest/ingest_steps.py) the stage that indexed it:

| chunk of                        | id                          |
|---------------------------------|-----------------------------|
| a document `doc_<ulid>`         | `chk_<ulid>_<ordinal>`      |
| a memory `mem_<ulid>`           | `chk_mem_<ulid>_<ordinal>`  |
| a staged version of either      | `chk_<…>~<stage>_<ordinal>` |

A staged version's chunks keep their ids once it is activated, and a later write in the
foreground keeps the ids the document's chunks carry (`kept_stage`), so a document's chunks carry
either family, and whatever is keyed by chunk id (concept links: services/mnemosyne/
concept_reach.py) must know which.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

LIVE = ""
"""The stage of chunks indexed in the foreground (`chunk_id`)."""

_CHUNK_ID = re.compile(r"chk_([0-9a-z]+(?:_[0-9a-z]+)?)(?:~([0-9a-z]+))?_(\d+)")
STAGE = re.compile(r"[0-9a-z]+")
"""What a stage may be (a job id's ULID)."""


@dataclass(frozen=True)
class ChunkRef:
    document_id: str
    stage: str  # LIVE, or the stage that indexed it
    ordinal: int


def chunk_id(document_id: str, ordinal: int) -> str:
    """Deterministic per (document, ordinal), so re-indexing overwrites instead of duplicating."""
    return f"chk_{document_id.removeprefix('doc_')}_{ordinal}"


def staged_chunk_id(document_id: str, stage: str, ordinal: int) -> str:
    """A chunk of a version being indexed in the background: apart from the live chunk ids, so the
    live version stays searchable until the staged one is activated."""
    return f"chk_{document_id.removeprefix('doc_')}~{stage}_{ordinal}"


def chunk_id_of(document_id: str, stage: str, ordinal: int) -> str:
    """`chunk_id` for the LIVE stage, else `staged_chunk_id`."""
    return staged_chunk_id(document_id, stage, ordinal) if stage else chunk_id(document_id, ordinal)


def parse_chunk_id(chunk: str) -> ChunkRef | None:
    """The document, stage and ordinal a chunk id names (the inverse of `chunk_id_of`); None for
    any other string."""
    match = _CHUNK_ID.fullmatch(chunk)
    if match is None:
        return None
    inner, stage, ordinal = match.groups()
    return ChunkRef(inner if "_" in inner else f"doc_{inner}", stage or LIVE, int(ordinal))


def document_of_chunk(chunk: str) -> str | None:
    """The id of the document a chunk id belongs to: `chk_<ulid>_3` and `chk_<ulid>~<stage>_3` are
    chunks of `doc_<ulid>`, `chk_mem_<ulid>_0` one of the memory `mem_<ulid>`; None for any other
    string."""
    ref = parse_chunk_id(chunk)
    return ref.document_id if ref else None


def kept_stage(document_id: str, stored: Iterable[str]) -> str:
    """The stage a write in the foreground indexes a document's chunks under: the one its stored
    chunks carry, so a rewrite or a rename of a version a queued ingest indexed keeps their ids (and
    what is keyed by them, as a live version's do); LIVE when they carry live ids, none, or ids of
    more than one stage (a queued ingest under way beside the version it replaces)."""
    stages = {ref.stage for ref in map(parse_chunk_id, stored) if ref and ref.document_id == document_id}
    return next(iter(stages)) if len(stages) == 1 else LIVE
