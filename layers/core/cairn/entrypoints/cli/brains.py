"""`cairn search`, `cairn brains`, `cairn collections` and `cairn keys`."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from cairn.domain.errors import Conflict, Unavailable

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.domain.models import Brain
    from cairn.services.mnemosyne.libraries import Library
from cairn.entrypoints.cli.check import restoring_note
from cairn.entrypoints.cli.common import brain_of, open_store


def cmd_search(args: argparse.Namespace) -> int:
    container = open_store(args, existing=True)
    brain = brain_of(container, args.brain)
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
        container = open_store(args, existing=False)
        brain = _create(container, args)
        library = _describe_library(container, brain.id, args)
        kind = f", {library.library_type} library" if library is not None else ""
        print(f"created brain {brain.slug} ({brain.id}, {brain.visibility.value}{kind})")
        return 0
    container = open_store(args, existing=True)
    if command == "delete":
        from cairn.entrypoints.cli.erasure import delete_brain

        return delete_brain(container, args.brain, yes=args.yes)
    if command == "update":
        described = _describe_library(container, args.brain, args)
        if described is not None and args.visibility is None and args.owner is None and args.tenant is None:
            brain = described.brain
        else:
            brain = container.brains.update(
                args.brain, visibility=args.visibility, owner=args.owner, tenant=args.tenant
            )
        kind = f", {described.library_type} library" if described is not None else ""
        owner = f"{brain.owner_tenant}/{brain.owner or '*'}"
        print(f"{brain.slug}: {brain.visibility.value}, owner {owner}{kind}")
        return 0
    brains = container.brains.list()
    for b in brains:
        owner = f"{b.owner_tenant}/{b.owner or '*'}"
        print(f"{b.id}  {b.slug:<32} {b.visibility.value:<8} {owner:<24} {b.name}{restoring_note(b)}")
    if not brains:
        print("no brains yet: create one with `cairn brains create NAME`")
    return 0


def _create(container: Container, args: argparse.Namespace) -> Brain:
    """A new brain. Its slug comes from --slug, else its name; a taken one is refused unless
    --suffix asks for the next free one (`notes-2`), which is what REST and MCP do unasked."""
    from cairn.services.brains import slugify

    slug = args.slug if args.slug is not None or args.suffix else slugify(args.name.strip())
    try:
        return container.brains.create(args.name, slug=slug, visibility=args.visibility)
    except Conflict:
        if args.slug is not None:
            raise Conflict(f"a brain with slug {slug!r} already exists: pick another --slug") from None
        raise Conflict(
            f"a brain with slug {slug!r} already exists: pick another name or --slug S, "
            f"or pass --suffix to make the next free one ({slug}-2 or above)"
        ) from None


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
    container = open_store(args, existing=args.collections_command != "create")
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


def cmd_keys(args: argparse.Namespace) -> int:
    """API keys: stored as hashes in the data directory's records; the key is printed once."""
    from cairn.auth.api_keys import ApiKeyService

    container = open_store(args, existing=args.keys_command != "create")
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
