"""`cairn brains delete` and `cairn erase`: the operator's deletion of a brain and erasure of a
subject (services/erasure/), each confirmed by typing what goes unless `--yes` is given."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.services.erasure.log import Receipt


def confirmed(expected: str, what: str, *, yes: bool, stdin: TextIO = sys.stdin) -> bool:
    """`--yes`, or the operator typed `expected` at the prompt. Without a terminal to ask at and
    without `--yes`, nothing is deleted (a script must say so)."""
    if yes:
        return True
    if not stdin.isatty():
        print(f"error: refusing to {what} without --yes (no terminal to confirm at)", file=sys.stderr)
        return False
    print(f"This will {what}, for good. Type {expected!r} to confirm: ", end="", file=sys.stderr, flush=True)
    if stdin.readline().strip() == expected:
        return True
    print("not confirmed: nothing was removed", file=sys.stderr)
    return False


def delete_brain(container: Container, ref: str, *, yes: bool) -> int:
    brain = container.brains.get(ref)
    if not confirmed(brain.slug, f"delete brain {brain.slug} and everything it holds", yes=yes):
        return 1
    show(container.erasure.delete_brain(brain.id), f"deleted brain {brain.slug}")
    return 0


def run_erase(args: argparse.Namespace) -> int:
    """`cairn erase`, on the store in the data directory."""
    from cairn.entrypoints.cli.common import open_store

    return cmd_erase(open_store(args, existing=True), args)


def cmd_erase(container: Container, args: argparse.Namespace) -> int:
    for resumed in container.erasure.resume():
        show(resumed, "finished an erasure left running")
    what = f"erase everything of {args.kind} {args.subject!r}"
    if not confirmed(args.subject, what, yes=args.yes):
        return 1
    show(container.erasure.erase(args.kind, args.subject, args.brain), f"erased {args.kind} {args.subject!r}")
    return 0


def show(receipt: Receipt, headline: str) -> None:
    counted = ", ".join(f"{n} {kind}" for kind, n in receipt.removed.items() if n) or "nothing"
    print(f"{headline}: {counted} (receipt {receipt.id}, {len(receipt.brains)} brain(s))")
