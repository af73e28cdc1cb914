"""`cairn export` and `cairn import` (services/archive/) in-process on the real embedded store."""

from __future__ import annotations

import gzip
import io
import json
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
    assert json.loads(lines[0])["kind"] == "cairn-archive" and len(lines) == 16
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
    assert code == 0 and len(out.splitlines()) == 16

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
    assert code == 2 and "error: restore_incomplete: line 2: not JSON" in err and "restoring" in err

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
