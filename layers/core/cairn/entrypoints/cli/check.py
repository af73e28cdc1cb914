"""What a process does to the data it opens before trusting it, and `cairn check`.

Opening: every document a stopped process committed but did not index is indexed (its intent
settled, services/documents/index_intents.py), every memory whose links it left pending is linked
(services/links/pending.py), and every brain that lacks the pointers its
tenant's listing reads (services/brain_pointers.py) gets them. A server (`cairn serve`,
`cairn mcp`) then compares every brain's index with its records and files
(services/documents/index_repair.py) and rebuilds what differs in the background, refusing those
brains' searches (503) until it is done. `cairn check` does the same in the foreground and reports
brain by brain; `--deep` also compares every document chunk by chunk, runs FTS5's own integrity
check of each brain's keyword index (adapters/local/fts_health.py) and finds the ThoughtMCP
memories whose sector vectors another model or an older release made (embedding them again),
`--dry-run` only reports (it indexes and embeds nothing; vector rows found damaged are still
recorded as such by the index, so that no search reads them). It also says what the sweep still
has to do (services/maintenance.py: memory counts `over` or being built, deletions settling),
which is not a fault.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.domain.models import Brain
    from cairn.services.documents.index_repair import BrainCheck


def settle(container: Container) -> None:
    """Index what a process that died mid-write committed but did not index; on stderr, as stdout
    may be an export or the MCP protocol."""
    settled = container.documents.settle_pending()
    if settled:
        print(f"indexed {settled} documents a stopped process had written but not indexed", file=sys.stderr)
    links = container.pending_links.settle_counted()  # after the intents: a memory's links need it indexed
    if links.linked:
        print(f"linked {links.linked} memories a stopped process had written but not linked", file=sys.stderr)
    if links.unlinked:
        print(
            f"removed the links left of {links.unlinked} memories a stopped process had removed but "
            "not unlinked",
            file=sys.stderr,
        )
    if links.erased:
        print(
            f"finished erasing {links.erased} documents a stopped process had left half-erased (their "
            "bytes gone, their records not)",
            file=sys.stderr,
        )
    if links.dropped:
        print(
            f"dropped the pending links of {links.dropped} memories deleted (or whose brain was) "
            "before they were linked",
            file=sys.stderr,
        )
    mended = container.brains.mend_pointers()
    if mended:
        print(
            f"{len(mended)} brain(s) written by an earlier release's process beside this one are listed "
            f"for their tenants again: {', '.join(b.slug for b in mended)}",
            file=sys.stderr,
        )


def start_repairs(container: Container) -> None:
    """Compare the brains now (a big one in the background); rebuild what differs in the
    background (those brains answer 503 meanwhile), and any brain the index later finds damaged."""
    found, later = container.repair.at_start(container.brains.list())
    for check in found:
        if not check.sound:
            print(f"{describe(check)}: rebuilding it in the background", file=sys.stderr)
    for brain in later:
        print(f"brain {brain.slug}: checking its index in the background", file=sys.stderr)
    container.repair.start(found, later)


def describe(check: BrainCheck) -> str:
    deleted = [g for g in check.ghosts if g not in check.unrecorded]
    problems = [
        f"the keyword index of brain {check.slug} cannot be read ({check.keywords})"
        if check.keywords
        else "",
        f"{len(check.stale)} documents whose chunks differ from their records" if check.stale else "",
        f"{len(deleted)} deleted documents still indexed" if deleted else "",
        f"{len(check.unrecorded)} indexed documents no record names (the records database lost them: "
        f"restore it from a backup, or `cairn check --forget-lost` to stop reporting them): "
        f"{_named(check.unrecorded)}"
        if check.unrecorded
        else "",
        f"{check.unsound_chunks} chunks whose vectors are damaged" if check.unsound_chunks else "",
        f"{len(check.damaged)} documents whose stored content is missing or damaged "
        f"(restore them from a backup or write them again): {_named(check.damaged)}"
        if check.damaged
        else "",
        f"{len(check.stale_vectors)} memories whose sector vectors another model or an older release made"
        if check.stale_vectors
        else "",
    ]
    return f"brain {check.slug}: " + ("; ".join(p for p in problems if p) or "sound")


def _named(items: tuple[str, ...], most: int = 20) -> str:
    return ", ".join(items[:most]) + (", …" if len(items) > most else "")


def restoring_note(brain: Brain) -> str:
    """Said beside a brain an archive import left part-way (its gbrain collection refuses page
    writes until the import is run again to its end)."""
    from cairn.services.gbrain.collection_state import state_of

    if state_of(brain).state != "restoring":
        return ""
    return "  [restoring: an archive import stopped part-way; import the whole archive again to finish]"


def run_check(args: argparse.Namespace) -> int:
    """`cairn check`, on the store in the data directory read through first (every page of its
    databases); `--dry-run` settles and repairs nothing."""
    from cairn.entrypoints.cli.common import open_store  # it imports this module

    repair = not args.dry_run
    return cmd_check(open_store(args, existing=True, settled=repair, verified=True, repair=repair), args)


def cmd_check(container: Container, args: argparse.Namespace) -> int:
    """Exit 0 when every brain checked is sound (after repairs), 1 when something is not (a
    document whose stored content is damaged is never repaired from it)."""
    try:
        return _checked(container, args)
    finally:  # the index's own threads (an approximate index being built) end before the process
        close = getattr(container.adapters.chunks, "close", None)
        if callable(close):
            close()


def _checked(container: Container, args: argparse.Namespace) -> int:
    brains = [container.brains.resolve(ref) for ref in args.brain] or container.brains.list()
    left = 0
    forget = getattr(args, "forget_lost", False) and not args.dry_run
    for brain in brains:
        check = container.repair.check(brain, repair=not args.dry_run, deep=args.deep)
        ann = check.ann if args.dry_run else _ann_rebuilt(container, brain.id, check.ann)
        line = (
            f"{describe(check)} ({check.documents} documents, {check.chunks} chunks, "
            f"{check.vector_rows} vector rows, ANN index {ann})"
        )
        if check.keywords_rebuilt:
            line += ": made its keyword index again from its chunks' text"
        if check.repaired or check.failed:
            line += "," if check.keywords_rebuilt else ":"
            line += f" indexed {check.repaired} documents again"
            line += f", {len(check.failed)} could not be" if check.failed else ""
        if check.remade:
            line += "; " if check.repaired or check.failed else ": "
            line += f"embedded the sector vectors of {check.remade} memories again"
        restoring = restoring_note(brain)
        print(line + restoring)
        if forget and check.unrecorded:  # reported this once more, then no longer
            forgotten = container.repair.forget_lost(brain.id)
            print(f"brain {brain.slug}: no longer reporting {forgotten} lost documents")
        unsound = check.failed or check.damaged or (check.unrecorded and not forget) or restoring
        left += bool(unsound) or (args.dry_run and not check.sound)
    _say_maintenance(container, brains, deletions=not args.brain)
    if not args.brain:
        _say_previous_keys(container)
        lost = _brains_lost(container)
        if lost:
            print(
                f"chunks of {len(lost)} brain(s) that no brain record names are indexed (the records "
                f"database lost them: restore it from a backup): {_named(lost)}"
            )
            left += 1
    return 1 if left else 0


def _say_previous_keys(container: Container) -> None:
    """Erasure marks still under a previous key of a rotated secret (services/secret_rotation.py):
    said, never counted as unsound. Nothing for a secret never rotated, or one that cannot be read
    (an erasure says so when it needs it)."""
    from cairn.domain.errors import Unavailable
    from cairn.entrypoints.cli.secret import show

    try:
        if not container.adapters.store_secret.ring().previous:
            return
        status = container.secret_rotation.status()
    except Unavailable:
        return
    show(status)


def _say_maintenance(container: Container, brains: list[Brain], *, deletions: bool) -> None:
    """What the sweep still has to do for these brains (services/maintenance.py), and with
    `deletions` for every brain deletion settling: said, never counted as unsound."""
    maintenance = container.health.maintenance
    if maintenance is None:
        return
    found = maintenance.report([b.id for b in brains], deletions=deletions, named=brains)
    slugs = {b.id: b.slug for b in brains}
    for brain_id in found.counts_over:
        print(
            f"brain {slugs[brain_id]}: its memory counts grew past what one record holds (over): counts "
            "and zengram's stats read every memory record; the sweep counts them again hourly"
        )
    for brain_id in found.counts_building:
        print(
            f"brain {slugs[brain_id]}: its memory counts are being built by the sweep "
            "(counts read every memory record)"
        )
    for brain_id in found.times_building:
        print(
            f"brain {slugs[brain_id]}: its memories' creation-time entries are being built by the sweep "
            "(zengram's stats reads every memory record)"
        )
    for brain_id in found.reach_to_do:
        print(
            f"brain {slugs[brain_id]}: the sweep's concept-reach pass has not scanned it yet (concept links "
            "an earlier release left of documents it erased stay until it has)"
        )
    for brain_id in found.image_refs_to_do:
        print(
            f"brain {slugs[brain_id]}: the sweep's image-reference pass has not scanned it yet (image "
            "references an earlier release left of documents deleted or erased stay until it has)"
        )
    for deletion in found.settling:
        print(
            f"deleted brain {deletion.brain_id}: settling until {deletion.until.isoformat()} (each sweep "
            "purges what work under way wrote after its deletion)"
        )


def _ann_rebuilt(container: Container, brain_id: str, ann: str) -> str:
    """An approximate index found missing or damaged is built now, in the foreground (a server
    builds it in the background; exact search serves meanwhile)."""
    from cairn.ports.chunks import ANN_REBUILDING, CompactableChunks

    chunks = container.adapters.chunks
    if ann != ANN_REBUILDING or not isinstance(chunks, CompactableChunks):
        return ann
    done = chunks.compact(brain_id)
    return f"rebuilt ({done.indexed_rows} rows)" if done is not None and done.indexed_rows else ann


def _brains_lost(container: Container) -> tuple[str, ...]:
    """Brains the search index holds chunks of and the records know nothing of, not even as deleted."""
    from cairn.ports.chunks import CompactableChunks

    chunks = container.adapters.chunks
    if not isinstance(chunks, CompactableChunks):
        return ()  # OpenSearch: its brains are found by query, per brain
    return tuple(i for i in chunks.brain_ids() if container.brains.repo.get(i) is None)
