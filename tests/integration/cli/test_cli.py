"""The `cairn` commands that work on a data directory, run in-process on the real embedded store."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cairn.bootstrap import build_container
from cairn.config import Settings
from cairn.entrypoints.cli import main
from cairn.services.brain_pointers import tenant_pk
from cairn.services.brain_slugs import slug_key
from cairn.services.gbrain.collection_state import STATE_KEY
from cairn.services.repositories import brain_key


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ingest_a_directory_then_search_and_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is steeped at 80 degrees.")
    (docs / "sub" / "bikes.txt").write_text("Chains need oil every few hundred kilometres.")
    (docs / "sub" / "broken.bin").write_bytes(b"\x00\x01\x02binary")
    (docs / ".hidden.md").write_text("skipped")

    code, out, err = run(capsys, "ingest", str(docs), "--data-dir", data)
    assert code == 1  # one file failed
    assert "created 2, reused 0, failed 1" in out
    assert "broken.bin" in err

    code, out, _ = run(capsys, "ingest", str(docs / "tea.md"), "--data-dir", data)
    assert code == 0 and out.strip().endswith("created 1, reused 0, failed 0")  # a file alone: ingest/tea.md
    assert (
        run(capsys, "ingest", str(docs / "tea.md"), "--data-dir", data)[1]
        .strip()
        .endswith("reused 1, failed 0")
    )

    code, out, _ = run(capsys, "search", "how hot should green tea be", "--data-dir", data, "--top-k", "1")
    assert code == 0
    assert "#1 score=" in out and "tea.md" in out

    code, out, _ = run(capsys, "brains", "--data-dir", data)
    assert code == 0 and "default" in out


def test_reingesting_the_same_directory_reuses_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("alpha")
    (docs / "b.md").write_text("beta")
    assert (
        run(capsys, "ingest", str(docs), "--data-dir", data)[1]
        .strip()
        .endswith("created 2, reused 0, failed 0")
    )
    assert (
        run(capsys, "ingest", str(docs), "--data-dir", data)[1]
        .strip()
        .endswith("created 0, reused 2, failed 0")
    )


def test_errors_are_clear_and_change_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "data"
    run(capsys, "brains", "create", "Notes", "--data-dir", str(data))
    code, _, err = run(capsys, "search", "anything", "--data-dir", str(data), "--brain", "missing")
    assert code == 2 and "no_brain" in err and "cairn brains create missing" in err
    with pytest.raises(SystemExit):
        main(["mcp", "--surface", "nosuch", "--data-dir", str(data)])
    assert "invalid choice: 'nosuch'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["search", "x", "--top-k", "0", "--data-dir", str(data)])
    assert "must be between 1 and 100, not 0" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [["search", "tea"], ["brains"], ["brains", "list"], ["keys", "list"], ["keys", "revoke", "key_x"]]
)
def test_a_read_command_on_a_mistyped_data_dir_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    typo = tmp_path / "dtaa"
    code, _, err = run(capsys, *argv, "--data-dir", str(typo))
    assert code == 2 and "no_store" in err and str(typo) in err
    assert not typo.exists()


def test_brains_create_list_and_update(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    code, out, _ = run(capsys, "brains", "create", "Team notes", "--slug", "team", "--data-dir", data)
    assert code == 0 and "created brain team" in out
    code, out, _ = run(
        capsys, "brains", "update", "team", "--visibility", "tenant", "--owner", "ana", "--data-dir", data
    )
    assert code == 0 and out.strip() == "team: tenant, owner local/ana"
    code, out, _ = run(capsys, "brains", "--data-dir", data)
    assert "team" in out and "tenant" in out and "local/ana" in out
    code, _, err = run(capsys, "brains", "update", "team", "--data-dir", data)
    assert code == 2 and "nothing to change" in err


def test_ingest_names_its_brain_and_creates_a_missing_one_only_when_asked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    note = tmp_path / "tea.md"
    note.write_text("# Tea\n\nGreen tea.")
    code, out, err = run(capsys, "ingest", str(note), "--data-dir", data)
    assert code == 0 and "brain: default (no --brain given" in err
    code, _, err = run(capsys, "ingest", str(note), "--brain", "work", "--data-dir", data)
    assert code == 2 and "cairn brains create work" in err and "--create" in err
    code, out, err = run(capsys, "ingest", str(note), "--brain", "work", "--create", "--data-dir", data)
    assert code == 0 and "brain: work" in err and "created 1" in out


def test_ingest_reports_its_throughput(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(3):
        (docs / f"n{n}.md").write_text(f"# Note {n}\n\n" + "Tea is steeped at eighty degrees. " * 60)
    code, out, err = run(capsys, "ingest", str(docs), "--data-dir", str(tmp_path / "data"))
    assert code == 0
    assert "3/3 files" in err and re.search(r"\d+ chunks, \d+\.\d chunks/s", err)  # the progress line
    summary = re.fullmatch(
        r"(\d+) chunks in \d+\.\d s \((\d+\.\d) chunks/s\); created 3, reused 0, failed 0", out.strip()
    )
    assert summary is not None and int(summary[1]) >= 6 and float(summary[2]) > 0


def test_calibrate_fits_the_embedded_model_and_says_how_to_apply_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixture = Path(__file__).resolve().parents[3] / "bench" / "data" / "relevance" / "team_memory.json"
    code, out, _ = run(capsys, "calibrate", "--fixture", str(fixture), "--data-dir", str(tmp_path))
    assert code == 0 and "67 questions with answers, 20 without" in out
    found = re.search(r"CAIRN_RELEVANCE_MIDPOINT=([0-9.]+) CAIRN_RELEVANCE_SLOPE=([0-9.]+)", out)
    assert found is not None
    midpoint, slope = float(found[1]), float(found[2])
    assert 0.38 < midpoint < 0.46 and 9 < slope < 14  # beside the 0.40 / 12 shipped for this model

    broken = tmp_path / "broken.json"
    broken.write_text('{"items": [{"id": "a", "text": "x"}], "queries": []}')
    code, _, err = run(capsys, "calibrate", "--fixture", str(broken), "--data-dir", str(tmp_path))
    assert code == 2 and "at least 5 questions with answers and 5 without" in err


def test_a_bad_setting_is_named_without_its_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CAIRN_RRF_K", "hunter2-secret")
    code, _, err = run(capsys, "brains", "list", "--data-dir", str(tmp_path))
    assert code == 2 and "CAIRN_RRF_K: Input should be a valid integer" in err and "hunter2" not in err
    monkeypatch.delenv("CAIRN_RRF_K")
    monkeypatch.setenv("CAIRN_RELEVANCE_MIDPOINT", "0.5")
    code, _, err = run(capsys, "brains", "list", "--data-dir", str(tmp_path))
    assert code == 2 and "set CAIRN_RELEVANCE_MIDPOINT and CAIRN_RELEVANCE_SLOPE together" in err


@pytest.mark.parametrize("audience", [None, "[]", '[" "]'])
def test_a_jwt_issuer_without_an_audience_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, audience: str | None
) -> None:
    """Every token would be refused (auth/jwt_verify.py), and the start failed with a traceback."""
    monkeypatch.setenv("CAIRN_JWT_ISSUER", "https://issuer.example.com")
    if audience is not None:
        monkeypatch.setenv("CAIRN_JWT_AUDIENCE", audience)
    code, _, err = run(capsys, "serve", "--port", "1", "--data-dir", str(tmp_path))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert "CAIRN_JWT_ISSUER is set and CAIRN_JWT_AUDIENCE names no audience" in err


@pytest.mark.parametrize("name", ["CAIRN_JWT_AUDIENCE", "CAIRN_IAM_TENANTS", "CAIRN_IAM_SCOPES"])
def test_a_json_setting_that_is_not_json_is_named_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv(name, '["hunter2-secret')
    code, _, err = run(capsys, "brains", "list", "--data-dir", str(tmp_path))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"invalid settings: {name}: not valid JSON" in err and "hunter2" not in err


def test_a_data_directory_below_a_file_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "file").write_text("not a directory")
    data = tmp_path / "file" / "data"
    code, _, err = run(capsys, "brains", "create", "x", "--data-dir", str(data))
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert f"the data directory {data} cannot be made: {tmp_path / 'file'} is a file" in err
    assert (tmp_path / "file").read_text() == "not a directory"


def test_ingest_keeps_to_its_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = str(tmp_path / "data")
    docs, outside = tmp_path / "docs", tmp_path / "private"
    outside.mkdir()
    (outside / "id_rsa").write_text("PRIVATE KEY kumquat-orange-secret")
    docs.mkdir()
    (docs / "notes.md").symlink_to(outside / "id_rsa")  # a folder someone else filled
    (docs / "tea.md").write_text("# Tea\n\nGreen tea is steeped at 80 degrees.")
    (docs / "also-tea.md").symlink_to(docs / "tea.md")  # a link inside the folder is kept
    deep = docs.joinpath(*["d"] * 40)
    deep.mkdir(parents=True)
    (deep / "bottom.md").write_text("The bottom of the tree holds a heron.")

    code, out, err = run(capsys, "ingest", str(docs), "--data-dir", data)

    assert code == 0 and "created 3, reused 0, failed 0" in out
    assert "skipped" in err and "notes.md" in err and "outside" in err
    _, found, _ = run(capsys, "search", "kumquat orange secret private key", "--data-dir", data)
    assert "kumquat" not in found and "notes.md" not in found
    _, found, _ = run(capsys, "search", "heron at the bottom", "--data-dir", data, "--top-k", "1")
    assert "bottom.md" in found


def test_a_brain_an_import_left_restoring_is_named_and_fails_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data))
    brain = container.brains.create("Notes", slug="notes")
    container.brains.create("Other", slug="other")
    restoring = {**brain.metadata, STATE_KEY: "restoring"}  # as an import killed part-way leaves it
    container.brains.repo.update(brain.id, lambda b: b.model_copy(update={"metadata": restoring}))

    _, listed, _ = run(capsys, "brains", "--data-dir", str(data))
    code, checked, _ = run(capsys, "check", "--data-dir", str(data))

    lines = {line.split()[1]: line for line in listed.splitlines()}
    assert "restoring" in lines["notes"] and "restoring" not in lines["other"]
    assert code == 1 and "import the whole archive again to finish" in checked


def test_chunks_of_a_brain_no_record_names_fail_the_check(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data))
    lost = container.brains.create("Lost", slug="lost")
    kept = container.brains.create("Kept", slug="kept")
    for brain in (lost, kept):
        container.documents.write(brain, "notes/a.md", b"# A\n\nThe heron nests by the weir.\n")
    code, checked, _ = run(capsys, "check", "--data-dir", str(data))
    assert code == 0 and "no brain record names" not in checked

    for key in (
        brain_key(lost.id),
        slug_key(lost.slug, lost.owner_tenant),
    ):  # the records database lost the brain
        container.adapters.records.delete(*key)
    code, checked, _ = run(capsys, "check", "--data-dir", str(data))

    assert code == 1
    assert "chunks of 1 brain(s) that no brain record names are indexed (the records database lost" in checked
    assert lost.id in checked and kept.id not in checked
    code, checked, _ = run(capsys, "check", "kept", "--data-dir", str(data))
    assert code == 0  # asked about one brain: that one is sound


def test_opening_the_store_lists_a_brain_an_older_process_wrote_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"
    brain = build_container(Settings(data_dir=data)).brains.create("Notes", slug="notes", visibility="tenant")
    records = build_container(Settings(data_dir=data)).adapters.records  # the migrations ran and are noted
    pointer = (tenant_pk(brain.owner_tenant), f"brain#{brain.id}")
    records.delete(*pointer)  # as a process of an earlier release, still running, wrote the brain

    code, _, err = run(capsys, "check", "--data-dir", str(data))

    assert code == 0 and "listed for their tenants again: notes" in err
    assert build_container(Settings(data_dir=data)).adapters.records.get(*pointer) is not None


def test_check_says_what_the_sweep_still_has_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Memory counts `over` or being built and deletions settling are said, not counted as faults."""
    from cairn.ports.records import Item
    from cairn.services.repositories import documents_pk

    data = tmp_path / "data"
    container = build_container(Settings(data_dir=data))
    over = container.brains.create("Over", slug="over")
    old = container.brains.create("Old", slug="old")
    container.brains.create("Empty", slug="empty")
    for brain in (over, old):
        container.documents.write(brain, "memories/fact/pump.md", b"The pump runs at 4 bar.")
    records = container.adapters.records
    records.put(Item(documents_pk(over.id), "memory-counts", {"over": True, "at": 0.0}))
    records.delete(documents_pk(old.id), "memory-counts")  # as a brain written before the counts
    gone = container.brains.create("Gone", slug="gone")
    container.erasure.delete_brain(gone.id)

    code, checked, _ = run(capsys, "check", "--data-dir", str(data))

    assert code == 0
    assert "brain over: its memory counts grew past what one record holds (over)" in checked
    assert "brain old: its memory counts are being built by the sweep" in checked
    assert f"deleted brain {gone.id}: settling until" in checked
    assert "brain empty: its memory" not in checked
    reach = "the sweep's concept-reach pass has not scanned it yet"
    assert all(f"brain {slug}: {reach}" in checked for slug in ("over", "old", "empty"))  # no sweep yet
    code, checked, _ = run(capsys, "check", "old", "--data-dir", str(data))
    assert code == 0 and "brain old: its memory counts are being built" in checked
    assert f"brain old: {reach}" in checked
    assert "brain over:" not in checked and "brain empty:" not in checked and "settling" not in checked
