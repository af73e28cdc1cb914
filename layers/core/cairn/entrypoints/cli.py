"""The `cairn` command: serve, mcp (stdio), ingest, search, brains, export, import, keys, erase."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, cast

from cairn import __version__
from cairn.auth.principal import SCOPES as KEY_SCOPES
from cairn.config import Settings
from cairn.domain.errors import CairnError, InvalidInput, NoBrain, Unavailable
from cairn.domain.libraries import LIBRARY_TYPES
from cairn.domain.models import Brain
from cairn.entrypoints.cli_check import add_check_parser, cmd_check, settle, start_repairs
from cairn.entrypoints.cli_erasure import add_erase_parser, cmd_erase
from cairn.services.brains import is_slug

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.services.memory.schedule import ConsolidationSchedule
    from cairn.services.mnemosyne.libraries import Library

STORE_FILE = "records.sqlite3"


class NoStore(CairnError):
    code = "no_store"


def _settings(args: argparse.Namespace, **extra: object) -> Settings:
    overrides: dict[str, object] = {k: v for k, v in extra.items() if v is not None}
    if getattr(args, "data_dir", None) is not None:
        overrides["data_dir"] = args.data_dir
    return Settings(**overrides)  # type: ignore[arg-type]


def _open(args: argparse.Namespace, *, existing: bool, settled: bool = True) -> Container:
    """The store in the data directory. A command that only reads it (`existing`) refuses a
    directory holding no store instead of creating an empty one there (a mistyped --data-dir).
    What a stopped process left unindexed is indexed first, unless not `settled`."""
    from cairn.bootstrap import build_container

    settings = _settings(args)
    if existing and settings.backend == "local" and not (settings.data_dir / STORE_FILE).is_file():
        raise NoStore(
            f"no Cairn store in {settings.data_dir.resolve()}: check --data-dir (or CAIRN_DATA_DIR); "
            "`cairn serve`, `cairn ingest` and `cairn brains create` make one"
        )
    container = build_container(settings)
    if settled:
        settle(container)
    return container


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from cairn.bootstrap import build_container
    from cairn.bootstrap.options import auth_options
    from cairn.entrypoints.http import create_app
    from cairn.ports.chunks import CompactableChunks
    from cairn.services.documents.index_sweeper import IndexSweeper

    settings = _settings(
        args, host=args.host, port=args.port, token=args.token, allow_open=args.allow_open or None
    )
    open_serving = auth_options(settings).open
    if not open_serving and settings.token is None and settings.jwt_issuer is None:
        print(
            f"error: refusing to serve {settings.host} without authentication: give --token "
            "(or CAIRN_TOKEN), configure CAIRN_JWT_ISSUER, bind 127.0.0.1, or pass --allow-open",
            file=sys.stderr,
        )
        return 2
    container = build_container(settings)
    settle(container)
    start_repairs(container)
    app = create_app(container)
    threading.Thread(target=container.erasure.resume, daemon=True).start()  # one a crash left running
    # Load the embedding model while uvicorn starts, so /healthz answers at once and the
    # first search does not pay for the load.
    threading.Thread(target=container.adapters.embedder.embed, args=(["warm up"],), daemon=True).start()
    chunks = container.adapters.chunks
    if isinstance(chunks, CompactableChunks):  # big brains' vector indexes and rows, likewise
        threading.Thread(target=chunks.warm, daemon=True).start()
    auth = "none (open)" if open_serving else "required"
    print(
        f"cairn {__version__} serving on http://{settings.host}:{settings.port} "
        f"(data: {settings.data_dir.resolve()}; authentication: {auth})"
    )
    schedule = _schedule(container)
    sweeper = IndexSweeper(container.documents)
    container.jobs.start_worker()
    sweeper.start()
    if schedule is not None:
        schedule.start()
    try:
        # A listing's documented dir + glob + cursor fit in a request line only above h11's 16 KiB.
        uvicorn.run(
            app,
            host=settings.host,
            port=settings.port,
            log_level=args.log_level,
            h11_max_incomplete_event_size=64 * 1024,
        )
    finally:
        if schedule is not None:
            schedule.stop()
        sweeper.stop()
        container.repair.stop()
        container.jobs.stop_worker()
        if container.search.access is not None:
            container.search.access.flush()
    return 0


def _schedule(container: Container) -> ConsolidationSchedule | None:
    from cairn.services.memory.schedule import ConsolidationSchedule

    every = container.options.consolidate_every_s
    if every is None:
        return None
    print(f"consolidating every brain every {every:g} s")
    return ConsolidationSchedule(container.brains, container.consolidation, container.adapters.clock, every)


def cmd_mcp(args: argparse.Namespace) -> int:
    from cairn.bootstrap import build_container
    from cairn.entrypoints.mcp.registry import require_surface
    from cairn.entrypoints.mcp.stdio import run_stdio
    from cairn.services.documents.index_sweeper import IndexSweeper

    require_surface(args.surface)  # fail before opening the store
    settings = _settings(args)
    container = build_container(settings)
    print(f"cairn mcp ({args.surface}): data in {settings.data_dir.resolve()}", file=sys.stderr)
    settle(container)
    start_repairs(container)
    sweeper = IndexSweeper(container.documents)
    container.jobs.start_worker()  # extraction and queued ingests run while the session lasts
    sweeper.start()
    try:
        run_stdio(container, surface=args.surface)
    finally:
        sweeper.stop()
        container.repair.stop()
        container.jobs.stop_worker()
    return 0


def _files(paths: Sequence[str]) -> Iterator[tuple[Path, str]]:
    """Every file under the given paths, with the document path it is stored at."""
    for raw in paths:
        root = Path(raw)
        if root.is_dir():
            for file in sorted(
                p for p in root.rglob("*") if p.is_file() and not _hidden(p.relative_to(root))
            ):
                yield file, f"ingest/{root.resolve().name}/{file.relative_to(root).as_posix()}"
        else:
            yield root, f"ingest/{root.name}"


def _hidden(rel: Path) -> bool:
    return any(part.startswith(".") for part in rel.parts)


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
    from cairn.services.ingest.service import IngestResult, LocalFilePolicy

    container = build_container(for_bulk(_settings(args)))
    settle(container)
    brain = _brain(container, args.brain, writes=True, create=args.create)
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
    from cairn.entrypoints.cli_remote import RemoteStore

    token = args.token or _settings(args).token
    secret = token.get_secret_value() if token is not None and not isinstance(token, str) else token
    remote = RemoteStore(args.server, secret)
    brain = remote.brain(args.brain, create=args.create)
    _say_brain(args.brain, str(brain["slug"]))

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
    """Ingest every file, in groups, with a progress bar showing files and chunks/s; a file that
    fails is reported and the rest go on."""
    import time

    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cairn.services.ingest.service import safe_name

    console = Console(stderr=True)
    counts = {"created": 0, "reused": 0, "failed": 0}
    failures: list[str] = []
    chunks = 0
    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("files, {task.fields[chunks]} chunks, {task.fields[rate]:.1f} chunks/s"),
        TimeElapsedColumn(),
    )
    started = time.perf_counter()
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"ingesting into {slug}", total=len(files), chunks=0, rate=0.0)
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
                progress.update(task, advance=1, chunks=chunks, rate=rate)

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


def cmd_search(args: argparse.Namespace) -> int:
    container = _open(args, existing=True)
    brain = _brain(container, args.brain)
    try:
        result = container.search.search(brain, args.query, top_k=args.top_k)
    except Unavailable:  # its index needs rebuilding, and no server is doing it here: do it now
        print(f"rebuilding the search index of brain {brain.slug} first", file=sys.stderr)
        container.repair.check(brain)
        result = container.search.search(brain, args.query, top_k=args.top_k)
    for n, hit in enumerate(result.hits, start=1):
        preview = " ".join(hit.content.split())[:200]
        print(f"#{n} score={hit.score:.4f} {hit.path}\n   {preview}")
    print(f"{len(result.hits)} hit(s) in {result.took_ms:.1f} ms")
    return 0


def cmd_brains(args: argparse.Namespace) -> int:
    command = getattr(args, "brains_command", None) or "list"
    if command == "create":
        container = _open(args, existing=False)
        brain = container.brains.create(args.name, slug=args.slug, visibility=args.visibility)
        library = _describe_library(container, brain.id, args)
        kind = f", {library.library_type} library" if library is not None else ""
        print(f"created brain {brain.slug} ({brain.id}, {brain.visibility.value}{kind})")
        return 0
    container = _open(args, existing=True)
    if command == "delete":
        from cairn.entrypoints.cli_erasure import delete_brain

        return delete_brain(container, args.brain, yes=args.yes)
    if command == "update":
        described = _describe_library(container, args.brain, args)
        if described is not None and args.visibility is None and args.owner is None and args.tenant is None:
            brain = described.brain
        else:
            brain = container.brains.update(
                args.brain, visibility=args.visibility, owner=args.owner, tenant=args.tenant
            )
        print(f"{brain.slug}: {brain.visibility.value}, owner {brain.owner_tenant}/{brain.owner or '*'}")
        return 0
    brains = container.brains.list()
    for b in brains:
        owner = f"{b.owner_tenant}/{b.owner or '*'}"
        print(f"{b.id}  {b.slug:<32} {b.visibility.value:<8} {owner:<24} {b.name}")
    if not brains:
        print("no brains yet: create one with `cairn brains create NAME`")
    return 0


def _describe_library(container: Container, ref: str, args: argparse.Namespace) -> Library | None:
    """Set the brain's library type, description or workspace when the command gives any."""
    fields = {
        "library_type": args.library_type,
        "description": args.description,
        "workspace_id": args.workspace,
    }
    if all(value is None for value in fields.values()):
        return None
    return container.libraries.describe(ref, **fields)


