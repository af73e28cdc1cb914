"""`cairn import FILE --server URL`: a laptop's brain restored into a running Cairn, in parts.

A deployed stack takes at most a few MB per request (Lambda: 6 MB), so the archive goes as parts
of whole lines under PART_BYTES, each led by the archive's header, to POST /v1/archive/import
(entrypoints/rest/archive.py). The server restores record by record and idempotently, so:

- progress is a line per part (records sent, of how many, and what the part wrote);
- a checkpoint beside the archive (`FILE.import-progress`) names the server, the brain and the
  last line the server acknowledged; run the same command again and it starts after that line.
  It is removed once the whole archive is in. A part the server answered but whose answer was
  lost is sent again and changes nothing.

A document or raw row the archive holds twice is sent once (the first line; the server restores
only that one within a part too) and reported as a duplicate, whichever parts the two lines fall in.
The client learns that the server refused a line only after sending its part, so the later copy of
a refused line is not sent either (a local `cairn import` restores that later copy instead).

A line longer than a part (a document of several MB) is sent alone; a server that refuses it as
too large is named with the line, and the import stops there, resumable.
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from cairn.domain.errors import InvalidInput
from cairn.entrypoints.cli.archive import parsed_object, say_imported
from cairn.entrypoints.cli.remote import RemoteError, RemoteStore
from cairn.services.archive.records import ArchiveDuplicates, duplicate_line, not_whole

# A part is restored inside one API call, which API Gateway ends at 29 s: archives carry no
# vectors, so each document is embedded again (on Bedrock, about 8 texts at once at ~0.1 s each).
# 256 KiB is about 550 embeddings, some 7 s; 3 MiB parts were over a minute.
PART_BYTES = 256 * 1024
PART_LINES = 200
_LINE = re.compile(r"^line (\d+)|, as line (\d+)$")


@dataclass
class Checkpoint:
    path: Path | None
    server: str
    brain: str | None
    archive_id: str
    """The archive's header digest: its export's own (it names when it was made), so a progress file
    left by another archive written to the same name is never taken for this one's."""
    done: int = 1
    """The last line (1 = the header) the server has acknowledged."""

    @classmethod
    def load(cls, archive: str, server: str, brain: str | None, header: str) -> Checkpoint:
        archive_id = hashlib.sha256(header.strip().encode("utf-8")).hexdigest()
        if archive == "-":
            return cls(None, server, brain, archive_id)
        path = Path(archive + ".import-progress")
        try:
            saved = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return cls(path, server, brain, archive_id)
        same = (saved.get("server"), saved.get("brain"), saved.get("archive")) == (server, brain, archive_id)
        if not same or not isinstance(saved.get("done"), int):
            return cls(path, server, brain, archive_id)  # another target or archive: start over
        return cls(path, server, brain, archive_id, done=saved["done"])

    def save(self, done: int) -> None:
        self.done = done
        if self.path is not None:
            data = {"server": self.server, "brain": self.brain, "archive": self.archive_id, "done": done}
            partial = self.path.with_name(self.path.name + ".partial")
            partial.write_text(json.dumps(data), encoding="utf-8")
            partial.replace(self.path)

    def finish(self) -> None:
        if self.path is not None:
            self.path.unlink(missing_ok=True)


def import_remote(
    lines: Iterable[str], *, archive: str, server: str, brain: str | None, remote: RemoteStore
) -> int:
    """Send the archive's lines in parts (module docstring); 0 when all are in and none refused."""
    read = iter(lines)
    header = next(read, None)
    if header is None or not header.strip():
        raise InvalidInput("line 1: the archive is empty: it has no header")
    checkpoint = Checkpoint.load(archive, server, brain, header)
    if checkpoint.done > 1:
        print(f"resuming after line {checkpoint.done:,} (from {checkpoint.path})", file=sys.stderr)
    written: Counter[str] = Counter()
    unchanged: Counter[str] = Counter()
    refused: list[str] = []
    kept: list[str] = []
    duplicates: list[str] = []
    target = None
    seen = _Tail(read)
    for first, part in _unless_unreadable(
        _parts(seen, header.rstrip("\n"), skip_to=checkpoint.done, duplicates=duplicates), seen
    ):
        answer = _send(remote, part, brain, first)
        target = answer["brain"]["slug"]
        seen.into = f"{target} on {server}"
        written.update(answer["written"])
        unchanged.update(answer["unchanged"])
        refused += [_renumber(error, first) for error in answer["errors"]]
        kept += [_renumber(line, first) for line in answer.get("kept", [])]
        duplicates += [_renumber(line, first) for line in answer.get("duplicates", [])]
        last = max(first + len(part) - 2, checkpoint.done)
        checkpoint.save(last)
        made = ", ".join(f"{n} {kind}" for kind, n in sorted(answer["written"].items())) or "nothing new"
        print(f"lines {first:,}-{last:,} into {target}: {made}", file=sys.stderr, flush=True)
    problem = not_whole((parsed_object(header) or {}).get("format"), parsed_object(seen.last), seen.count + 1)
    if problem is not None:  # a file was checked before anything was sent; stdin only now
        raise InvalidInput(
            f"{problem}; the lines before it were imported into {target or brain or '?'} on {server}, "
            "which holds an incomplete copy: import a whole copy of the archive"
        )
    checkpoint.finish()
    into = f"{target or brain or '?'} on {server}"
    return say_imported(into, written, unchanged, refused, kept, duplicates)


