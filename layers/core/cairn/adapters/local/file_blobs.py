"""BlobStore on a directory: key "a/b.md" is the file <root>/a/b.md.

Writes go to a temp file in the target directory, are fsynced, then renamed over the target,
so a reader sees the old bytes or the new bytes, never a mix. Empty directories left by
deletes are kept (removing them would race with concurrent puts).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path

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


class FileBlobStore:
    def __init__(self, root: Path) -> None:
        self._root = Path(root)
        self._root.mkdir(parents=True, exist_ok=True)

    @property
    def root(self) -> Path:
        return self._root

    def put(self, key: str, data: bytes) -> None:
        target = self._path(key)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
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
        _fsync_dir(target.parent)

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

    def _path(self, key: str) -> Path:
        validate_key(key)
        if any(len(seg.encode("utf-8")) > MAX_SEGMENT_BYTES for seg in key.split("/")):
            raise InvalidInput(f"blob key segments must be at most {MAX_SEGMENT_BYTES} bytes")
        return self._root.joinpath(*key.split("/"))


def _fsync_dir(path: Path) -> None:
    """Make the rename durable; a no-op where directories cannot be opened (Windows)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