def cmd_collections(args: argparse.Namespace) -> int:
    container = _open(args, existing=args.collections_command != "create")
    if args.collections_command == "create":
        library = container.libraries.library(container.brains.get(args.brain).id)
        made = container.libraries.create_collection(
            library, args.name, description=args.description or "", folder=args.folder
        )
        where = f"in {library.brain.slug}: its items live under {made.folder}/"
        print(f"created collection {made.name!r} ({made.uid}) {where}")
        return 0
    libraries = container.libraries.libraries()
    if args.brain is not None:
        libraries = [lib for lib in libraries if args.brain in (lib.uid, lib.brain.slug)]
    found = container.libraries.collections(libraries)
    for col in found:
        print(f"{col.uid}  {col.library.brain.slug:<24} {col.folder + '/':<32} {col.name}")
    if not found:
        print("no collections yet: create one with `cairn collections create BRAIN NAME`")
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    """A brain as JSON Lines (services/archive.py), to stdout or a file (gzip when it ends in .gz)."""
    import json
    from collections import Counter

    container = _open(args, existing=True)
    brain = container.brains.resolve(args.brain)
    counts: Counter[str] = Counter()
    with _archive_out(args.output) as out:
        for record in container.archive.export(brain):
            counts[record["kind"]] += 1
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"exported brain {brain.slug}: {_counts(counts)}", file=sys.stderr)
    return 0


