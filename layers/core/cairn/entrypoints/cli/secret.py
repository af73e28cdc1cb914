"""`cairn secret`: the store's secret's keys (by id, never the keys), rotating it, and dropping its
previous keys once no erasure mark is under them (services/secret_rotation.py)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.container import Container
    from cairn.services.secret_rotation import RotationStatus


def run_secret(args: argparse.Namespace) -> int:
    """`cairn secret`, on the store in the data directory (or the AWS backend's, as configured)."""
    from cairn.entrypoints.cli.common import open_store

    return cmd_secret(open_store(args, existing=True, settled=False), args)


def cmd_secret(container: Container, args: argparse.Namespace) -> int:
    rotation = container.secret_rotation
    command = args.secret_command or "status"
    if command == "rotate":
        status = rotation.rotate()
        print(f"rotated the store's secret: new current key {status.current}")
    elif command == "drop-previous":
        status = rotation.drop_previous(force=args.force)
        print(f"the store's secret holds its current key {status.current} alone")
    else:
        status = rotation.status()
    show(status)
    return 0


def show(status: RotationStatus) -> None:
    print(f"current key: {status.current}")
    print(f"previous keys: {', '.join(status.previous) or 'none'}")
    for family in status.families:
        held = family.held
        if held.count:
            print(
                f"{family.name}: {held.count} under another key ({held.previous} under a previous key, "
                f"{held.unlabelled} made before keys were recorded), the last expiring at {held.last_until}"
            )
        if held.lost:
            print(
                f"{family.name}: {held.lost} under a key the secret no longer holds (dropped with "
                "`cairn secret drop-previous --force`, "
                "or the secret replaced): unreadable, the erasures until then already taken as no longer "
                "checkable; they expire with their lifetime and hold back no drop"
            )
    if not status.previous:
        return
    if status.held:
        print(
            f"not yet safe to drop the previous keys: {status.held} marks are still under them (each "
            f"moves to the current key when a lookup meets it; the last expires at {status.last_until})"
        )
    else:
        print("safe to drop the previous keys: `cairn secret drop-previous`")
