"""The `cairn` command's arguments and its entry point. Each subcommand's parser names the function
that runs it (`Runs`, `module:function` in this package); that module is imported only when the
command runs, so a command loads what it uses and `cairn --help` none of them (1.1 s of imports
before, docs/PERFORMANCE.md "What a `cairn` command imports"). So this module imports nothing
that opens a store or serves: keep it that way (tests/integration/cli/test_cli_imports.py)."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path

from cairn import __version__
from cairn.auth.principal import SCOPES as KEY_SCOPES
from cairn.domain.errors import CairnError, storage_failure
from cairn.domain.libraries import LIBRARY_TYPES
from cairn.domain.scrub import scrub
from cairn.domain.subjects import SubjectKind
from cairn.entrypoints import log_scrub
from cairn.entrypoints.cli.opened import close_opened
from cairn.entrypoints.mcp.registry import DEFAULT_SURFACE, SURFACES

SMOKE_CLIENT_ID_ENV = "CAIRN_SMOKE_CLIENT_ID"
SMOKE_CLIENT_SECRET_ENV = "CAIRN_SMOKE_CLIENT_SECRET"
SMOKE_INGEST_BYTES = 320 * 1024
"""Above template.yaml's IngestQueueBytes default (a test holds it there), so `cairn smoke`'s
ingest is queued."""


@dataclass(frozen=True)
class Runs:
    """A command's function, named `module:function` in this package and imported when it runs."""

    target: str

    def function(self) -> Callable[[argparse.Namespace], int]:
        module, name = self.target.split(":")
        function: Callable[[argparse.Namespace], int] = getattr(
            import_module(f"cairn.entrypoints.cli.{module}"), name
        )
        return function

    def __call__(self, args: argparse.Namespace) -> int:
        return self.function()(args)