def cmd_compact(args: argparse.Namespace) -> int:
    from cairn.ports.chunks import CompactableChunks

    container = _open(args, existing=True)
    chunks = container.adapters.chunks
    if not isinstance(chunks, CompactableChunks):
        print("nothing to compact: this store's search index manages its own storage")
        return 0
    brains = [container.brains.resolve(name) for name in args.brain]
    ids = [brain.id for brain in brains] if brains else chunks.brain_ids()
    names = {brain.id: brain.slug for brain in brains or container.brains.list()}
    for brain_id in ids:
        done = chunks.compact(brain_id, threads=args.threads)
        if done is None:
            print(f"{names.get(brain_id, brain_id)}: stopped before it finished")
            continue
        print(
            f"{names.get(brain_id, brain_id)}: {done.live_rows:,} live vectors, {done.reclaimed:,} dead rows "
            f"reclaimed ({done.rows_before:,} → {done.rows_after:,}), {done.indexed_rows:,} in the index, "
            f"{done.seconds:.1f} s (writes paused {done.writes_paused:.2f} s)"
        )
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    container = _open(args, existing=False)
    try:
        with _archive_in(args.file) as lines:
            report = container.archive.import_(args.brain, _records(lines))
    except OSError as exc:
        raise InvalidInput(f"cannot open {args.file}: {exc.strerror or exc}") from None
    for line in report.errors:
        print(f"refused {line}", file=sys.stderr)
    made = " (created)" if report.created_brain else ""
    print(
        f"imported into brain {report.brain.slug}{made}: {_counts(report.written)}; "
        f"already there: {_counts(report.unchanged)}; refused: {len(report.errors)}"
    )
    return 1 if report.errors else 0


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
        with _text_file(partial, "w", gzipped=path.suffix == ".gz") as out:
            yield out
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


