"""BlobStore contract: every adapter (see conftest.BLOB_STORES) must pass all of it."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.ports.blobs import BlobStore

BAD_KEYS = ["", "/abs", "a/../b", "..", "a/./b", "a//b", "a/", "a\\b", "a\x00b", "\ud800", "x" * 1025]


def test_put_then_get_round_trips(blobs: BlobStore) -> None:
    # Given stored objects, including empty and binary content
    blobs.put("brain/doc/été 🌲.md", b"hello")
    blobs.put("empty", b"")
    blobs.put("bin", bytes(range(256)))
    # Then the bytes read back are identical
    assert blobs.get("brain/doc/été 🌲.md") == b"hello"
    assert blobs.get("empty") == b""
    assert blobs.get("bin") == bytes(range(256))
    assert blobs.exists("brain/doc/été 🌲.md")


def test_put_overwrites(blobs: BlobStore) -> None:
    blobs.put("a/b", b"first version, longer")
    blobs.put("a/b", b"second")
    assert blobs.get("a/b") == b"second"


def test_missing_key_is_not_found(blobs: BlobStore) -> None:
    with pytest.raises(NotFound):
        blobs.get("nope/nothing")
    assert not blobs.exists("nope/nothing")


def test_prefix_of_a_key_is_not_a_blob(blobs: BlobStore) -> None:
    blobs.put("dir/file", b"x")
    assert not blobs.exists("dir")
    with pytest.raises(NotFound):
        blobs.get("dir")


def test_delete_removes_and_tolerates_missing(blobs: BlobStore) -> None:
    blobs.put("a/b", b"x")
    blobs.delete("a/b")
    assert not blobs.exists("a/b")
    with pytest.raises(NotFound):
        blobs.get("a/b")
    blobs.delete("a/b")
    blobs.delete("never/there")


@pytest.mark.parametrize("key", BAD_KEYS)
def test_bad_keys_are_rejected_everywhere(blobs: BlobStore, key: str) -> None:
    with pytest.raises(InvalidInput):
        blobs.put(key, b"x")
    with pytest.raises(InvalidInput):
        blobs.get(key)
    with pytest.raises(InvalidInput):
        blobs.delete(key)
    with pytest.raises(InvalidInput):
        blobs.exists(key)


def test_concurrent_writers_of_one_key_never_tear(blobs: BlobStore) -> None:
    writers, rounds, size = 8, 10, 256 * 1024
    contents = [bytes([i]) * size for i in range(writers)]
    start = threading.Barrier(writers * 2)

    def write(i: int) -> None:
        start.wait()
        for _ in range(rounds):
            blobs.put("shared/blob", contents[i])

    def read() -> None:
        start.wait()
        for _ in range(rounds * 2):
            with contextlib.suppress(NotFound):  # before the first write lands
                assert blobs.get("shared/blob") in contents

    with ThreadPoolExecutor(writers * 2) as pool:
        futures = [pool.submit(write, i) for i in range(writers)]
        futures += [pool.submit(read) for _ in range(writers)]
        for future in futures:
            future.result()
    assert blobs.get("shared/blob") in contents


# -- file adapter specifics ----------------------------------------------------------------------


def test_files_leave_no_temp_files_and_map_keys_to_paths(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path)
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda i: store.put(f"k/{i % 3}", bytes([i]) * 1000), range(64)))
    store.put("k/3", b"x")
    store.delete("k/3")
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")) == [
        "k",
        "k/0",
        "k/1",
        "k/2",
    ]


def test_files_reject_a_key_that_collides_with_a_directory_or_file(tmp_path: Path) -> None:
    # S3 allows both "a" and "a/b"; a filesystem cannot, so the file adapter refuses clearly.
    store = FileBlobStore(tmp_path)
    store.put("a/b", b"x")
    with pytest.raises(Conflict):
        store.put("a", b"y")
    store.put("c", b"y")
    with pytest.raises(Conflict):
        store.put("c/d", b"z")
    with pytest.raises(Conflict):
        store.put("c/d/e", b"z")
    assert store.get("a/b") == b"x"
    assert store.get("c") == b"y"
    assert [p.name for p in tmp_path.rglob(".tmp-*")] == []


def test_files_reject_overlong_segments(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        FileBlobStore(tmp_path).put("a/" + "x" * 256, b"x")