def top_k(value: str) -> int:
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
    serve.set_defaults(func=Runs("serve:cmd_serve"))

    mcp = sub.add_parser("mcp", help="serve MCP over stdio")
    mcp.add_argument("--surface", default=DEFAULT_SURFACE, choices=list(SURFACES))
    data_dir(mcp)
    mcp.set_defaults(func=Runs("serve:cmd_mcp"))

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
    ingest.set_defaults(func=Runs("ingest:cmd_ingest"))

    search = sub.add_parser("search", help="search a brain")
    search.add_argument("query")
    search.add_argument("--brain", default=None)
    search.add_argument("--top-k", type=top_k, default=10, metavar="1..100")
    data_dir(search)
    search.set_defaults(func=Runs("brains:cmd_search"))

    brains = sub.add_parser("brains", help="list, create and update brains (default: list)")
    data_dir(brains)
    brains_sub = brains.add_subparsers(dest="brains_command")
    listing = brains_sub.add_parser("list", help="list brains with their owner and visibility")
    new_brain = brains_sub.add_parser("create", help="create a brain")
    new_brain.add_argument("name")
    named = new_brain.add_mutually_exclusive_group()
    named.add_argument("--slug", default=None, help="default: from the name")
    named.add_argument(
        "--suffix",
        action="store_true",
        help="when the name's slug is taken, add the next free number (notes-2) instead of refusing",
    )
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
    brains.set_defaults(func=Runs("brains:cmd_brains"))

    erase = sub.add_parser(
        "erase", help="erase a ThoughtMCP user, agent or session actor from everything Cairn holds"
    )
    erase.add_argument("kind", choices=[k.value for k in SubjectKind], help="what SUBJECT names")
    erase.add_argument("subject", help="the userId, agent or actor")
    erase.add_argument("--brain", action="append", default=None, help="only this brain, id or slug (repeat)")
    erase.add_argument("--yes", action="store_true", help="do not ask to confirm")
    data_dir(erase)
    erase.set_defaults(func=Runs("erasure:run_erase"))

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
    collections.set_defaults(func=Runs("brains:cmd_collections"), collections_command="list", brain=None)

    export = sub.add_parser("export", help="write a brain's archive as JSON Lines (backup)")
    export.add_argument("brain", help="brain id or slug")
    export.add_argument("-o", "--output", default=None, metavar="FILE", help="default stdout; .gz: gzip")
    export.add_argument(
        "--skip-damaged",
        action="store_true",
        help="leave out documents whose stored content is damaged (named on stderr; exit 1), not stop",
    )
    data_dir(export)
    export.set_defaults(func=Runs("archive:cmd_export"))

    compact = sub.add_parser(
        "compact", help="reclaim dead vector rows and rebuild the vector index of brains (default: all)"
    )
    compact.add_argument("brain", nargs="*", help="brain ids or slugs")
    compact.add_argument(
        "--threads", type=int, default=None, help="index build threads (default: every core)"
    )
    data_dir(compact)
    compact.set_defaults(func=Runs("archive:cmd_compact"))

    calibrate = sub.add_parser(
        "calibrate",
        help="fit the embedding model's relevance calibration on labelled questions",
        description="Embed a fixture's items and questions with the configured embedder (the embedded "
        "model, or Bedrock with CAIRN_EMBEDDER=bedrock and AWS credentials) and fit where a question's "
        "best cosine means 'answered'. The fixture is JSON: "
        '{"items": [{"id", "text", "title"?}], "queries": [{"text", "relevant": [item ids]}]}, '
        "with at least 5 questions that have answers and 5 that have none.",
    )
    calibrate.add_argument("--fixture", type=Path, required=True, help="the labelled questions (JSON)")
    calibrate.add_argument("--json", action="store_true", help="print the fit as JSON")
    data_dir(calibrate)
    calibrate.set_defaults(func=Runs("calibrate:cmd_calibrate"))

    check = sub.add_parser(
        "check",
        help="compare brains' search indexes with their documents and files; rebuild what differs",
    )
    check.add_argument("brain", nargs="*", help="brain ids or slugs (default: every brain)")
    check.add_argument(
        "--deep",
        action="store_true",
        help="also compare every document chunk by chunk, and ThoughtMCP's sector vectors with the embedder",
    )
    check.add_argument(
        "--forget-lost",
        action="store_true",
        help="stop reporting documents found indexed with no record (the records lost them) after this check",
    )
    check.add_argument(
        "--dry-run",
        action="store_true",
        help="report only: index and embed nothing (damage found is still recorded, so no search reads it)",
    )
    data_dir(check)
    check.set_defaults(func=Runs("check:run_check"))

    restore = sub.add_parser("import", help="restore a brain from an archive `cairn export` wrote")
    restore.add_argument("file", metavar="FILE", help="the archive; - for stdin; .gz: gzip")
    restore.add_argument(
        "--brain", default=None, help="restore into this brain (default: the archive's slug)"
    )
    restore.add_argument(
        "--server",
        default=None,
        metavar="URL",
        help="restore into a running Cairn (e.g. a deployed stack's API URL), in parts, resumable",
    )
    restore.add_argument("--token", default=None, help="bearer token for --server (default CAIRN_TOKEN)")
    data_dir(restore)
    restore.set_defaults(func=Runs("archive:cmd_import"))

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
    keys.set_defaults(func=Runs("brains:cmd_keys"))

    secret = sub.add_parser(
        "secret", help="the store's secret: its keys' ids, rotating it, dropping its previous keys"
    )
    secret_sub = secret.add_subparsers(dest="secret_command")
    secret_status = secret_sub.add_parser(
        "status", help="the keys' ids, and the erasure marks still under a previous key (the default)"
    )
    secret_rotate = secret_sub.add_parser(
        "rotate", help="a new current key; the current one kept as previous"
    )
    secret_drop = secret_sub.add_parser(
        "drop-previous", help="remove the previous keys (refused while erasure marks are under them)"
    )
    secret_drop.add_argument(
        "--force",
        action="store_true",
        help="drop them anyway: the erasures until now are then taken as no longer checkable",
    )
    for p in (secret, secret_status, secret_rotate, secret_drop):
        data_dir(p, default=argparse.SUPPRESS if p is not secret else None)
    secret.set_defaults(func=Runs("secret:run_secret"), secret_command=None, force=False)

    clients = sub.add_parser("oauth-clients", help="list and revoke the OAuth clients registration made")
    clients_sub = clients.add_subparsers(dest="clients_command", required=True)
    client_list = clients_sub.add_parser(
        "list", help="the registered clients (active ones; --all for every one)"
    )
    client_list.add_argument("--all", action="store_true", help="revoked clients too")
    client_revoke = clients_sub.add_parser(
        "revoke", help="delete a client's app client and refuse its tokens"
    )
    client_revoke.add_argument("client_id")
    for p in (client_list, client_revoke):
        data_dir(p)
    clients.set_defaults(func=Runs("oauth_clients:cmd_oauth_clients"))
    _add_smoke_parser(sub)
    return parser


