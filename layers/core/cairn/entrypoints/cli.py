"""The `cairn` command: serve, mcp (stdio), ingest, search, brains, keys."""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from cairn import __version__
from cairn.auth.principal import SCOPES as KEY_SCOPES
from cairn.config import Settings
from cairn.domain.errors import CairnError, NoBrain
from cairn.domain.models import Brain

if TYPE_CHECKING:
    from cairn.bootstrap import Container
    from cairn.services.schedule import ConsolidationSchedule

SURFACES = ("canonical", "zengram", "gbrain", "mnemosyne", "thoughtmcp")


def _settings(args: argparse.Namespace, **extra: object) -> Settings:
    overrides: dict[str, object] = {k: v for k, v in extra.items() if v is not None}
    if getattr(args, "data_dir", None) is not None:
        overrides["data_dir"] = args.data_dir
    return Settings(**overrides)  # type: ignore[arg-type]


def cmd_serve(args: argparse.Namespace) -> int:
    import uvicorn

    from cairn.auth.authenticate import open_allowed
    from cairn.bootstrap import build_container
    from cairn.entrypoints.http import create_app

    settings = _settings(
        args, host=args.host, port=args.port, token=args.token, allow_open=args.allow_open or None
    )
    if not open_allowed(settings) and settings.token is None and settings.jwt_issuer is None:
        print(
            f"error: refusing to serve {settings.host} without authentication: give --token "
            "(or CAIRN_TOKEN), configure CAIRN_JWT_ISSUER, bind 127.0.0.1, or pass --allow-open",
            file=sys.stderr,
        )
        return 2
    container = build_container(settings)
    app = create_app(container)
    # Load the embedding model while uvicorn starts, so /healthz answers at once and the
    # first search does not pay for the load.
    threading.Thread(target=container.adapters.embedder.embed, args=(["warm up"],), daemon=True).start()
    auth = "none (open)" if open_allowed(settings) else "required"
    print(
        f"cairn {__version__} serving on http://{settings.host}:{settings.port} "
        f"(data: {settings.data_dir}; authentication: {auth})"
    )
    schedule = _schedule(container)
    container.jobs.start_worker()
    if schedule is not None:
        schedule.start()
    try:
        uvicorn.run(app, host=settings.host, port=settings.port, log_level=args.log_level)
    finally:
        if schedule is not None:
            schedule.stop()
        container.jobs.stop_worker()
        if container.search.access is not None:
            container.search.access.flush()
    return 0


def _schedule(container: Container) -> ConsolidationSchedule | None:
    from cairn.services.schedule import ConsolidationSchedule

    every = container.settings.consolidate_every_s
    if every is None:
        return None
    print(f"consolidating every brain every {every:g} s")
    return ConsolidationSchedule(container.brains, container.consolidation, container.adapters.clock, every)


def cmd_mcp(args: argparse.Namespace) -> int:
    from cairn.bootstrap import build_container
    from cairn.entrypoints.mcp.server import require_surface
    from cairn.entrypoints.mcp.stdio import run_stdio

    require_surface(args.surface)  # fail before opening the store
    container = build_container(_settings(args))
    container.jobs.start_worker()  # extraction and queued ingests run while the session lasts
    try:
        run_stdio(container, surface=args.surface)
    finally:
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


