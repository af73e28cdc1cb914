"""`cairn export` and `cairn import` (services/archive/) in-process on the real embedded store."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import threading
from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.cli import main
from tests.support.archive_scenario import SLUG, fill, snapshot


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


SUMMARY = "5 document, 4 memory, 3 link, 1 raw, 2 gap, 0 collection"


def test_export_to_gzip_then_import_into_another_data_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = build_container(Settings(data_dir=tmp_path / "source"))
    brain = fill(source).brain
    archive = tmp_path / "notes.jsonl.gz"

    code, out, err = run(capsys, "export", SLUG, "-o", str(archive), "--data-dir", str(tmp_path / "source"))
    assert code == 0 and out == ""
    assert err.strip() == f"exported brain {SLUG}: {SUMMARY}"
    lines = gzip.decompress(archive.read_bytes()).decode().splitlines()
    assert json.loads(lines[0])["kind"] == "cairn-archive" and len(lines) == 17
    assert json.loads(lines[-1]) == {"kind": "end", "records": 15}
    assert not archive.with_name(archive.name + ".partial").exists()

    target = tmp_path / "target"
    code, out, err = run(capsys, "import", str(archive), "--data-dir", str(target))
    assert code == 0, err
    assert out.strip() == f"imported into brain {SLUG} (created): {SUMMARY}; already there: " + (
        "0 document, 0 memory, 0 link, 0 raw, 0 gap, 0 collection; refused: 0"
    )
    restored = build_container(Settings(data_dir=target))
    assert snapshot(restored, restored.brains.get(SLUG)) == snapshot(source, brain)

    code, out, _ = run(capsys, "import", str(archive), "--data-dir", str(target))
    assert code == 0 and out.strip().endswith(f"already there: {SUMMARY}; refused: 0")


def test_export_to_stdout_and_import_from_stdin_into_another_brain(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    fill(build_container(Settings(data_dir=data)))

    code, out, _ = run(capsys, "export", SLUG, "--data-dir", str(data))
    assert code == 0 and len(out.splitlines()) == 17

    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    code, out, err = run(capsys, "import", "-", "--brain", "copy", "--data-dir", str(data))
    assert code == 0, err
    assert out.startswith(f"imported into brain copy (created): {SUMMARY};")


def test_errors_are_the_clis_and_a_bad_archive_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    run(capsys, "brains", "create", "Notes", "--data-dir", str(data))

    code, out, err = run(capsys, "export", "missing", "--data-dir", str(data))
    assert code == 2 and out == "" and "error: no_brain: no brain matches" in err

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "cairn-archive", "format": 7}\n')
    code, _, err = run(capsys, "import", str(bad), "--data-dir", str(data))
    assert code == 2 and "error: validation_error: line 1: archive format 7" in err

    header = {"kind": "cairn-archive", "format": 1, "brain": {"slug": "fresh", "name": "Fresh"}}
    header["exported_at"] = "2026-01-01T00:00:00Z"
    bad.write_text(json.dumps(header) + "\n{not json\n")
    code, _, err = run(capsys, "import", str(bad), "--data-dir", str(data))
    assert code == 2 and "error: validation_error: line 2: the record is not valid JSON" in err
    assert "nothing was imported" in err

    # a byte that is not UTF-8 is named on its own line (a text stream failed the first line, and the
    # import then began and left the brain `restoring`)
    bad.write_bytes(json.dumps(header).encode() + b'\n{"kind": "document", "text": "caf\xe9"}\n')
    code, _, err = run(capsys, "import", str(bad), "--data-dir", str(data))
    assert code == 2 and f"error: validation_error: {bad}: line 2 is not UTF-8 (byte 34 of the line)" in err
    assert "nothing was imported" in err
    assert run(capsys, "brains", "list", "--data-dir", str(data))[1].count("fresh") == 0
    code, out, _ = run(capsys, "brains", "list", "--data-dir", str(data))
    assert "notes" in out and "fresh" not in out  # refused whole: not even its brain was made

    code, _, err = run(capsys, "import", str(tmp_path / "nowhere.jsonl"), "--data-dir", str(data))
    assert code == 2 and "cannot open" in err


def test_an_export_that_cannot_be_written_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "source"
    fill(build_container(Settings(data_dir=data)))
    for target in (tmp_path / "no" / "such" / "folder.jsonl", tmp_path):
        code, out, err = run(capsys, "export", SLUG, "-o", str(target), "--data-dir", str(data))
        assert code == 2 and out == "", err
        assert f"cannot write {target}" in err and "Traceback" not in err


@pytest.mark.parametrize("name", ["notes.jsonl", "notes.jsonl.gz"])
def test_an_archive_cut_short_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    data = tmp_path / "source"
    fill(build_container(Settings(data_dir=data)))
    whole = tmp_path / name
    assert run(capsys, "export", SLUG, "-o", str(whole), "--data-dir", str(data))[0] == 0
    opened = gzip.open if name.endswith(".gz") else open
    with opened(whole, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    cut = tmp_path / ("cut-" + name)
    target = tmp_path / "target"
    for kept, why in (
        (lines[:9], "ends after line 9 without its end record: it was cut short"),
        ([*lines[:9], lines[9][:40]], "ends after line 10 without its end record"),
        (lines[:1], "ends after line 1 without its end record"),
        ([*lines[:9], lines[-1]], "the end record counts 15 records and the archive holds 8"),
    ):
        with opened(cut, "wt", encoding="utf-8") as f:
            f.write("".join(kept))
        code, out, err = run(capsys, "import", str(cut), "--data-dir", str(target))
        assert code == 2 and out == "", err
        assert f"error: validation_error: {cut}: the archive {why}" in err or why in err, err
        assert "nothing was imported" in err
        assert build_container(Settings(data_dir=target)).brains.list() == []


def test_an_archive_cut_short_on_stdin_leaves_the_brain_restoring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    data = tmp_path / "data"
    fill(build_container(Settings(data_dir=data)))
    _, out, _ = run(capsys, "export", SLUG, "--data-dir", str(data))
    lines = out.splitlines(keepends=True)

    monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines[:-3])))
    code, _, err = run(capsys, "import", "-", "--brain", "copy", "--data-dir", str(data))
    assert code == 2 and "ends after line 14 without its end record: it was cut short" in err
    assert "stays `restoring`" in err and "import a whole copy" in err
    container = build_container(Settings(data_dir=data))
    assert container.pages.state(container.brains.get("copy")).state == "restoring"
    listed = run(capsys, "brains", "list", "--data-dir", str(data))[1]  # what it says agrees with the error
    assert "[restoring: an archive import stopped part-way; import the whole archive again" in listed

    monkeypatch.setattr("sys.stdin", io.StringIO(out))
    assert run(capsys, "import", "-", "--brain", "copy", "--data-dir", str(data))[0] == 0
    container = build_container(Settings(data_dir=data))
    assert container.pages.state(container.brains.get("copy")).state == "active"


def test_a_gzip_archive_cut_mid_stream_is_refused_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "source"
    fill(build_container(Settings(data_dir=data)))
    whole = tmp_path / "notes.jsonl.gz"
    assert run(capsys, "export", SLUG, "-o", str(whole), "--data-dir", str(data))[0] == 0
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(whole.read_bytes()[: len(whole.read_bytes()) * 2 // 3])

    target = tmp_path / "target"
    code, out, err = run(capsys, "import", str(cut), "--data-dir", str(target))

    assert code == 2 and out == "" and "the archive cannot be read whole" in err, err
    assert "nothing was imported" in err and "Traceback" not in err
    assert build_container(Settings(data_dir=target)).brains.list() == []


def test_a_damaged_document_stops_an_export_unless_it_is_left_out_by_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "source"
    source = build_container(Settings(data_dir=data))
    brain = source.brains.create("Notes", slug="notes")
    for n in range(3):
        source.documents.write(brain, f"notes/{n}.md", f"# Note {n}\n\nkept {n}".encode())
    damaged = source.documents.get(brain, "notes/1.md")
    (data / "blobs" / damaged.blob_key).write_bytes(b"# Note 1\n\ntruncat")  # damaged on disk
    archive = tmp_path / "notes.jsonl"

    code, _, err = run(capsys, "export", "notes", "-o", str(archive), "--data-dir", str(data))
    assert code == 2 and "damaged_content" in err and not archive.exists()  # never a silently short archive

    code, _, err = run(
        capsys, "export", "notes", "--skip-damaged", "-o", str(archive), "--data-dir", str(data)
    )
    assert code == 1 and "left out 1 documents whose stored content is damaged: notes/1.md" in err
    paths = [json.loads(line).get("path") for line in archive.read_text().splitlines()]
    assert "notes/0.md" in paths and "notes/2.md" in paths and "notes/1.md" not in paths


def test_an_archive_from_a_named_pipe_is_imported_as_stdin_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`cairn import /dev/stdin` (or a FIFO): the whole-archive check read the pipe through, and
    the import that followed found it empty ("the archive is empty")."""
    data = tmp_path / "data"
    fill(build_container(Settings(data_dir=data)))
    code, exported, _ = run(capsys, "export", SLUG, "--data-dir", str(data))
    assert code == 0
    pipe = tmp_path / "archive.pipe"
    os.mkfifo(pipe)

    done = threading.Event()

    def feed() -> None:
        with pipe.open("w") as out:
            out.write(exported)
        while not done.wait(0.05):  # a second reader, if any, is given an empty pipe
            with contextlib.suppress(OSError):  # no reader now
                os.close(os.open(pipe, os.O_WRONLY | os.O_NONBLOCK))

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        code, out, err = run(capsys, "import", str(pipe), "--brain", "copy", "--data-dir", str(data))
    finally:
        done.set()
        writer.join()
    assert code == 0, err
    assert out.startswith(f"imported into brain copy (created): {SUMMARY};")


