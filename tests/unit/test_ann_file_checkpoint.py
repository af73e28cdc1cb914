"""A process's first use of a brain's ANN index reads the index file only when something wrote it
since it was last verified (ann_index.verified: its identity is recorded in its sum): counted as
whole-file reads of it. A file replaced, cut short, written in place (its mtime set back),
copied to another inode or restored from a backup is read in full at the first use, and passed
over for exact search and rebuilt when damaged; `cairn check` and the warm-up read it whatever its
identity, so they find what changed with no write."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cairn.adapters.local import ann_index, page_cache
from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_checkpoint import identity
from cairn.ports.chunks import ANN_OK, ANN_REBUILDING, Stop
from tests.contract.test_chunk_files import DIM, ROWS, chunks, top, vectors

pytest.importorskip("faiss")
PROBES = range(0, ROWS, 7)


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    return tmp_path / "chunks.sqlite3", tmp_path / "vectors"


def opened(files: tuple[Path, Path]) -> SqliteChunkIndex:
    # The brain of 60 rows is indexed, and searched through its graph.
    return SqliteChunkIndex(
        files[0], files[1], DIM, background_maintenance=False, ann_min_rows=40, exact_max_rows=5
    )


def index_file(files: tuple[Path, Path]) -> Path:
    return files[1] / "b1.faiss"


@pytest.fixture
def read(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    """Whole reads of a brain's index file (not of one being built), in this process."""
    reads: list[Path] = []
    crc = ann_index.file_crc

    def counted(path: Path, *stop: Stop | None) -> tuple[int, int]:
        if path.name.endswith(".faiss"):
            reads.append(path)
        return crc(path, *stop)

    monkeypatch.setattr(ann_index, "file_crc", counted)
    yield reads


@pytest.fixture
def built(files: tuple[Path, Path]) -> list[list[str]]:
    """ROWS chunks, their index built by compaction; what searches found then."""
    index = opened(files)
    matrix = vectors(ROWS)
    for first in range(0, ROWS, 10):
        index.upsert(chunks(ROWS)[first : first + 10], matrix[first : first + 10])
    assert index.compact("b1") is not None and index.check("b1").ann == ANN_OK
    found = [top(index, matrix[i]) for i in PROBES]
    index.close()
    return found


def searched(files: tuple[Path, Path]) -> tuple[SqliteChunkIndex, list[list[str]]]:
    """A new process's index, after its first searches."""
    index = opened(files)
    return index, [top(index, vectors(ROWS)[i]) for i in PROBES]


def flip_a_byte(path: Path) -> None:
    with path.open("r+b") as fh:
        fh.seek(path.stat().st_size - 100)
        byte = fh.read(1)
        fh.seek(-1, os.SEEK_CUR)
        fh.write(bytes([byte[0] ^ 1]))


def test_an_index_as_its_builder_left_it_is_not_read_at_a_first_use(
    files: tuple[Path, Path], built: list[list[str]], read: list[Path]
) -> None:
    index, found = searched(files)
    assert found == built
    assert index.check("b1", reread=False).ann == ANN_OK  # a start's comparison
    assert read == []  # before: read in full by each process's first use
    assert index.check("b1").ann == ANN_OK  # `cairn check` reads it
    assert read == [index_file(files)]
    index.close()


def test_an_index_one_process_verified_is_not_read_by_the_next(
    files: tuple[Path, Path], built: list[list[str]], read: list[Path]
) -> None:
    """An index whose sum records no identity (written before identities were kept) is read by
    the first process to use it, which records it."""
    summed = ann_index.sum_path(index_file(files))
    recorded = json.loads(summed.read_text())
    summed.write_text(json.dumps({key: recorded[key] for key in ("rows", "bytes", "crc")}))
    searched(files)[0].close()
    assert read == [index_file(files)]
    read.clear()
    index, found = searched(files)
    assert (found, read) == (built, [])
    index.close()


def replaced_by(make: Callable[[Path], None]) -> Callable[[Path], None]:
    """The file's bytes made anew by `make` in a file beside it, renamed over it."""

    def replace(path: Path) -> None:
        beside = path.with_name("elsewhere")
        shutil.copy2(path, beside)
        make(beside)
        beside.replace(path)

    return replace


