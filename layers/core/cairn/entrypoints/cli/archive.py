"""`cairn export`, `cairn import` (whole brains as JSON lines, gzipped or not) and `cairn compact`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO, cast

from cairn.domain.errors import InvalidInput

if TYPE_CHECKING:
    from cairn.entrypoints.cli.progress import Show
from cairn.entrypoints.cli.common import open_store


def cmd_export(args: argparse.Namespace) -> int:
    """A brain as JSON Lines (services/archive/), to stdout or a file (gzip when it ends in .gz)."""
    import json
    from collections import Counter

    from cairn.services.documents.unreadable import Unreadable

    container = open_store(args, existing=True)
    brain = container.brains.resolve(args.brain)
    counts: Counter[str] = Counter()
    damaged: list[Unreadable] | None = [] if args.skip_damaged else None
    with _archive_out(args.output) as out:
        for record in container.archive.export(brain, damaged=damaged):
            counts[record["kind"]] += 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"exported brain {brain.slug}: {_counts(counts)}", file=sys.stderr)
    if damaged:
        shown = ", ".join(doc.path for doc in damaged[:20]) + (", …" if len(damaged) > 20 else "")
        print(f"left out {len(damaged)} documents whose stored content is damaged: {shown}", file=sys.stderr)
        return 1
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from cairn.ports.chunks import CompactableChunks

    container = open_store(args, existing=True, verified=True)
    chunks = container.adapters.chunks
    if not isinstance(chunks, CompactableChunks):
        print("nothing to compact: this store's search index manages its own storage")
        return 0
    brains = [container.brains.resolve(name) for name in args.brain]
    ids = [brain.id for brain in brains] if brains else chunks.brain_ids()
    names = {brain.id: brain.slug for brain in brains or container.brains.list()}
    refused = 0  # brains not compacted: damaged, or the index shut down under it
    for brain_id in ids:
        done = chunks.compact(brain_id, threads=args.threads)
        if done is None and chunks.vectors_damaged(brain_id):
            refused += 1
            print(
                f"{names.get(brain_id, brain_id)}: not compacted: the brain's vector file is damaged; "
                "run `cairn check` to rebuild what it lost, then compact again"
            )
            continue
        if done is None:
            refused += 1
            print(
                f"{names.get(brain_id, brain_id)}: not compacted: the search index shut down before "
                "it finished; run `cairn compact` again"
            )
            continue
        print(
            f"{names.get(brain_id, brain_id)}: {done.live_rows:,} live vectors, {done.reclaimed:,} dead rows "
            f"reclaimed ({done.rows_before:,} → {done.rows_after:,}), {done.indexed_rows:,} in the index, "
            f"{done.seconds:.1f} s (writes paused {done.writes_paused:.2f} s)"
        )
    return 1 if refused else 0


def cmd_import(args: argparse.Namespace) -> int:
    if args.server:
        return _import_remote(args)
    from cairn.entrypoints.cli.progress import shown

    most = _longest_line(args)
    total = whole_archive(args.file, most) if _rereadable(args.file) else None
    container = open_store(args, existing=False)
    try:
        with _archive_in(args.file, most) as lines, shown("importing", "imported", "records", total) as show:
            report = container.archive.import_(args.brain, _counted(_records(lines), show))
    except OSError as exc:
        raise InvalidInput(f"cannot open {args.file}: {exc.strerror or exc}") from None
    made = " (created)" if report.created_brain else ""
    return say_imported(
        f"{report.brain.slug}{made}",
        report.written,
        report.unchanged,
        report.errors,
        report.kept,
        report.duplicates,
    )


def _import_remote(args: argparse.Namespace) -> int:
    """`--server URL`: the archive restored into a running Cairn (cli/archive_remote.py)."""
    from cairn.entrypoints.cli.archive_remote import import_remote
    from cairn.entrypoints.cli.common import settings_from
    from cairn.entrypoints.cli.remote import RemoteStore

    token = args.token or settings_from(args).token
    secret = token.get_secret_value() if token is not None and not isinstance(token, str) else token
    remote = RemoteStore(args.server, secret)
    most = _longest_line(args)
    if _rereadable(args.file):
        whole_archive(args.file, most)
    try:
        with _archive_in(args.file, most) as lines:
            return import_remote(
                lines, archive=args.file, server=args.server, brain=args.brain, remote=remote
            )
    except OSError as exc:
        raise InvalidInput(f"cannot open {args.file}: {exc.strerror or exc}") from None


def _longest_line(args: argparse.Namespace) -> int:
    """The longest archive line read: what a document within this store's file cap takes."""
    from cairn.entrypoints.cli.common import settings_from
    from cairn.services.archive.records import longest_line

    return longest_line(settings_from(args).max_file_bytes)


@contextmanager
def _archive_out(name: str | None) -> Iterator[TextIO]:
    """stdout, or the file, written beside it and moved into place once complete."""
    if name is None:
        yield sys.stdout
        return
    import os

    path = Path(name)
    partial = path.with_name(path.name + ".partial")
    try:
        try:
            out = _text_file(partial, "w", gzipped=path.suffix == ".gz")
        except OSError as exc:  # no such folder, not writable, a folder
            raise InvalidInput(f"cannot write {name}: {exc.strerror or exc}") from None
        with out:
            yield out
        try:
            os.replace(partial, path)
        except OSError as exc:
            raise InvalidInput(f"cannot write {name}: {exc.strerror or exc}") from None
    finally:
        partial.unlink(missing_ok=True)


def _rereadable(name: str) -> bool:
    """Whether the archive can be read twice (checked whole first): a file, not stdin or a pipe
    (`/dev/stdin`, a FIFO), which the check would consume; those are imported as `-` is."""
    return name != "-" and (not Path(name).exists() or Path(name).is_file())


