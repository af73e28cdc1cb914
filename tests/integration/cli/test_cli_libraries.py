"""Library types and collections from the command line (`cairn brains --library-type`, `cairn
collections`, `cairn ingest --collection`), and the bad input they refuse without changing anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_types_collections_and_ingest_into_a_collection(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    (tmp_path / "pump.md").write_text("# Pump\n\nBolt the Hydrex 40 pump with M8 bolts.\n")
    assert (
        run(
            capsys,
            "brains",
            "create",
            "Pump manuals",
            "--slug",
            "pumps",
            "--library-type",
            "technical",
            *data,
        )[0]
        == 0
    )
    created = run(
        capsys, "collections", "create", "pumps", "Hydrex series", "--description", "The range", *data
    )
    assert created[0] == 0 and "collections/hydrex-series/" in created[1]
    assert (
        run(
            capsys,
            "ingest",
            str(tmp_path / "pump.md"),
            "--brain",
            "pumps",
            "--collection",
            "Hydrex series",
            *data,
        )[0]
        == 0
    )
    listed = run(capsys, "collections", "list", "--brain", "pumps", *data)[1]

    c = build_container(Settings(data_dir=tmp_path / "data"))
    library = c.libraries.library(c.brains.get("pumps").id)
    assert library.library_type == "technical" and "Hydrex series" in listed
    assert [d.path for d in c.documents.documents(library.brain)] == ["collections/hydrex-series/pump.md"]


def test_bad_input_is_refused_and_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = ["--data-dir", str(tmp_path / "data")]
    assert run(capsys, "brains", "create", "Notes", "--slug", "notes", *data)[0] == 0
    with pytest.raises(SystemExit) as bad_type:
        main(["brains", "update", "notes", "--library-type", "poetry", *data])
    assert bad_type.value.code == 2 and "invalid choice: 'poetry'" in capsys.readouterr().err
    assert run(capsys, "brains", "create", "Diary", "--slug", "diary", *data)[0] == 0
    journal = run(capsys, "brains", "update", "diary", "--library-type", "journal", *data)
    assert journal[0] == 0 and journal[1].strip().endswith(", journal library")  # says what it changed
    assert run(capsys, "collections", "create", "notes", "Letters", *data)[0] == 0
    twice = run(capsys, "collections", "create", "notes", "letters", *data)
    nowhere = run(capsys, "collections", "create", "nowhere", "Letters", *data)
    blank = run(capsys, "collections", "create", "notes", "   ", *data)
    assert twice[0] == 2 and "already has a collection named" in twice[2]
    assert nowhere[0] == 2 and "not_found" in nowhere[2]
    assert blank[0] == 2 and "a collection name is 1..200 characters" in blank[2]

    c = build_container(Settings(data_dir=tmp_path / "data"))
    notes = c.libraries.library(c.brains.get("notes").id)
    assert [col.name for col in c.libraries.collections([notes])] == ["Letters"]
    assert notes.library_type == "nonfiction" and "library_type" not in notes.brain.metadata