def written_in_place(path: Path) -> None:
    """A byte changed where it is, and the file's times set back as they were: only ctime moves."""
    before = path.stat()
    flip_a_byte(path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


def copied(path: Path) -> None:
    shutil.copy(path, path.with_name("copy"))
    os.replace(path.with_name("copy"), path)


def restored(damage: Callable[[Path], None]) -> Callable[[Path], None]:
    """The index and its sum copied away (times kept) and copied back over them: the sum restored
    records the original's identity, which the restored file matches in all but ctime."""

    def restore(path: Path) -> None:
        summed = ann_index.sum_path(path)
        backup = path.with_name("backup")
        backup.mkdir()
        shutil.copy2(path, backup / path.name)
        shutil.copy2(summed, backup / summed.name)
        damage(backup / path.name)
        shutil.copy2(backup / path.name, path)  # written into the same inode
        shutil.copy2(backup / summed.name, summed)
        checked = json.loads(summed.read_text()).get("checked")  # kept with the index's sum
        assert checked is None or list(identity(path) or ())[:3] == checked[:3]

    return restore


# Each change, and whether the index is still sound. A file of another size than its sum says
# is refused without reading it (before as now).
CHANGES: dict[str, tuple[Callable[[Path], None], bool]] = {
    "replaced by a sound copy": (replaced_by(lambda path: None), True),
    "replaced by a damaged copy": (replaced_by(flip_a_byte), False),
    "copied to another inode": (copied, True),
    "truncated": (lambda path: os.truncate(path, path.stat().st_size // 2), False),
    "written in place, its mtime set back": (written_in_place, False),
    "restored from a sound backup": (restored(lambda path: None), True),
    "restored from a damaged backup": (restored(written_in_place), False),
}


@pytest.mark.parametrize("case", sorted(CHANGES))
def test_an_index_changed_between_processes_is_read_in_full_and_passed_over_when_damaged(
    files: tuple[Path, Path], built: list[list[str]], read: list[Path], case: str
) -> None:
    change, sound = CHANGES[case]
    change(index_file(files))
    index, found = searched(files)
    assert found == built  # through the graph, or exactly: the same answers
    assert read == ([] if case == "truncated" else [index_file(files)])
    assert index.check("b1", reread=False).ann == (ANN_OK if sound else ANN_REBUILDING)
    if not sound:
        assert index.compact("b1") is not None and index.check("b1").ann == ANN_OK
        assert [top(index, vectors(ROWS)[i]) for i in PROBES] == built
    index.close()


def changed_with_no_write(path: Path) -> None:
    """A disk's own change: the bytes differ, and the identity recorded is the file's as it is."""
    flip_a_byte(path)
    summed = ann_index.sum_path(path)
    recorded = json.loads(summed.read_text())
    summed.write_text(json.dumps(recorded | {"checked": list(identity(path) or ())}))


@pytest.mark.parametrize("finder", ["cairn check", "warm-up"])
def test_a_change_no_write_shows_is_found_by_a_full_read_and_rebuilt(
    files: tuple[Path, Path], built: list[list[str]], finder: str
) -> None:
    changed_with_no_write(index_file(files))
    index, found = searched(files)
    assert found == built
    if finder == "cairn check":
        assert index.check("b1").ann == ANN_REBUILDING
    else:
        index.warm()
        assert index.check("b1", reread=False).ann == ANN_REBUILDING
    assert [top(index, vectors(ROWS)[i]) for i in PROBES] == built  # exactly, meanwhile
    index.close()
    assert searched(files)[0].check("b1", reread=False).ann == ANN_REBUILDING  # the next process too
    index = opened(files)
    assert index.compact("b1") is not None and index.check("b1").ann == ANN_OK
    index.close()


def test_a_sum_replaced_while_its_index_was_read_is_kept(
    files: tuple[Path, Path], built: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check records what it found only in the sum it read: the next index's sum, written by a
    compaction meanwhile, is never overwritten by what was found of the old index."""
    path = index_file(files)
    summed = ann_index.sum_path(path)
    theirs = json.dumps({"rows": 7, "bytes": 1, "crc": 2})
    crc = ann_index.file_crc

    def compacted_meanwhile(read: Path, stop: Stop | None = None) -> tuple[int, int]:
        partial = summed.with_name("partial")
        partial.write_text(theirs)
        partial.replace(summed)
        return crc(read, stop)

    monkeypatch.setattr(ann_index, "file_crc", compacted_meanwhile)
    flip_a_byte(path)
    assert not ann_index.verified(path, reread=True)
    assert summed.read_text() == theirs
    assert sorted(p.name for p in files[1].iterdir() if "partial" in p.name) == []


def test_an_index_written_while_it_is_read_is_not_recorded(
    files: tuple[Path, Path], built: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = index_file(files)
    crc = ann_index.file_crc

    def written_meanwhile(read: Path, stop: Stop | None = None) -> tuple[int, int]:
        found = crc(read, stop)
        written_in_place(read)
        return found

    monkeypatch.setattr(ann_index, "file_crc", written_meanwhile)
    assert ann_index.verified(path, reread=True)  # what it read was sound
    monkeypatch.setattr(ann_index, "file_crc", crc)
    assert not ann_index.verified(path)  # read again, in full: not taken as it was


def test_an_index_not_read_to_be_checked_is_read_in_before_it_is_mapped(
    files: tuple[Path, Path], built: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sum's read used to bring the file into the page cache; mapped cold, a first search
    faults in each page it touches instead (ten times slower at 100,000 rows)."""
    path = index_file(files)
    read: list[Path] = []
    through = page_cache.read_through

    def recording(paths: list[Path], budget: int) -> int:
        read.extend(paths)
        return through(paths, budget)

    monkeypatch.setattr(page_cache, "read_through", recording)
    resident = page_cache.resident
    monkeypatch.setattr(page_cache, "resident", lambda path, probes=64: False)  # as after a reboot
    index, found = searched(files)
    assert (found, read) == (built, [path])
    index.close()
    monkeypatch.setattr(page_cache, "resident", resident)
    searched(files)[0].close()
    assert read == [path] or not hasattr(os, "RWF_NOWAIT")  # in the cache now: not read again


def test_a_sum_left_half_written_goes_with_its_brain(
    files: tuple[Path, Path], built: list[list[str]]
) -> None:
    """What a process stopped while recording an identity leaves (its own partial sum)."""
    left = files[1] / "b1.faiss.sum.4242.139911.partial"
    left.write_text("{")
    index = opened(files)
    index.drop_brain("b1")
    index.close()
    assert sorted(path.name for path in files[1].iterdir() if path.name.startswith("b1")) == []


def grown(files: tuple[Path, Path]) -> SqliteChunkIndex:
    """The brain given ROWS more chunks: its compaction extends the index, replacing its file."""
    index = opened(files)
    index.upsert(chunks(2 * ROWS)[ROWS:], vectors(2 * ROWS)[ROWS:])
    return index


def test_a_first_use_between_a_compactions_sum_and_its_index_finds_the_old_index_sound(
    files: tuple[Path, Path], built: list[list[str]], read: list[Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The new sum is renamed into place before the new index: another process's first use
    in between used to find the old index unlike the sum, pass it over and have it rebuilt."""
    seen: list[str] = []
    write_sum = ann_index._write_sum

    def then_another_process(path: Path, built: Path, rows: int) -> tuple[int, int]:
        written = write_sum(path, built, rows)
        other = opened(files)
        seen.append(other.check("b1", reread=False).ann)
        other.close()
        return written

    monkeypatch.setattr(ann_index, "_write_sum", then_another_process)
    index = grown(files)
    assert index.compact("b1") is not None
    read.clear()  # the compaction's own reads
    assert seen == [ANN_OK]
    assert index.check("b1", reread=False).ann == ANN_OK
    index.close()
    index = searched(files)[0]
    assert (index.check("b1", reread=False).ann, read) == (ANN_OK, [])  # as its builder left it
    index.close()


def test_a_pair_replaced_while_it_was_judged_is_judged_again(
    files: tuple[Path, Path], built: list[list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first use read the old sum; a compaction then renamed its sum and its index into place
    before the first use looked at the index: the old sum and the new index, which do not match,
    are read again before the index is judged."""
    path = index_file(files)
    summed = ann_index.sum_path(path)
    aside = files[1].parent / "aside"
    aside.mkdir()
    old = {name: aside / f"old{name}" for name in ("", ".sum")}
    shutil.copy2(path, old[""])
    shutil.copy2(summed, old[".sum"])
    index = grown(files)
    assert index.compact("b1") is not None
    index.close()
    new = {name: aside / f"new{name}" for name in ("", ".sum")}
    shutil.copy2(path, new[""])
    shutil.copy2(summed, new[".sum"])
    old[".sum"].replace(summed)
    old[""].replace(path)
    assert ann_index.verified(path)  # the old pair, as it was

    look = ann_index.identity

    def compacted_meanwhile(at: Path) -> tuple[int, int, int, int] | None:
        if at == path and new[""].exists():
            new[".sum"].replace(summed)
            new[""].replace(path)
        return look(at)

    monkeypatch.setattr(ann_index, "identity", compacted_meanwhile)
    assert ann_index.verified(path)
    assert not new[""].exists()


def test_an_index_passed_over_is_judged_again_once_rewritten_in_place_with_its_mtime_set_back(
    files: tuple[Path, Path], built: list[list[str]]
) -> None:
    """A process passes a damaged index over until its file changes; a repair written into the
    same inode with its mtime set back changes only its ctime, and used to be passed over still."""
    path = index_file(files)
    index = opened(files)
    written_in_place(path)
    assert index.check("b1", reread=False).ann == ANN_REBUILDING
    damaged = path.stat().st_ctime_ns
    written_in_place(path)  # the same byte flipped back: sound again
    while path.stat().st_ctime_ns == damaged:  # within the file system's clock tick
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns))
    assert index.check("b1", reread=False).ann == ANN_OK
    assert [top(index, vectors(ROWS)[i]) for i in PROBES] == built
    index.close()