def _parts(
    read: Iterable[str], header: str, *, skip_to: int, duplicates: list[str]
) -> Iterator[tuple[int, list[str]]]:
    """(the archive line of the part's first record, [header, records...]) under the size caps;
    a record of a document or raw row an earlier line holds (those acknowledged before included)
    is left out and added to `duplicates`."""
    met = ArchiveDuplicates()
    part: list[str] = [header]
    size = len(header.encode("utf-8"))
    first = line = 1
    for raw in read:
        line += 1
        text = raw.rstrip("\n")
        if not text.strip() or _again(met, line, text, duplicates) or line <= skip_to:
            continue
        length = len(text.encode("utf-8")) + 1
        if len(part) > 1 and (size + length > PART_BYTES or len(part) > PART_LINES):
            yield first, part
            part, size = [header], len(header.encode("utf-8"))
        if len(part) == 1:
            first = line
        part.append(text)
        size += length
    if len(part) > 1 or first == 1:  # nothing sent yet: the header alone (an empty brain, or checked)
        yield max(first, 2) if len(part) > 1 else line + 1, part


def _again(met: ArchiveDuplicates, line: int, text: str, duplicates: list[str]) -> bool:
    """Whether an earlier line holds the same document or raw row (reported in `duplicates`; a
    line that is not a record is the server's to refuse)."""
    record = parsed_object(text) if '"document"' in text or '"raw"' in text else None
    if record is None:
        return False
    path, source = record.get("path"), record.get("source")
    first = met.earlier(line, record.get("kind"), path, source)
    if first is None:
        return False
    duplicates.append(duplicate_line(line, path, source if record.get("kind") == "raw" else None, first))
    return True


Parts = Iterator[tuple[int, list[str]]]


def _unless_unreadable(parts: Parts, seen: _Tail) -> Parts:
    """The parts, until a line cannot be read (not UTF-8, longer than any record: a file was
    checked before anything was sent; stdin only now): said with what the server already holds."""
    try:
        yield from parts
    except (InvalidInput, UnicodeDecodeError) as exc:
        why = exc.message if isinstance(exc, InvalidInput) else f"not UTF-8 (byte {exc.start + 1})"
        then = (
            "nothing was imported"
            if seen.into is None
            else f"the lines before it were sent to {seen.into}, which holds an incomplete copy"
        )
        where = f"line {seen.lines + 2}"
        raise InvalidInput(f"{where}: {why}; {then}: import a whole copy of the archive") from None


class _Tail:
    """The archive's lines after the header, passed on, keeping how many were read, how many were
    not blank and the last."""

    def __init__(self, read: Iterator[str]) -> None:
        self.read = read
        self.into: str | None = None
        """Where the lines sent went (the brain the server answered with); None before any was."""
        self.lines = 0
        self.count = 0
        self.last: str | None = None

    def __iter__(self) -> Iterator[str]:
        for text in self.read:
            self.lines += 1
            if text.strip():
                self.count += 1
                self.last = text
            yield text


def _send(remote: RemoteStore, part: list[str], brain: str | None, first: int) -> dict[str, Any]:
    url = "/v1/archive/import" + (f"?brain={quote(brain, safe='')}" if brain else "")
    body = ("\n".join(part) + "\n").encode("utf-8")
    response = remote.send("POST", url, content=body, headers={"content-type": "application/x-ndjson"})
    if response.status_code == 413:
        raise RemoteError(
            "payload_too_large",
            f"the part from line {first:,} ({len(body):,} bytes) is over the server's request limit; "
            "a record that large (a document of several MB) cannot go through this import: ingest "
            "that file with `cairn ingest --server`, then run the import again to go on",
        )
    try:
        return remote.json(response)
    except RemoteError as exc:
        raise RemoteError(exc.code, f"the part from line {first:,}: {exc.message}") from None


def _renumber(error: str, first: int) -> str:
    """A refusal's line within the part (the header is its line 1) as the archive's line (and a
    duplicate's first line too)."""

    def archive_line(m: re.Match[str]) -> str:
        at = m.group(1) or m.group(2)
        return m.group(0).replace(at, str(first + int(at) - 2))

    return _LINE.sub(archive_line, error)