@contextmanager
def _archive_in(name: str, most: int) -> Iterator[Iterable[str]]:
    """The archive's lines, each decoded on its own: a byte that is not UTF-8 fails the line it is
    on (a text stream decodes a whole buffer at once, so it failed the first line). A line longer
    than `most` bytes fails as it is read, never held whole (records.py `longest_line`)."""
    import gzip

    if name == "-":
        raw = getattr(sys.stdin, "buffer", None)  # none when stdin is already text (replaced)
        yield _decoded(sys.stdin if raw is None else raw, most)
        return
    path = Path(name)
    with gzip.open(path, "rb") if path.suffix == ".gz" else path.open("rb") as f:
        yield _decoded(f, most)


class _Lines(Protocol):
    def readline(self, size: int = -1, /) -> bytes | str: ...


def _decoded(raw: _Lines, most: int) -> Iterator[str]:
    """Each line as text; a byte-order mark an editor put before the first is dropped."""
    n = 0
    while line := raw.readline(most + 1):
        if len(line) > most and line[-1:] not in (b"\n", "\n"):
            raise InvalidInput(
                f"the line is longer than {most:,} bytes, more than a record of a document within "
                "this store's file cap takes (CAIRN_MAX_FILE_BYTES): it is not read"
            )
        yield line if isinstance(line, str) else line.decode("utf-8-sig" if n == 0 else "utf-8")
        n += 1


def _text_file(path: Path, mode: str, *, gzipped: bool) -> TextIO:
    import gzip

    if gzipped:
        return cast(TextIO, gzip.open(path, mode + "t", encoding="utf-8"))
    return cast(TextIO, path.open(mode, encoding="utf-8"))


def _records(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """One JSON object per line (the archive counts the lines and names the one that is not); a
    blank line (an editor's last newline) holds no record and is passed over, as the count does."""
    from cairn.domain import json_input

    read = iter(lines)
    while True:
        try:
            text = next(read)
        except StopIteration:
            return
        except (OSError, EOFError, UnicodeDecodeError) as exc:  # a truncated gzip, not UTF-8, ...
            raise InvalidInput(f"cannot read the archive: {exc}") from None
        if not text.strip():
            continue
        record = json_input.loads(text, what="the record")
        if not isinstance(record, dict):
            raise InvalidInput("not a JSON object")
        yield record


def whole_archive(name: str, most: int) -> int | None:
    """The archive's lines (the progress's total) once it is known whole and every line a record
    (services/archive/service.py `check`): a format-2 archive cut short or miscounted, or one
    holding a line that is not a record, is refused here, before anything is written. None when
    it cannot be read (the import then says why)."""
    import gzip
    import zlib

    from cairn.services.archive.records import not_whole
    from cairn.services.archive.service import check

    first = last = None
    count = read = 0
    try:
        with _archive_in(name, most) as lines:
            for text in lines:
                read += 1
                if text.strip():
                    first = text if first is None else first
                    last, count = text, count + 1
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # a gzip cut short or damaged
        raise InvalidInput(
            f"{name}: the archive cannot be read whole ({exc}); nothing was imported"
        ) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"{name}: line {read + 1} is not UTF-8 (byte {exc.start + 1} of the line); nothing was imported"
        ) from None
    except InvalidInput as exc:  # a line too long
        raise InvalidInput(f"{name}: line {read + 1}: {exc.message}; nothing was imported") from None
    except OSError:
        return None
    header = parsed_object(first)
    if header is not None:
        end = parsed_object(last) if count > 1 else None
        problem = not_whole(header.get("format"), end, count)
        if problem is not None:
            raise InvalidInput(f"{name}: {problem}; nothing was imported: import a whole copy")
    try:
        with _archive_in(name, most) as lines:
            check(_records(lines))
    except InvalidInput as exc:
        raise InvalidInput(f"{exc.message}; nothing was imported") from None
    return count


def parsed_object(text: str | None) -> dict[str, Any] | None:
    """The JSON object a line holds; None when it holds anything else, or is not JSON."""
    from cairn.domain import json_input

    try:
        value = json_input.loads(text or "null")
    except InvalidInput:
        return None
    return value if isinstance(value, dict) else None


def _counted(records: Iterable[dict[str, Any]], show: Show) -> Iterator[dict[str, Any]]:
    """The records, saying how many are restored: the import asks for the next once it has
    restored the one before."""
    for n, record in enumerate(records, start=1):
        yield record
        show(n, "")


def say_imported(
    into: str,
    written: Mapping[str, int],
    unchanged: Mapping[str, int],
    refused: list[str],
    kept: list[str],
    duplicates: list[str],
) -> int:
    """What an import restored (`cairn import`, local or `--server`): the refused, kept and
    duplicate records on stderr, the counts on stdout; the exit code (1 when a record was refused)."""
    for line in refused:
        print(f"refused {line}", file=sys.stderr)
    for line in kept:
        print(f"kept {line}: the brain changed it after the archive was made", file=sys.stderr)
    for line in duplicates:
        print(f"duplicate {line}: the archive holds it twice; the first was restored", file=sys.stderr)
    newer = f"; kept newer: {len(kept)}" if kept else ""
    twice = f"; duplicates in the archive: {len(duplicates)}" if duplicates else ""
    print(
        f"imported into brain {into}: {_counts(written)}; already there: {_counts(unchanged)}; "
        f"refused: {len(refused)}{newer}{twice}"
    )
    return 1 if refused else 0


def _counts(counts: Mapping[str, int]) -> str:
    from cairn.services.archive.records import KINDS

    return ", ".join(f"{counts.get(kind, 0)} {kind}" for kind in KINDS)
