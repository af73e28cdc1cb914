"""Read a local file for ingest, optionally confined to a root directory.

Confinement walks the path one component at a time from a descriptor of the root, opening each
component with O_NOFOLLOW relative to the directory opened before it, so no path the kernel resolves
on its own ever has more than one component. Symlinks and `..` are resolved by the walk itself
(a symlink's target is spliced into the remaining components; `..` returns to a directory this walk
already holds open), so neither can leave the root, and renaming a directory for a symlink while
the walk runs cannot redirect it. Linux's openat2(RESOLVE_BENEATH) would give the same guarantee in
one call, but it refuses absolute symlinks that point back inside the root, which this walk allows,
and the walk also runs where openat2 does not exist (macOS, older kernels).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path, PurePath

from cairn.domain.errors import FileTooLarge, Forbidden, InvalidInput, NotFound
from cairn.ingest.sizes import format_size

__all__ = ["LocalFile", "read_local_file"]

MAX_PATH_CHARS = 4096
MAX_SYMLINKS = 40  # as Linux's own limit for one lookup
_SHOWN_CHARS = 120

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
# O_NONBLOCK: opening a FIFO must not hang; O_NOCTTY: a terminal must not become ours.
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | _CLOEXEC


@dataclass(frozen=True, slots=True)
class LocalFile:
    path: Path
    """Where the file was found: with a root, the root's real path joined with the components
    walked (symlinks inside the root followed); without one, the resolved path."""
    name: str
    """The base name the caller gave (before symlinks), used for the kind and the title."""
    data: bytes


def read_local_file(path: str, *, root: Path | None, max_bytes: int) -> LocalFile:
    """Read `path`, at most `max_bytes`.

    With `root` set, relative paths resolve against it and the file must lie strictly inside it,
    whatever symlinks, `..` or concurrent renames say, else Forbidden naming the root; a file with
    other hard links that another user owns is refused too. With `root` None any readable file is
    allowed (the stdio server reads its own user's files) and relative paths resolve against the
    cwd. Type and size are checked on the opened descriptor, and the bytes come from it.
    """
    if not path or "\x00" in path:
        raise InvalidInput("file path must be a non-empty string without NUL bytes")
    if len(path) > MAX_PATH_CHARS:
        raise InvalidInput(f"file path exceeds {MAX_PATH_CHARS} characters")
    shown = _excerpt(path)
    if root is None:
        given = Path(path).expanduser()
        resolved = _resolve(Path.cwd() / given, shown)
        try:
            fd = os.open(resolved, _FILE_FLAGS & ~_NOFOLLOW)
        except OSError as exc:
            raise _mapped(exc, shown, None) from exc
        return LocalFile(path=resolved, name=given.name, data=_read_regular_file(fd, shown, max_bytes))
    return _Beneath(root, shown).read(path, max_bytes)


class _Beneath:
    """One confined lookup: a stack of directory descriptors from the root down."""

    def __init__(self, root: Path, shown: str) -> None:
        self.root = root.absolute()
        self.real_root = root.resolve()
        self.shown = shown

    def outside(self) -> Forbidden:
        return Forbidden(f"{self.shown} is outside {self.root}, the directory files may be read from")

    def read(self, path: str, max_bytes: int) -> LocalFile:
        found = self._walk(self._relative_parts(path))
        if found is None:
            raise self.outside()  # the path names the root itself, which is never a file
        descriptor, names = found
        try:
            info = os.fstat(descriptor)
            if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and info.st_uid != os.geteuid():
                raise Forbidden(
                    f"{self.shown} has other hard links and belongs to another user; "
                    "copy it into the directory files may be read from"
                )
        except BaseException:
            os.close(descriptor)
            raise
        data = _read_regular_file(descriptor, self.shown, max_bytes)
        return LocalFile(path=self.real_root.joinpath(*names), name=PurePath(path).name, data=data)

    def _relative_parts(self, path: str) -> list[str]:
        """`path` as components below the root (reversed, so the next one pops off the end)."""
        given = PurePath(path)
        if given.is_absolute():
            rest = self._below_root(given)
            if rest is None:
                raise self.outside()
            given = rest
        return list(reversed(given.parts))

    def _below_root(self, absolute: PurePath) -> PurePath | None:
        # Lexical on purpose: any `..` left in the remainder is then walked (and refused at the root).
        for base in (self.real_root, self.root):
            if absolute.is_relative_to(base):
                return absolute.relative_to(base)
        return None

    def _walk(self, pending: list[str]) -> tuple[int, list[str]] | None:
        """Open every component; returns the final descriptor and the names walked, or None when
        the components end at the root itself."""
        try:
            root_fd = os.open(self.real_root, _DIR_FLAGS & ~_NOFOLLOW)
        except FileNotFoundError as exc:
            raise NotFound(f"{self.root}, the directory files may be read from, does not exist") from exc
        except OSError as exc:
            raise Forbidden(f"{self.root}, the directory files may be read from, cannot be opened") from exc
        stack, links = [root_fd], 0
        names: list[str] = []
        try:
            while pending:
                part = pending.pop()
                if part == "..":
                    if len(stack) == 1:
                        raise self.outside()
                    os.close(stack.pop())
                    names.pop()
                    continue
                last = not pending
                opened = self._open_component(stack[-1], part, last)
                if isinstance(opened, str):  # a symlink: walk its target instead
                    links += 1
                    if links > MAX_SYMLINKS:
                        raise InvalidInput(f"cannot resolve {self.shown}: too many symbolic links")
                    pending.extend(self._link_parts(opened, stack, names))
                    continue
                names.append(part)
                if last:
                    return opened, names
                stack.append(opened)
            if len(stack) == 1:
                return None
            return stack.pop(), names  # a directory (the path ended in ".."): refused by type
        finally:
            for fd in stack:
                os.close(fd)

    def _open_component(self, dir_fd: int, part: str, last: bool) -> int | str:
        """The opened descriptor, or the target text if `part` is a symlink."""
        try:
            return os.open(part, _FILE_FLAGS if last else _DIR_FLAGS, dir_fd=dir_fd)
        except OSError as exc:
            target = _symlink_target(dir_fd, part)
            if target is not None:
                return target
            if exc.errno == errno.ENOTDIR:
                raise NotFound(f"file not found: {self.shown} (a component is not a directory)") from exc
            raise _mapped(exc, self.shown, self.root) from exc

    def _link_parts(self, target: str, stack: list[int], names: list[str]) -> list[str]:
        """A symlink's target as pending components; an absolute target restarts at the root."""
        if not target:
            raise NotFound(f"file not found: {self.shown}")
        link = PurePath(target)
        if link.is_absolute():
            rest = self._below_root(link)
            if rest is None:
                raise self.outside()
            while len(stack) > 1:
                os.close(stack.pop())
            names.clear()
            link = rest
        return list(reversed(link.parts))


def _symlink_target(dir_fd: int, name: str) -> str | None:
    try:
        if not stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
            return None
        return os.readlink(name, dir_fd=dir_fd)
    except OSError:
        return None


def _mapped(exc: OSError, shown: str, root: Path | None) -> Exception:
    if isinstance(exc, FileNotFoundError):
        where = f" in {root}, the directory files may be read from" if root is not None else ""
        return NotFound(f"file not found: {shown}{where}")
    if isinstance(exc, PermissionError):
        return Forbidden(f"permission denied: {shown}")
    return InvalidInput(f"cannot open {shown}: {_errno_name(exc)}")


def _errno_name(exc: OSError) -> str:
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


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
        try:
            while size <= max_bytes:
                chunk = os.read(fd, min(1024 * 1024, max_bytes + 1 - size))
                if not chunk:
                    break
                chunks.append(chunk)
                size += len(chunk)
        except OSError as exc:  # a "regular" file the kernel will not read, such as /proc/self/mem
            raise InvalidInput(f"cannot read {shown}: {_errno_name(exc)}") from exc
    finally:
        os.close(fd)
    if size > max_bytes:  # it grew after the size check
        raise too_large
    return b"".join(chunks)


def _resolve(candidate: Path, shown: str) -> Path:
    try:
        return candidate.resolve(strict=True)
    except FileNotFoundError as exc:
        raise NotFound(f"file not found: {shown}") from exc
    except PermissionError as exc:
        raise Forbidden(f"permission denied: {shown}") from exc
    except (OSError, RuntimeError) as exc:  # symlink loops, name too long...
        raise InvalidInput(f"cannot resolve {shown}: {type(exc).__name__}") from exc


def _excerpt(path: str) -> str:
    return path if len(path) <= _SHOWN_CHARS else path[: _SHOWN_CHARS - 1] + "…"
