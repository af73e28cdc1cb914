"""The embedded store's StoreSecret: a ring of keys (domain/key_rings.py) in `store-secret.key` in
the data directory (mode 0600). The first process that needs it makes it: 32 random bytes, hex, one
line (the format an earlier release wrote and still reads), made whole in a file of its own and
linked into place, so two processes making it at once agree on the one that got there first, and
none reads it half-written. `cairn secret rotate` rewrites it as the JSON ring, the old key kept as
a previous one, in a file of its own fsynced and renamed over it (under a lock, so two rotations do
not lose a key): a process killed at any point leaves the old file or the new one, each a ring that
holds every key marks were made under (and the copy it was writing, which the next rotation
removes). A key file that is neither is refused as Unavailable and left
as it is: made again, it would no longer match what was derived from it (restore it from the backup
the data directory came with). One that other users of the machine may read (a data directory
restored under a loose umask) is used, with a warning naming its mode, never its bytes: whoever
reads it can test names against the erasure marks it keys."""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
import stat
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from cairn import faults
from cairn.adapters.local.durable_dirs import fsync_directory
from cairn.domain.errors import Conflict, InvalidInput, Unavailable
from cairn.domain.key_rings import ROTATED_MEANWHILE, KeyRing, SecretKey, parse_ring, render_ring

SECRET_BYTES = 32
MAX_FILE_BYTES = 16 * 1024

log = logging.getLogger(__name__)


class FileStoreSecret:
    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._ring: KeyRing | None = None
        self._lock = threading.Lock()

    def ring(self, fresh: bool = False) -> KeyRing:
        with self._lock:
            if self._ring is None or fresh:
                self._ring = self._read() if os.path.lexists(self.path) else self._make()
            return self._ring

    def read(self) -> bytes:
        """The current key."""
        return self.ring().current.value

    def rotate(self) -> KeyRing:
        with self._rewriting() as ring:
            return self._write(ring.rotated(SecretKey(secrets.token_bytes(SECRET_BYTES))))

    def drop_previous(self, current: str) -> KeyRing:
        with self._rewriting() as ring:
            if ring.current.id != current:
                raise Conflict(ROTATED_MEANWHILE)
            return self._write(KeyRing(ring.current)) if ring.previous else ring

    @contextmanager
    def _rewriting(self) -> Iterator[KeyRing]:
        lock = self.path.with_name(f"{self.path.name}.lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as exc:
            raise self._refused(exc.strerror or type(exc).__name__) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._remove_leftovers()
            with self._lock:
                self._ring = None
            yield self.ring(fresh=True)
        finally:
            os.close(fd)  # releases the lock

    def _remove_leftovers(self) -> None:
        """The copies of a ring (or of a first key) that a process killed before renaming (or
        linking) it left beside the key file: they hold keys, so they go once their maker is gone."""
        for left in self.path.parent.glob(f"{self.path.name}.*.*"):
            pid = left.name[len(self.path.name) + 1 :].split(".", 1)[0]
            if pid.isdigit() and int(pid) != os.getpid() and not _running(int(pid)):
                with suppress(OSError):
                    left.unlink()

    def _write(self, ring: KeyRing) -> KeyRing:
        made = self.path.with_name(f"{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        try:
            fd = os.open(made, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:
                os.write(fd, render_ring(ring, bytes.hex).encode())
                os.fsync(fd)
            finally:
                os.close(fd)
            faults.reached("secret.ring_made")
            os.replace(made, self.path)
            fsync_directory(self.path.parent)
        except OSError as exc:
            with suppress(OSError):
                made.unlink()
            raise self._refused(exc.strerror or type(exc).__name__) from exc
        with self._lock:
            self._ring = ring
        return ring

    def _make(self) -> KeyRing:
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

    def _read(self) -> KeyRing:
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
            text = os.read(fd, MAX_FILE_BYTES)
        except OSError as exc:
            raise self._refused(exc.strerror or type(exc).__name__) from exc
        finally:
            os.close(fd)
        try:
            return parse_ring(text.decode("ascii"), _key_of)
        except (UnicodeDecodeError, InvalidInput) as exc:
            reason = exc.message if isinstance(exc, InvalidInput) else "not text"
            raise self._refused(f"{reason}; a single key is {2 * SECRET_BYTES} hex digits") from None

    def _refused(self, reason: str) -> Unavailable:
        return Unavailable(f"{self.path.name} (the store's secret) cannot be used: {reason}")


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's: running
        return True
    return True


def _key_of(text: str) -> bytes:
    key = bytes.fromhex(text.strip())
    if len(key) != SECRET_BYTES:
        raise ValueError("not a key")
    return key
