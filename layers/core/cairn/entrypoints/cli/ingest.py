"""`cairn ingest`: files and folders into a brain, in groups, with progress; or to a running
server (`--server`, remote.py)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

from cairn.domain.errors import CairnError, NoBrain
from cairn.domain.models import Brain
from cairn.entrypoints.cli.check import settle

if TYPE_CHECKING:
    from cairn.container import Container
from cairn.entrypoints.cli.common import brain_of, say_brain, settings_from
from cairn.entrypoints.cli.opened import opened


def _files(paths: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """Every file under the given paths, with the document path it is stored at. A folder is
    walked without recursion (any depth) and without following links to folders; a link to a file
    outside the folder is skipped, said on stderr: a folder someone else filled (a cloned repo)
    must not pull in `~/.ssh/id_rsa`."""
    for raw in paths:
        root = Path(raw)
        if not root.is_dir():
            yield root, f"ingest/{root.name}"
            continue
        inside = root.resolve()
        found: list[Path] = []
        for folder, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            found += (Path(folder) / n for n in names if not n.startswith("."))
        for file in sorted(found):
            if file.is_symlink() and not file.resolve().is_relative_to(inside):
                print(f"skipped {file}: a link to a file outside {raw}", file=sys.stderr)
            elif file.is_file():
                yield file, f"ingest/{inside.name}/{file.relative_to(root).as_posix()}"


GROUP_FILES = 512


GROUP_BYTES = 8 * 1024 * 1024
"""Files read and ingested by one `ingest_files` call (its pipeline drains at the end of each:
with 512 KiB groups that idled a core ~0.15 s per group)."""


Tick = Callable[[int, "Ingested"], None]  # the n-th file of a group is done


Ingested = tuple[bool, int] | CairnError  # (reused, chunks written), or why the file failed


def cmd_ingest(args: argparse.Namespace) -> int:
    files = list(_files(args.paths))
    if args.server:
        return _ingest_remote(args, files)
    from cairn.bootstrap import build_container
    from cairn.bootstrap.models import for_bulk
    from cairn.services.ingest.inputs import IngestResult, LocalFilePolicy

    container = opened(build_container(for_bulk(settings_from(args))))
    settle(container)
    try:
        brain = brain_of(container, args.brain, writes=True, create=args.create)
    except NoBrain as exc:
        raise NoBrain(f"{exc.message} (or pass --create)") from None
    policy = LocalFilePolicy(root=None, max_bytes=container.options.limits.max_file_bytes)
    if args.collection is not None:
        files = _into_collection(container, brain, args.collection, files)

    def ingest(group: list[tuple[Path, str]], tick: Tick) -> None:
        def settled(n: int, r: IngestResult | CairnError) -> None:
            tick(n, (r.reused, r.embedded_count) if isinstance(r, IngestResult) else r)

        container.ingest.ingest_files(brain, [(str(f), target) for f, target in group], policy, settled)

    return _ingest_all(brain.slug, files, ingest, lambda: 0.0)


def _groups(files: list[tuple[Path, str]]) -> Iterator[list[tuple[Path, str]]]:
    group: list[tuple[Path, str]] = []
    size = 0
    for file, target in files:
        with suppress(OSError):  # the ingest reports it
            size += file.stat().st_size
        group.append((file, target))
        if len(group) >= GROUP_FILES or size >= GROUP_BYTES:
            yield group
            group, size = [], 0
    if group:
        yield group


def _into_collection(
    container: Container, brain: Brain, name: str, files: list[tuple[Path, str]]
) -> list[tuple[Path, str]]:
    """The files placed under the collection's folder (the collection made when it is new)."""
    library = container.libraries.library(brain.id)
    collection = container.libraries.collection_named(library, name)
    if collection is None:
        collection = container.libraries.create_collection(library, name)
        print(f"created collection {collection.name!r} ({collection.uid})", file=sys.stderr)
    return [(file, f"{collection.folder}/{target.removeprefix('ingest/')}") for file, target in files]


def _ingest_remote(args: argparse.Namespace, files: list[tuple[Path, str]]) -> int:
    from cairn.entrypoints.cli.remote import RemoteStore

    token = args.token or settings_from(args).token
    secret = token.get_secret_value() if token is not None and not isinstance(token, str) else token
    remote = RemoteStore(args.server, secret)
    brain = remote.brain(args.brain, create=args.create)
    say_brain(args.brain, str(brain["slug"]))

    def ingest(group: list[tuple[Path, str]], tick: Tick) -> None:
        for n, (file, target) in enumerate(group):
            try:
                result = remote.upload(str(brain["id"]), file, target)
            except CairnError as exc:
                tick(n, exc)
                continue
            tick(n, (bool(result.get("reused")), int(result.get("embedded_count") or 0)))

    return _ingest_all(str(brain["slug"]), files, ingest, lambda: remote.waited_s, group_files=1)


def _ingest_all(
    slug: str,
    files: list[tuple[Path, str]],
    ingest: Callable[[list[tuple[Path, str]], Tick], None],
    waited_s: Callable[[], float],
    *,
    group_files: int = GROUP_FILES,
) -> int:
    """Ingest every file, in groups, with progress (files, chunks, chunks/s: progress.py); a file
    that fails is reported and the rest go on."""
    import time

    from cairn.entrypoints.cli.progress import shown
    from cairn.services.ingest.inputs import safe_name

    counts = {"created": 0, "reused": 0, "failed": 0}
    failures: list[str] = []
    chunks = 0
    started = time.perf_counter()
    with shown(f"ingesting into {slug}", "ingested", "files", len(files)) as show:
        groups = _groups(files) if group_files > 1 else ([f] for f in files)
        for group in groups:
            named = [(file, "/".join(safe_name(p) for p in target.split("/"))) for file, target in group]

            def tick(n: int, done: Ingested, group: list[tuple[Path, str]] = group) -> None:
                nonlocal chunks
                if isinstance(done, CairnError):
                    counts["failed"] += 1
                    failures.append(f"{group[n][0]}: {done.code}: {done.message}")
                else:
                    counts["reused" if done[0] else "created"] += 1
                    chunks += done[1]
                rate = chunks / max(time.perf_counter() - started, 1e-9)
                show(sum(counts.values()), f"{chunks} chunks, {rate:.1f} chunks/s")

            ingest(named, tick)
    seconds = time.perf_counter() - started
    for line in failures:
        print(f"failed {line}", file=sys.stderr)
    if waited_s() > 0:
        print(f"waited {waited_s():.0f} s for the server's rate limit (Retry-After)", file=sys.stderr)
    print(
        f"{chunks} chunks in {seconds:.1f} s ({chunks / max(seconds, 1e-9):.1f} chunks/s); "
        f"created {counts['created']}, reused {counts['reused']}, failed {counts['failed']}"
    )
    return 1 if counts["failed"] else 0