def cmd_ingest(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from cairn.bootstrap import build_container
    from cairn.services.ingest import LocalFilePolicy, safe_name

    container = build_container(_settings(args))
    brain = _brain(container, args.brain, create_default=True)
    files = list(_files(args.paths))
    policy = LocalFilePolicy(root=None, max_bytes=container.settings.max_file_bytes)
    console = Console(stderr=True)
    counts = {"created": 0, "reused": 0, "failed": 0}
    failures: list[str] = []
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with Progress(*columns, console=console, transient=False) as progress:
        task = progress.add_task(f"ingesting into {brain.slug}", total=len(files))
        for file, target in files:
            parts = [safe_name(p) for p in target.split("/")]
            try:
                result = container.ingest.ingest_file(
                    brain, str(file), policy, target="/".join(parts), queue=False
                )
                counts["reused" if result.reused else "created"] += 1
            except CairnError as exc:
                counts["failed"] += 1
                failures.append(f"{file}: {exc.code}: {exc.message}")
            progress.advance(task)
    for line in failures:
        print(f"failed {line}", file=sys.stderr)
    print(f"created {counts['created']}, reused {counts['reused']}, failed {counts['failed']}")
    return 1 if counts["failed"] else 0


def cmd_search(args: argparse.Namespace) -> int:
    from cairn.bootstrap import build_container

    container = build_container(_settings(args))
    brain = _brain(container, args.brain)
    result = container.search.search(brain, args.query, top_k=args.top_k)
    for n, hit in enumerate(result.hits, start=1):
        preview = " ".join(hit.content.split())[:200]
        print(f"#{n} score={hit.score:.4f} {hit.path}\n   {preview}")
    print(f"{len(result.hits)} hit(s) in {result.took_ms:.1f} ms")
    return 0


def cmd_brains(args: argparse.Namespace) -> int:
    from cairn.bootstrap import build_container

    container = build_container(_settings(args))
    brains = container.brains.list()
    for b in brains:
        print(f"{b.id}  {b.slug:<32} {b.visibility.value:<8} {b.name}")
    if not brains:
        print("no brains yet")
    return 0


def cmd_keys(args: argparse.Namespace) -> int:
    """API keys: stored as hashes in the data directory's records; the key is printed once."""
    from cairn.auth.api_keys import ApiKeyService
    from cairn.bootstrap import build_container

    container = build_container(_settings(args))
    keys = ApiKeyService(container.adapters.records, container.adapters.clock)
    if args.keys_command == "create":
        brains = [container.brains.get(ref).id for ref in args.brain] if args.brain else None
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


def _brain(container: Container, ref: str | None, create_default: bool = False) -> Brain:
    try:
        return container.brains.resolve(ref)
    except NoBrain:
        if ref is None and create_default:
            return container.brains.create("default", slug="default")
        raise


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="cairn", description="Cairn: memory for AI agents.")
    parser.add_argument("--version", action="version", version=f"cairn {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    def data_dir(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--data-dir", type=Path, default=None, help="data directory (default ./.cairn or CAIRN_DATA_DIR)"
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

    mcp = sub.add_parser("mcp", help="serve MCP over stdio")
    mcp.add_argument("--surface", default="canonical", choices=SURFACES)
    data_dir(mcp)
    mcp.set_defaults(func=cmd_mcp)

    ingest = sub.add_parser("ingest", help="ingest files and directories (recursively)")
    ingest.add_argument("paths", nargs="+")
    ingest.add_argument("--brain", default=None, help="brain id or slug (default: the default brain)")
    data_dir(ingest)
    ingest.set_defaults(func=cmd_ingest)

    search = sub.add_parser("search", help="search a brain")
    search.add_argument("query")
    search.add_argument("--brain", default=None)
    search.add_argument("--top-k", type=int, default=10, choices=range(1, 101), metavar="1..100")
    data_dir(search)
    search.set_defaults(func=cmd_search)

    brains = sub.add_parser("brains", help="list brains")
    data_dir(brains)
    brains.set_defaults(func=cmd_brains)

    keys = sub.add_parser("keys", help="create, list and revoke API keys")
    keys_sub = keys.add_subparsers(dest="keys_command", required=True)
    create = keys_sub.add_parser("create", help="create a key (printed once)")
    create.add_argument("--name", required=True)
    create.add_argument("--tenant", required=True)
    create.add_argument("--scope", action="append", required=True, choices=KEY_SCOPES, help="repeat for more")
    create.add_argument(
        "--brain", action="append", default=None, help="limit the key to this brain, id or slug (repeat)"
    )
    listing = keys_sub.add_parser("list", help="list keys (never the keys themselves)")
    listing.add_argument("--tenant", default=None)
    revoke = keys_sub.add_parser("revoke", help="revoke a key by id")
    revoke.add_argument("key_id")
    for p in (create, listing, revoke):
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
