"""Read a local file for ingest, optionally confined to a root directory."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from cairn.domain.errors import FileTooLarge, Forbidden, InvalidInput, NotFound
from cairn.ingest.sizes import format_size

__all__ = ["LocalFile", "read_local_file"]


@dataclass(frozen=True, slots=True)
class LocalFile:
    path: Path
    """The resolved path (symlinks followed)."""
    name: str
    """The base name the caller gave (before symlinks), used for the kind and the title."""
    data: bytes


def read_local_file(path: str, *, root: Path | None, max_bytes: int) -> LocalFile:
    """Read `path`, at most `max_bytes`.

    With `root` set, relative paths resolve against it and the file (after following symlinks)
    must lie strictly inside it, else Forbidden. With `root` None any readable file is allowed
    (the stdio server reads its own user's files) and relative paths resolve against the cwd.
    Size and type are checked on the opened descriptor, so a swap after the check cannot
    smuggle in a different file.
    """
    if not path or "\x00" in path:
        raise InvalidInput("file path must be a non-empty string without NUL bytes")
    given = Path(path).expanduser() if root is None else Path(path)
    target = (Path.cwd() if root is None else root) / given
    if root is not None:
        # Check the non-strict resolution first, so a missing file outside root is Forbidden, not NotFound.
        _check_inside(_resolve(target, path, strict=False), root.resolve(), path)
    resolved = _resolve(target, path, strict=True)
    if root is not None:
        _check_inside(resolved, root.resolve(), path)
    data = _read_regular_file(_open(resolved, path), path, max_bytes)
    return LocalFile(path=resolved, name=given.name, data=data)


def _read_regular_file(fd: int, shown: str, max_bytes: int) -> bytes:
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise InvalidInput(f"{shown} is a directory, not a file")
        if not stat.S_ISREG(info.st_mode):
            raise InvalidInput(f"{shown} is not a regular file")
        too_large = FileTooLarge(f"file exceeds {format_size(max_bytes)}")
        if info.st_size > max_bytes:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        while size <= max_bytes:
            chunk = os.read(fd, min(1024 * 1024, max_bytes + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > max_bytes:  # it grew after the size check
        raise too_large
    return b"".join(chunks)


def _resolve(candidate: Path, shown: str, *, strict: bool) -> Path:
    try:
        return candidate.resolve(strict=strict)
    except FileNotFoundError as exc:
        raise NotFound(f"file not found: {shown}") from exc
    except PermissionError as exc:
        raise Forbidden(f"permission denied: {shown}") from exc
    except (OSError, RuntimeError) as exc:  # symlink loops, name too long...
        raise InvalidInput(f"cannot resolve {shown}: {type(exc).__name__}") from exc


def _check_inside(resolved: Path, root: Path, shown: str) -> None:
    # Strictly inside: the root itself is a directory, never an ingestible file.
    if resolved == root or not resolved.is_relative_to(root):
        raise Forbidden(f"{shown} is outside the directory files may be read from")


def _open(resolved: Path, shown: str) -> int:
    # O_NONBLOCK: opening a FIFO must not hang; O_NOFOLLOW: the final component cannot have
    # become a symlink since it was resolved.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(resolved, flags)
    except FileNotFoundError as exc:
        raise NotFound(f"file not found: {shown}") from exc
    except PermissionError as exc:
        raise Forbidden(f"permission denied: {shown}") from exc
    except OSError as exc:
        raise InvalidInput(f"cannot open {shown}: {type(exc).__name__}") from exc
    return fd
