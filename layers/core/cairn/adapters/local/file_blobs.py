"""BlobStore on a directory: key "a/b.md" is the file <root>/a/b.md.

Writes go to a temp file in the target directory, are fsynced, then renamed over the target,
so a reader sees the old bytes or the new bytes, never a mix. Empty directories left by
deletes are kept (removing them would race with concurrent puts), except by `delete_prefix`,
which removes a whole folder: nothing should be writing into a folder being deleted.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from cairn.adapters.local.durable_dirs import fsync_directory, make_directories, storage_errors
from cairn.domain.errors import Conflict, InvalidInput, NotFound

MAX_KEY_BYTES = 1024  # S3's limit, kept here so backends agree
MAX_SEGMENT_BYTES = 255  # a file name on common filesystems
TEMP_PREFIX = ".tmp-"


def validate_key(key: str) -> str:
    """Return `key` when it is a clean relative '/'-separated key, else raise InvalidInput."""
    if not isinstance(key, str) or not key:
        raise InvalidInput("blob key must be a non-empty string")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInput("blob key is not valid Unicode text") from exc
    if size > MAX_KEY_BYTES:
        raise InvalidInput(f"blob key exceeds {MAX_KEY_BYTES} bytes")
    if "\x00" in key or "\\" in key:
        raise InvalidInput("blob key must not contain NUL or backslash")
    if key.startswith("/"):
        raise InvalidInput("blob key must be relative")
    segments = key.split("/")
    if any(seg in ("", ".", "..") for seg in segments):
        raise InvalidInput("blob key must not contain empty, '.' or '..' segments")
    return key


def validate_prefix(prefix: str) -> str:
    """Return `prefix` when it names a whole folder ("a/b/": a clean key and a '/'), else raise
    InvalidInput: deleting by a partial name ("brn_1" would take "brn_10/") is never meant."""
    if not isinstance(prefix, str) or not prefix.endswith("/"):
        raise InvalidInput("a blob prefix must be a folder ending with '/'")
    validate_key(prefix[:-1])
    return prefix


class FileBlobStore:
    def __init__(self, root: Path) -> None:
        self._root = Path(root)
        make_directories(self._root)

    @property
    def root(self) -> Path:
        return self._root

    def put(self, key: str, data: bytes) -> None:
        target = self._path(key)
        with storage_errors():  # a full disk: StorageFull, not an OSError
            self._put(target, key, data)

    def _put(self, target: Path, key: str, data: bytes) -> None:
        try:
            make_directories(target.parent)
        except (FileExistsError, NotADirectoryError) as exc:
            raise Conflict(f"blob key {key!r} is below an existing blob") from exc
        fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX, dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except IsADirectoryError as exc:
            raise Conflict(f"blob key {key!r} is a prefix of existing blobs") from exc
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        fsync_directory(target.parent)

    def get(self, key: str) -> bytes:
        try:
            return self._path(key).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise NotFound(f"no blob {key!r}") from exc

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, NotADirectoryError):
            self._path(key).unlink()

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def delete_prefix(self, prefix: str) -> int:
        """Delete the folder's files bottom-up, then its directories once empty.

        Never follows a symbolic link: one below the folder is removed as a link, and a folder
        reached through one is refused (Conflict), as it would lead out of the root. Leftover
        temp files of interrupted puts go too, uncounted: they are not keys."""
        folder = self._path(validate_prefix(prefix)[:-1])
        current = self._root
        for part in folder.relative_to(self._root).parts:
            current = current / part
            if current.is_symlink():
                raise Conflict(f"blob folder {prefix!r} is reached through a symbolic link")
        if not folder.is_dir():
            return 0
        removed = 0
        for parent, dirs, files in os.walk(folder, topdown=False, followlinks=False):
            for name in files:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(parent, name))
                    if not name.startswith(TEMP_PREFIX):
                        removed += 1
            for name in dirs:
                _remove_dir_entry(os.path.join(parent, name))
        _remove_dir_entry(str(folder))
        return removed

    def folders(self, prefix: str) -> Iterator[tuple[str, float]]:
        for entry in self._entries(prefix):
            if not entry.is_dir(follow_symlinks=False):
                continue
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                inside = [e.stat(follow_symlinks=False).st_mtime for e in os.scandir(entry.path)]
                yield entry.name, max([entry.stat(follow_symlinks=False).st_mtime, *inside])

    def files(self, prefix: str) -> Iterator[tuple[str, float]]:
        for entry in self._entries(prefix):
            if entry.name.startswith(TEMP_PREFIX) or not entry.is_file(follow_symlinks=False):
                continue
            with contextlib.suppress(FileNotFoundError):  # removed meanwhile
                yield entry.name, entry.stat(follow_symlinks=False).st_mtime

    def _entries(self, prefix: str) -> list[os.DirEntry[str]]:
        """What the folder `prefix` names holds directly; nothing when it does not exist."""
        try:
            return list(os.scandir(self._path(validate_prefix(prefix)[:-1])))
        except (FileNotFoundError, NotADirectoryError):
            return []

    def _path(self, key: str) -> Path:
        validate_key(key)
        if any(len(seg.encode("utf-8")) > MAX_SEGMENT_BYTES for seg in key.split("/")):
            raise InvalidInput(f"blob key segments must be at most {MAX_SEGMENT_BYTES} bytes")
        return self._root.joinpath(*key.split("/"))


def _remove_dir_entry(path: str) -> None:
    """Unlink a symbolic link to a directory, or remove a directory if it is empty by now."""
    if os.path.islink(path):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        return
    with contextlib.suppress(OSError):  # gone, or a concurrent put wrote into it: leave it
        os.rmdir(path)
