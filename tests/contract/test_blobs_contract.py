"""BlobStore contract: every adapter (see conftest.BLOB_STORES) must pass all of it."""

from __future__ import annotations

import contextlib
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from cairn.adapters.aws import s3_blobs as s3_module
from cairn.adapters.local.file_blobs import TEMP_PREFIX, FileBlobStore
from cairn.domain.errors import Conflict, InvalidInput, NotFound
from cairn.ports.blobs import BlobStore
from tests.contract.aws_storage import s3_blobs

BAD_PREFIXES = ["", "brn_1", "/", "brn_1//", "../", "brn_1/../", "./", "/abs/", "a\\b/", "a\x00/"]
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


FOLDER = ["brn_1/a", "brn_1/docs/b.md", "brn_1/docs/deep/c", "brn_1/docs/deep/d"]
AROUND = ["brn_1x/a", "brn_10/docs/b.md", "brn_0/a", "other/brn_1/a", "brn_1.md"]


def test_delete_prefix_removes_exactly_the_folder(blobs: BlobStore) -> None:
    for key in FOLDER + AROUND:
        blobs.put(key, key.encode())
    assert blobs.delete_prefix("brn_1/docs/deep/") == 2
    assert [blobs.exists(k) for k in FOLDER] == [True, True, False, False]
    assert blobs.delete_prefix("brn_1/") == 2
    assert not any(blobs.exists(k) for k in FOLDER)
    with pytest.raises(NotFound):
        blobs.get("brn_1/docs/b.md")
    assert [blobs.get(k) for k in AROUND] == [k.encode() for k in AROUND]
    # The folder can be filled again afterwards.
    blobs.put("brn_1/docs/b.md", b"new")
    assert blobs.get("brn_1/docs/b.md") == b"new"


def test_delete_prefix_of_a_missing_folder_removes_nothing(blobs: BlobStore) -> None:
    blobs.put("brn_1x/a", b"x")
    blobs.put("brn_2", b"a blob, not a folder")
    assert blobs.delete_prefix("brn_1/") == 0
    assert blobs.delete_prefix("brn_2/") == 0
    assert blobs.delete_prefix("never/there/") == 0
    assert blobs.get("brn_1x/a") == b"x"
    assert blobs.get("brn_2") == b"a blob, not a folder"


@pytest.mark.parametrize("prefix", BAD_PREFIXES)
def test_delete_prefix_refuses_anything_but_a_folder(blobs: BlobStore, prefix: str) -> None:
    blobs.put("brn_1/a", b"x")
    with pytest.raises(InvalidInput):
        blobs.delete_prefix(prefix)
    assert blobs.get("brn_1/a") == b"x"


# -- S3 adapter specifics ------------------------------------------------------------------------


def test_s3_delete_prefix_pages_through_listings_and_batches(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(s3_module, "DELETE_BATCH", 2)
    with s3_blobs(request) as store:
        keys = [f"brn_1/doc{i}" for i in range(7)]
        for key in [*keys, "brn_10/doc", "brn_1x"]:
            store.put(key, b"x")
        assert store.delete_prefix("brn_1/") == 7
        assert not any(store.exists(k) for k in keys)
        assert store.exists("brn_10/doc") and store.exists("brn_1x")
        listed = store.client.list_objects_v2(Bucket=store.bucket)["Contents"]
        assert sorted(o["Key"] for o in listed) == ["blobs/brn_10/doc", "blobs/brn_1x"]


def test_s3_delete_prefix_counts_live_objects_from_its_one_version_listing(
    request: pytest.FixtureRequest,
) -> None:
    """The objects counted are those whose latest version is not a delete marker, read off the
    ListObjectVersions it deletes from: no ListObjectsV2 besides (an erasure's request a folder)."""
    with s3_blobs(request) as store:
        for key, data in [("brn_1/a", b"1"), ("brn_1/a", b"2"), ("brn_1/b", b"3"), ("brn_1/c", b"4")]:
            store.put(key, data)
        store.client.delete_object(Bucket=store.bucket, Key="blobs/brn_1/c")  # a delete marker latest
        sent: list[str] = []
        store.client.meta.events.register(
            "provide-client-params.s3", lambda model, **_: sent.append(model.name)
        )
        assert store.delete_prefix("brn_1/") == 2
        assert sorted(sent) == ["DeleteObjects", "ListObjectVersions"]
        left = store.client.list_object_versions(Bucket=store.bucket, Prefix="blobs/brn_1/")
        assert not left.get("Versions") and not left.get("DeleteMarkers")


# -- file adapter specifics ----------------------------------------------------------------------


def test_files_delete_prefix_removes_the_directories_and_leftover_temp_files(tmp_path: Path) -> None:
    store = FileBlobStore(tmp_path / "root")
    for key in [*FOLDER, "brn_1x/a", "brn_2/deep/a"]:
        store.put(key, b"x")
    (tmp_path / "root/brn_1/docs" / f"{TEMP_PREFIX}interrupted").write_bytes(b"half a put")
    (tmp_path / "root/brn_1/empty/dir").mkdir(parents=True)
    assert store.delete_prefix("brn_1/") == 4
    assert store.delete_prefix("brn_2/deep/") == 1
    remaining = sorted(p.relative_to(tmp_path / "root").as_posix() for p in (tmp_path / "root").rglob("*"))
    assert remaining == ["brn_1x", "brn_1x/a", "brn_2"]  # brn_2 stays: a parent of the folder


def test_files_delete_prefix_never_follows_symlinks_out_of_the_root(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "secret").write_bytes(b"keep")
    (outside / "sub/secret").write_bytes(b"keep")
    store = FileBlobStore(tmp_path / "root")
    store.put("brn_1/a", b"x")
    (tmp_path / "root/brn_1/to_dir").symlink_to(outside / "sub", target_is_directory=True)
    (tmp_path / "root/brn_1/to_file").symlink_to(outside / "secret")
    (tmp_path / "root/brn_2").symlink_to(outside, target_is_directory=True)
    (tmp_path / "root/brn_3").mkdir()
    (tmp_path / "root/brn_3/via").symlink_to(outside, target_is_directory=True)
    assert store.delete_prefix("brn_1/") == 2  # "a", and the link that stood as a file
    assert not (tmp_path / "root/brn_1").exists()
    with pytest.raises(Conflict):
        store.delete_prefix("brn_2/")
    with pytest.raises(Conflict):
        store.delete_prefix("brn_3/via/sub/")
    assert (outside / "secret").read_bytes() == b"keep"
    assert (outside / "sub/secret").read_bytes() == b"keep"


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