def test_an_archive_an_editor_saved_with_a_byte_order_mark_and_blank_lines_is_imported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = build_container(Settings(data_dir=tmp_path / "source"))
    brain = fill(source).brain
    archive = tmp_path / "notes.jsonl"
    assert run(capsys, "export", SLUG, "-o", str(archive), "--data-dir", str(tmp_path / "source"))[0] == 0
    lines = archive.read_text(encoding="utf-8").splitlines()
    edited = "\ufeff" + "\n".join([lines[0], "", *lines[1:]]) + "\n\n  \n"
    archive.write_text(edited, encoding="utf-8")

    code, out, err = run(capsys, "import", str(archive), "--data-dir", str(tmp_path / "target"))

    assert code == 0, err
    assert out.strip().startswith(f"imported into brain {SLUG} (created): {SUMMARY}")
    restored = build_container(Settings(data_dir=tmp_path / "target"))
    assert snapshot(restored, restored.brains.get(SLUG)) == snapshot(source, brain)


def test_a_line_longer_than_any_record_the_store_takes_is_refused_as_it_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip bomb whose second line inflates without end: refused once the line passes the
    longest a record of a document within the file cap takes (records.py `longest_line`), never
    held whole; from a file before anything is written, from stdin with the restore stopped."""
    from cairn.services.archive.records import longest_line

    monkeypatch.setenv("CAIRN_MAX_FILE_BYTES", "1000")
    most = longest_line(1000)
    header = {"kind": "cairn-archive", "format": 2, "brain": {"slug": "bomb", "name": "Bomb"}}
    head = json.dumps({**header, "exported_at": "2026-01-01T00:00:00Z"}).encode() + b"\n"
    bomb = tmp_path / "bomb.jsonl.gz"
    bomb.write_bytes(gzip.compress(head + b"\0" * (most + 1), compresslevel=1))
    data = tmp_path / "data"

    code, out, err = run(capsys, "import", str(bomb), "--data-dir", str(data))
    assert code == 2 and out == "", err
    assert f"{bomb}: line 2: the line is longer than {most:,} bytes" in err and "nothing was imported" in err
    assert build_container(Settings(data_dir=data)).brains.list() == []

    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(gzip.decompress(bomb.read_bytes()))))
    code, _, err = run(capsys, "import", "-", "--data-dir", str(data))
    assert code == 2 and f"line 2: the line is longer than {most:,} bytes" in err
    assert "stays `restoring`" in err and "import a whole copy" in err

    fits = tmp_path / "fits.jsonl"  # a line of just the most is read (and its record judged)
    record = json.dumps({"kind": "gap", "query_hash": "0" * 64, "detected_at": "2026-01-01T00:00:00Z"})
    fits.write_text(
        head.decode() + record + " " * (most - len(record)) + "\n" + '{"kind": "end", "records": 1}\n'
    )
    code, out, err = run(capsys, "import", str(fits), "--data-dir", str(data), "--brain", "fits")
    assert code == 0 and "1 gap" in out, err
