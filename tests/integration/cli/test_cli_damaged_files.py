"""Damaged files of the embedded store, as the `cairn` commands meet them (in-process, on the real
store): a damaged search index is moved aside and rebuilt from the documents; a damaged records or
jobs database, or a directory where a database or its log should be, is refused in one line naming
the file and what to do (exit 2, no traceback); a full disk is one line too. And a write that the
full disk stopped after its record's commit is not acknowledged, and indexed once there is room."""

from __future__ import annotations

import argparse
import errno
import logging
import os
from dataclasses import replace
from pathlib import Path

import pytest

from cairn.adapters.local.sqlite_chunks import SqliteChunkIndex
from cairn.adapters.local.vector_store import VectorFile
from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.container import Container
from cairn.domain.errors import StorageFull
from cairn.entrypoints.cli import main
from cairn.entrypoints.cli.check import cmd_check
from cairn.ports.chunks import ANN_OK, ChunkFilter, ChunkQuery
from tests.support.shapes import DIM, embedded
from tests.support.store_copies import closed, copied


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def ingested(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """40 notes ingested into brain `b` by `cairn ingest`, once a module: each test damages a copy."""
    docs = tmp_path_factory.mktemp("docs")
    for n in range(40):
        (docs / f"n{n}.md").write_text(f"# Note {n}\n\nzebra{n} eats grass near river{n}.\n")
    data = tmp_path_factory.mktemp("ingested") / "data"
    assert main(["ingest", str(docs), "--brain", "b", "--create", "--data-dir", str(data)]) == 0
    # The command ran in this process: its connections are closed as a `cairn` process's are
    # when it exits, so the next command opens each database file alone.
    return closed(data)


@pytest.fixture
def data(ingested: Path, tmp_path: Path) -> Path:
    return copied(ingested, tmp_path / "data")


def flip_middle_byte(path: Path) -> None:
    """Damage the page in the middle of the file where SQLite looks first: its header (a flipped
    byte of a stored value would read back as another value, which no check can tell)."""
    page = 4096
    middle = (path.stat().st_size // 2) // page * page
    with path.open("r+b") as fh:
        fh.seek(middle)
        head = fh.read(8)
        fh.seek(middle)
        fh.write(bytes(b ^ 0xFF for b in head))


def test_a_damaged_search_index_is_moved_aside_and_rebuilt_by_check(
    data: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    flip_middle_byte(data / "chunks.sqlite3")

    with caplog.at_level(logging.WARNING):
        code, out, err = run(capsys, "check", "--data-dir", str(data))

    assert code == 0 and "Traceback" not in err
    assert "indexed 40 documents again" in out
    assert "chunks.sqlite3" in caplog.text and "is damaged" in caplog.text and "moved aside" in caplog.text
    moved = {p.name.split(".damaged-")[0] for p in data.glob("*.damaged-*")}
    assert (
        {"chunks.sqlite3", "vectors"}
        <= moved
        <= {"chunks.sqlite3", "chunks.sqlite3-wal", "chunks.sqlite3-shm", "vectors"}
    )
    code, out, _ = run(capsys, "search", "zebra7", "--data-dir", str(data))
    assert code == 0 and "n7.md" in out.splitlines()[0]


@pytest.mark.parametrize("command", ["check", "compact"])
@pytest.mark.parametrize("name", ["records.sqlite3", "jobs.sqlite3"])
def test_a_damaged_records_or_jobs_database_is_refused_in_one_line(
    data: Path, capsys: pytest.CaptureFixture[str], name: str, command: str
) -> None:
    os.truncate(data / name, (data / name).stat().st_size // 2)

    code, _, err = run(capsys, command, "--data-dir", str(data))

    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: damaged_store: {name} in {data.resolve()} is damaged")
    assert "from a backup" in err


def test_a_truncated_records_database_is_refused_when_a_command_opens_it(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """SQLite finds a database file shorter than its header says when it opens it: any command
    refuses it then, naming the file and what to do."""
    os.truncate(data / "records.sqlite3", (data / "records.sqlite3").stat().st_size // 2)

    code, _, err = run(capsys, "search", "zebra1", "--data-dir", str(data))

    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: damaged_store: records.sqlite3 in {data.resolve()} is damaged")
    assert "from a backup" in err


@pytest.mark.parametrize("lost", ["emptied", "deleted"])
def test_a_records_database_lost_under_a_store_is_refused_never_started_empty(
    data: Path, capsys: pytest.CaptureFixture[str], lost: str
) -> None:
    """A crash can leave a file of 0 bytes; opened, it would be a new, empty store over the
    documents' content, answering every brain as gone and taking new ones at their slugs."""
    if lost == "emptied":
        os.truncate(data / "records.sqlite3", 0)
    else:
        (data / "records.sqlite3").unlink()

    # a command that makes a store where there is none, as `cairn serve` does; one that only reads
    for command in (("brains", "create", "Notes"), ("check",)):
        code, _, err = run(capsys, *command, "--data-dir", str(data))

        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
        assert err.startswith(f"error: damaged_store: records.sqlite3 in {data.resolve()} is damaged")
        assert ("empty (0 bytes)" if lost == "emptied" else "missing") in err and "from a backup" in err
        assert not (data / "records.sqlite3").exists() or (data / "records.sqlite3").stat().st_size == 0


def test_check_dry_run_reports_a_damaged_search_index_and_moves_nothing(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flip_middle_byte(data / "chunks.sqlite3")
    before = sorted(p.name for p in data.iterdir())

    code, out, err = run(capsys, "check", "--dry-run", "--data-dir", str(data))

    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: damaged_store: chunks.sqlite3 in {data.resolve()} is damaged")
    assert "without --dry-run moves it aside" in err
    assert sorted(p.name for p in data.iterdir()) == before


def test_a_command_that_reads_a_damaged_page_says_so_in_one_line(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Commands other than check and compact do not read every page first: the page
    they cannot read is said as a damaged store, and `cairn check` names the file. The
    file keeps its size, so opening it finds nothing wrong."""
    path = data / "records.sqlite3"
    size = path.stat().st_size
    with path.open("r+b") as fh:  # the second half's pages zeroed: the items' leaves among them
        fh.seek(size // 2)
        fh.write(bytes(size - size // 2))

    code, _, err = run(capsys, "search", "zebra1", "--data-dir", str(data))

    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("error: damaged_store: ") and "`cairn check` names it" in err


@pytest.mark.parametrize(
    "name", ["records.sqlite3", "records.sqlite3-wal", "records.sqlite3-shm", "jobs.sqlite3"]
)
def test_a_directory_where_a_database_or_its_log_should_be_is_refused(
    data: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    (data / name).unlink(missing_ok=True)
    (data / name).mkdir()

    code, _, err = run(capsys, "check", "--data-dir", str(data))

    assert code == 2 and "Traceback" not in err
    assert err.startswith("error: damaged_store: ") and f"({name} is a directory)" in err
    if name.endswith("-shm"):
        assert f"remove {name}" in err


def test_a_directory_where_the_index_log_should_be_sets_the_index_aside(
    data: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (data / "chunks.sqlite3-wal").unlink(missing_ok=True)
    (data / "chunks.sqlite3-wal").mkdir()

    code, out, _ = run(capsys, "check", "--data-dir", str(data))

    assert code == 0 and "indexed 40 documents again" in out
    assert (data / "chunks.sqlite3-wal").is_file() or not (data / "chunks.sqlite3-wal").exists()


def test_a_full_disk_is_one_line_and_exit_2(
    data: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(SqliteChunkIndex, "compact", full)

    code, _, err = run(capsys, "compact", "--data-dir", str(data))

    assert code == 2 and err.strip() == (
        "error: storage_full: the server's disk is full: the request was not completed; "
        "free disk space, then send it again"
    )


def test_a_write_the_full_disk_stopped_after_its_commit_is_indexed_once_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    container = build_container(Settings(data_dir=tmp_path / "data"))
    brain = container.brains.create("B", slug="b")
    append = VectorFile.append

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")  # the vector file's append

    monkeypatch.setattr(VectorFile, "append", full)
    with pytest.raises(StorageFull):
        container.documents.write(brain, "a.md", b"# A\n\nThe heron waits by the weir.\n")
    monkeypatch.setattr(VectorFile, "append", append)
    assert container.documents.read(brain, "a.md")  # its record was committed: not acknowledged

    def found() -> list[str]:
        vector = container.adapters.embedder.embed(["heron weir"])[0].tolist()
        query = ChunkQuery(text="heron weir", vector=vector, filter=ChunkFilter(brain_ids=(brain.id,)))
        return [hit.chunk.path for hit in container.adapters.chunks.search(query)]

    assert found() == []  # not acknowledged, not yet indexed: its intent stands
    assert container.documents.settle_pending() == 1  # what the running server's sweeper does
    assert found() == ["a.md"]


def test_check_builds_a_damaged_approximate_index_again_before_it_exits(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A server builds it in the background; `cairn check` builds it in the foreground and waits
    for the index's own threads before the process ends (one left building was cut off natively)."""
    data = tmp_path / "data"

    def opened() -> Container:
        index = SqliteChunkIndex(
            data / "chunks.sqlite3", data / "vectors", DIM, ann_min_rows=50, background_maintenance=False
        )
        return build_container(Settings(data_dir=data), replace(embedded(data), chunks=index))

    first = opened()
    brain = first.brains.create("Ann", slug="ann")
    for i in range(60):
        first.documents.write(brain, f"notes/{i}.md", f"# Note {i}\n\nline {i} about topic {i % 7}".encode())
    built = first.adapters.chunks.compact(brain.id)  # type: ignore[attr-defined]
    assert built is not None and built.indexed_rows == 60
    first.adapters.chunks.close()  # type: ignore[attr-defined]
    (graph,) = (data / "vectors").glob("*.faiss")
    with graph.open("r+b") as fh:
        head = fh.read(32)
        fh.seek(0)
        fh.write(bytes(b ^ 0xA5 for b in head))

    code = cmd_check(opened(), argparse.Namespace(brain=[], dry_run=False, deep=False))

    assert code == 0 and "ANN index rebuilt (60 rows)" in capsys.readouterr().out
    assert opened().adapters.chunks.check(brain.id).ann == ANN_OK  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["vectors", "blobs", "ingest"])
def test_a_file_where_a_directory_of_the_store_should_be_is_refused_in_one_line(
    data: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    path = data / name
    if path.is_dir():
        for inner in sorted(path.rglob("*"), reverse=True):
            inner.unlink() if inner.is_file() else inner.rmdir()
        path.rmdir()
    path.write_text("not a directory")

    code, _, err = run(capsys, "search", "zebra1", "--data-dir", str(data))

    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith(f"error: damaged_store: {name} ({path.resolve()}) is not a directory")
