"""The stores a one-off `cairn` command opened, closed as it ends, whether it failed or not. Apart
from common.py, so that the parser, which closes them, imports no store code for a command that
opened none (`cairn --help`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from cairn.container import Container

_OPENED: list[Container] = []


def opened(container: Container) -> Container:
    """A container a one-off command opened: closed as the command ends."""
    _OPENED.append(container)
    return container


def close_opened() -> None:
    """As a one-off command ends, whether it failed or not: the read counts its searches kept in
    memory written, its audit entries the busy store refused (an erasure's) written or kept for
    the next start, then its stores closed (bootstrap/closing.py): the chunk index's maintenance
    worker stopped at its next step, and each SQLite file's write-ahead log checkpointed into it.
    Nothing else runs in them by then: such a command runs no job worker or sweep, and its own
    work ran on its thread (an interrupted write was rolled back as the interruption left it)."""
    if not _OPENED:
        return
    from cairn.bootstrap.closing import close_stores, write_read_counts

    while _OPENED:
        container = _OPENED.pop()
        write_read_counts(container, "as the command ended")
        container.audit.close()
        close_stores(container)