def _add_smoke_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    smoke = sub.add_parser(
        "smoke",
        help="check a deployed stack end to end (health, sign-in discovery, tokens, SigV4, ingest, search)",
        description="Run the post-deploy smoke test against URL, the stack's API base (the McpUrl or "
        "ApiUrl output works too). Exits 1 naming each failed step. docs/SMOKE.md says what each "
        "step checks and what to look at when one fails.",
    )
    smoke.add_argument(
        "url", help="the API's base URL, e.g. https://abc123.execute-api.us-east-1.amazonaws.com"
    )
    smoke.add_argument(
        "--client-id",
        default=os.environ.get(SMOKE_CLIENT_ID_ENV),
        help=f"machine client (${SMOKE_CLIENT_ID_ENV})",
    )
    smoke.add_argument(
        "--client-secret",
        default=os.environ.get(SMOKE_CLIENT_SECRET_ENV),
        help=f"its secret (default ${SMOKE_CLIENT_SECRET_ENV}: prefer it, a command line is visible "
        "to others)",
    )
    smoke.add_argument(
        "--token-url", default=None, help="token endpoint (default: discovered from the metadata)"
    )
    smoke.add_argument(
        "--scope", default=None, help="scopes to ask for, space-separated (default: the client's)"
    )
    smoke.add_argument(
        "--sigv4",
        action="store_true",
        help="make the brain with a SigV4-signed call (AWS credentials from the environment)",
    )
    smoke.add_argument(
        "--iam-url", default=None, help="the IAM API's base URL for --sigv4 (IamApiUrl; default URL)"
    )
    smoke.add_argument("--region", default=None, help="SigV4 region (default: from the URL, else AWS_REGION)")
    smoke.add_argument(
        "--ingest-bytes",
        type=int,
        default=SMOKE_INGEST_BYTES,
        help="size of the queued file; above the stack's IngestQueueBytes",
    )
    smoke.add_argument("--job-timeout", type=float, default=600.0, help="seconds to wait for the ingest job")
    smoke.add_argument("--timeout", type=float, default=60.0, help="seconds per HTTP request")
    smoke.set_defaults(func=Runs("smoke:cmd_smoke"))


STDOUT_CLOSED = 141
"""The exit code when whoever read stdout stopped (`cairn export … | head`): 128 + SIGPIPE, what a
shell reports for a tool a closed pipe ends, so `set -o pipefail` scripts see it as usual."""


def main(argv: Sequence[str] | None = None) -> int:
    log_scrub.install()  # every command's log and uncaught traceback too (a store's URL may hold a password)
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a reader gone shows here, not as a traceback at exit
        return code
    except CairnError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # stdout's reader is gone: stop quietly. What is still buffered goes to devnull, so the
        # flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return STDOUT_CLOSED
    except Exception as exc:  # a full disk or a damaged database is said in one line, as a CairnError
        if type(exc).__module__.startswith("httpx"):  # --server: its text may quote a header
            print(
                f"error: server_unreachable: the request to the server failed ({type(exc).__name__})",
                file=sys.stderr,
            )
            return 2
        if type(exc).__module__.startswith(("botocore", "boto3")):  # the AWS backend's store
            print(f"error: aws_unavailable: {scrub(str(exc))[:500]} ({type(exc).__name__})", file=sys.stderr)
            return 2
        known = storage_failure(exc)
        if known is None:
            raise
        print(f"error: {known.code}: {known.message}", file=sys.stderr)
        return 2
    finally:
        close_opened()