@contextmanager
def _archive_in(name: str) -> Iterator[Iterable[str]]:
    if name == "-":
        yield sys.stdin
        return
    path = Path(name)
    with _text_file(path, "r", gzipped=path.suffix == ".gz") as f:
        yield f


def _text_file(path: Path, mode: str, *, gzipped: bool) -> TextIO:
    import gzip

    if gzipped:
        return cast(TextIO, gzip.open(path, mode + "t", encoding="utf-8"))
    return cast(TextIO, path.open(mode, encoding="utf-8"))


def _records(lines: Iterable[str]) -> Iterator[dict[str, Any]]:
    """One JSON object per line (the archive counts the lines and names the one that is not)."""
    import json

    read = iter(lines)
    while True:
        try:
            text = next(read)
        except StopIteration:
            return
        except (OSError, EOFError, UnicodeDecodeError) as exc:  # a truncated gzip, not UTF-8, ...
            raise InvalidInput(f"cannot read the archive: {exc}") from None
        try:
            record = json.loads(text)
        except ValueError as exc:
            raise InvalidInput(f"not JSON: {exc}") from None
        if not isinstance(record, dict):
            raise InvalidInput("not a JSON object")
        yield record


def _counts(counts: Mapping[str, int]) -> str:
    from cairn.services.archive import KINDS

    return ", ".join(f"{counts.get(kind, 0)} {kind}" for kind in KINDS)


def cmd_keys(args: argparse.Namespace) -> int:
    """API keys: stored as hashes in the data directory's records; the key is printed once."""
    from cairn.auth.api_keys import ApiKeyService

    container = _open(args, existing=args.keys_command != "create")
    keys = ApiKeyService(container.adapters.records, container.adapters.clock)
    if args.keys_command == "create":
        brains = container.brains.for_key(args.brain, args.tenant) if args.brain else None
        created = keys.create(name=args.name, tenant=args.tenant, scopes=args.scope, brains=brains)
        print(f"{created.key.id} created for tenant {created.key.tenant}: {' '.join(created.key.scopes)}")
        print(f"key (shown once, store it now): {created.plaintext}")
    elif args.keys_command == "list":
        listed = keys.list(args.tenant)
        for k in listed:
            state = "active" if k.active else f"revoked {k.revoked_at:%Y-%m-%d}"
            allowed = ",".join(k.brains) if k.brains is not None else "*"
            scopes = " ".join(k.scopes)
            print(f"{k.id}  …{k.last4}  {k.tenant:<20} {k.name:<24} {scopes}  brains={allowed}  {state}")
        if not listed:
            print("no API keys")
    else:
        revoked = keys.revoke(args.key_id)
        print(f"{revoked.id} revoked")
    return 0


