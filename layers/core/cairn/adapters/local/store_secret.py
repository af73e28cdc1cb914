"""The embedded store's StoreSecret: 32 random bytes, hex, in `store-secret.key` in the data
directory (mode 0600), made by the first process that needs it. It is made whole in a file of its
own and linked into place, so two processes making it at once agree on the one that got there
first, and none reads it half-written. A key file that is not a regular file of 64 hex digits is
refused as Unavailable and left as it is: made again, it would no longer match what was derived
from it (restore it from the backup the data directory came with). One that other users of the
machine may read (a data directory restored under a loose umask) is used, with a warning naming its
mode, never its bytes: whoever reads it can test names against the erasure marks it keys."""

from __future__ import annotations

import logging
import os
import secrets
import stat
import threading
from contextlib import suppress
from pathlib import Path

from cairn.adapters.local.durable_dirs import fsync_directory
from cairn.domain.errors import Unavailable

SECRET_BYTES = 32

log = logging.getLogger(__name__)


class FileStoreSecret:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._secret: bytes | None = None
        self._lock = threading.Lock()

    def read(self) -> bytes:
        with self._lock:
            if self._secret is None:
                self._secret = self._read() if os.path.lexists(self.path) else self._make()
            return self._secret

    def _make(self) -> bytes:
        made = self.path.with_name(f"{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, secrets.token_bytes(SECRET_BYTES).hex().encode() + b"\n")
                os.fsync(fd)
            finally:
                os.close(fd)
            with suppress(FileExistsError):  # another process made it first: its key is the one
                os.link(made, self.path)
            fsync_directory(self.path.parent)
        except OSError as exc:
            raise self._refused(exc.strerror or type(exc).__name__) from exc
        finally:
            with suppress(OSError):
                made.unlink()
        return self._read()

    def _read(self) -> bytes:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise self._refused(exc.strerror or type(exc).__name__) from exc
        try:
            mode = os.fstat(fd).st_mode
            if not stat.S_ISREG(mode):
                raise self._refused("not a regular file")
            if mode & 0o077:
                log.warning(
                    "%s (the store's secret) may be read by other users of this machine (mode %03o): "
                    "chmod 600 it",
                    self.path,
                    stat.S_IMODE(mode),
                )
            text = os.read(fd, 4 * SECRET_BYTES)
        except OSError as exc:
            raise self._refused(exc.strerror or type(exc).__name__) from exc
        finally:
            os.close(fd)
        try:
            secret = bytes.fromhex(text.decode("ascii").strip())
        except ValueError:
            secret = b""
        if len(secret) != SECRET_BYTES:
            raise self._refused(f"not {2 * SECRET_BYTES} hex digits")
        return secret

    def _refused(self, reason: str) -> Unavailable:
        return Unavailable(f"{self.path.name} (the store's secret) cannot be used: {reason}")