def _brain(container: Container, ref: str | None, *, writes: bool = False, create: bool = False) -> Brain:
    """The brain a command acts on, said on stderr: `ref` (created when `create`), else the
    default or first brain, else, for a command that `writes`, a new `default` brain."""
    try:
        brain = container.brains.resolve(ref)
    except NoBrain:
        if ref is None and writes:
            brain = container.brains.create("default", slug="default")
        elif ref is None:
            raise NoBrain("no brain exists yet: create one with `cairn brains create NAME`") from None
        elif create:
            brain = container.brains.create(ref, slug=ref if is_slug(ref) else None)
        else:
            raise NoBrain(
                f"no brain matches {ref!r}: create it with `cairn brains create {ref}` (or pass --create)"
            ) from None
    _say_brain(ref, brain.slug)
    return brain


def _say_brain(ref: str | None, slug: str) -> None:
    print(f"brain: {slug}" + ("" if ref else " (no --brain given: the default brain)"), file=sys.stderr)


def _top_k(value: str) -> int:
    try:
        top_k = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, not {value!r}") from None
    if not 1 <= top_k <= 100:
        raise argparse.ArgumentTypeError(f"must be between 1 and 100, not {top_k}")
    return top_k


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cairn", description="Cairn: memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"cairn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def data_dir(p: argparse.ArgumentParser, default: object = None) -> None:
        p.add_argument(
            "--data-dir",
            type=Path,
            default=default,
            help="data directory (default: CAIRN_DATA_DIR, else your user data directory, "
            "e.g. ~/.local/share/cairn)",
        )

    serve = sub.add_parser("serve", help="run the HTTP server (MCP at /mcp, REST under /v1)")
    serve.add_argument("--host", default=None, help="bind address (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8080)")
    serve.add_argument("--token", default=None, help="require this bearer token (or CAIRN_TOKEN)")
    serve.add_argument(
        "--allow-open", action="store_true", help="serve without authentication on a non-loopback address"
    )
    serve.add_argument(
        "--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"]
    )
    data_dir(serve)
    serve.set_defaults(func=cmd_serve)

    from cairn.entrypoints.mcp.registry import DEFAULT_SURFACE, SURFACES

    mcp = sub.add_parser("mcp", help="serve MCP over stdio")
    mcp.add_argument("--surface", default=DEFAULT_SURFACE, choices=list(SURFACES))
    data_dir(mcp)
    mcp.set_defaults(func=cmd_mcp)

    ingest = sub.add_parser("ingest", help="ingest files and directories (recursively)")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--brain", default=None, help="brain id or slug (default: the default brain)")
    ingest.add_argument("--create", action="store_true", help="create the --brain when it does not exist")
    ingest.add_argument(
        "--collection", default=None, help="put the files in this collection of the brain (made when new)"
    )
    ingest.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="upload to a running Cairn (e.g. http://127.0.0.1:8080) instead of opening the data directory",
    )
    ingest.add_argument("--token", default=None, help="bearer token for --server (default CAIRN_TOKEN)")
    data_dir(ingest)
    ingest.set_defaults(func=cmd_ingest)

    search = sub.add_parser("search", help="search a brain")
    search.add_argument("query")
    search.add_argument("--brain", default=None)
    search.add_argument("--top-k", type=_top_k, default=10, metavar="1..100")
    data_dir(search)
    search.set_defaults(func=cmd_search)

    brains = sub.add_parser("brains", help="list, create and update brains (default: list)")
    data_dir(brains)
    brains_sub = brains.add_subparsers(dest="brains_command")
    listing = brains_sub.add_parser("list", help="list brains with their owner and visibility")
    new_brain = brains_sub.add_parser("create", help="create a brain")
    new_brain.add_argument("name")
    new_brain.add_argument("--slug", default=None, help="default: from the name")
    new_brain.add_argument("--visibility", default=None, choices=["private", "tenant", "public"])
    update = brains_sub.add_parser(
        "update", help="change a brain's visibility, owner, tenant or library fields"
    )
    update.add_argument("brain", help="brain id or slug")
    update.add_argument("--visibility", default=None, choices=["private", "tenant", "public"])
    update.add_argument("--owner", default=None, help="the subject that owns it (the local owner is `local`)")
    update.add_argument("--tenant", default=None, help="move it to this tenant")
    for p in (new_brain, update):
        p.add_argument("--library-type", default=None, choices=LIBRARY_TYPES, help="its type as a library")
        p.add_argument("--description", default=None, help="its description as a library")
        p.add_argument("--workspace", default=None, help="the workspace it belongs to ('' for none)")
    deletion = brains_sub.add_parser("delete", help="delete a brain and everything it holds (asks first)")
    deletion.add_argument("brain", help="brain id or slug")
    deletion.add_argument("--yes", action="store_true", help="do not ask to confirm")
    for p in (listing, new_brain, update, deletion):
        data_dir(p, default=argparse.SUPPRESS)  # `cairn brains --data-dir D list` keeps D
    brains.set_defaults(func=cmd_brains)

    erase = add_erase_parser(sub)
    data_dir(erase)
    erase.set_defaults(func=lambda args: cmd_erase(_open(args, existing=True), args))

    collections = sub.add_parser("collections", help="list and create collections of a library")
    data_dir(collections)
    collections_sub = collections.add_subparsers(dest="collections_command")
    col_list = collections_sub.add_parser("list", help="list collections")
    col_list.add_argument("--brain", default=None, help="only this brain's (id or slug)")
    col_new = collections_sub.add_parser("create", help="create a collection")
    col_new.add_argument("brain", help="brain id or slug")
    col_new.add_argument("name")
    col_new.add_argument("--description", default=None)
    col_new.add_argument("--folder", default=None, help="where its items live (default collections/<name>)")
    for p in (col_list, col_new):
        data_dir(p, default=argparse.SUPPRESS)  # `cairn collections --data-dir D list` keeps D
    collections.set_defaults(func=cmd_collections, collections_command="list", brain=None)

    export = sub.add_parser("export", help="write a brain's archive as JSON Lines (backup)")
    export.add_argument("brain", help="brain id or slug")
    export.add_argument("-o", "--output", default=None, metavar="FILE", help="default stdout; .gz: gzip")
    data_dir(export)
    export.set_defaults(func=cmd_export)

    compact = sub.add_parser(
        "compact", help="reclaim dead vector rows and rebuild the vector index of brains (default: all)"
    )
    compact.add_argument("brain", nargs="*", help="brain ids or slugs")
    compact.add_argument(
        "--threads", type=int, default=None, help="index build threads (default: every core)"
    )
    data_dir(compact)
    compact.set_defaults(func=cmd_compact)

    check = add_check_parser(sub)
    data_dir(check)
    check.set_defaults(
        func=lambda args: cmd_check(_open(args, existing=True, settled=not args.dry_run), args)
    )

    restore = sub.add_parser("import", help="restore a brain from an archive `cairn export` wrote")
    restore.add_argument("file", metavar="FILE", help="the archive; - for stdin; .gz: gzip")
    restore.add_argument(
        "--brain", default=None, help="restore into this brain (default: the archive's slug)"
    )
    data_dir(restore)
    restore.set_defaults(func=cmd_import)

    keys = sub.add_parser("keys", help="create, list and revoke API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key (printed once)")
    create.add_argument("--name", required=True)
    create.add_argument("--tenant", required=True)
    create.add_argument("--scope", action="append", required=True, choices=KEY_SCOPES, help="repeat for more")
    create.add_argument(
        "--brain", action="append", default=None, help="limit the key to this brain, id or slug (repeat)"
    )
    key_listing = keys_sub.add_parser("list", help="list keys (never the keys themselves)")
    key_listing.add_argument("--tenant", default=None)
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id")
    for p in (create, key_listing, revoke):
        data_dir(p)
    keys.set_defaults(func=cmd_keys)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except CairnError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
