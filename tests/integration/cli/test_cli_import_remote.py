"""`cairn import FILE --server URL`: a laptop's brain (one of everything an archive carries, and a
ThoughtMCP user's memories) restored into a running Cairn over REST, in parts, with progress, and
resumed after an interruption without losing or doubling anything."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from cairn.entrypoints.cli import archive_remote, main
from cairn.services.thoughtmcp.models import Filters, NewMemory
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import ServerThread
from tests.support.archive_scenario import exported, fill, snapshot

TOKEN = "t0k"


def _archive(tmp_path: Path) -> tuple[Path, Any, Any]:
    source = fake_container(tmp_path / "laptop")
    filled = fill(source)
    library = source.libraries.library(filled.brain.id)
    manuals = source.libraries.create_collection(library, "Pump manuals", description="service manuals")
    source.documents.write(filled.brain, f"{manuals.folder}/hydrex.md", b"# Hydrex\n\nBleed the pump first.")
    for n in range(3):
        source.thoughts.remember(
            filled.brain,
            NewMemory(f"Erin's thought number {n} about the anvil lab", "erin", "s1", "semantic"),
        )
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in exported(source, filled.brain)), encoding="utf-8")
    return path, source, filled


def test_a_brain_goes_to_a_server_in_parts_and_arrives_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, source, filled = _archive(tmp_path)
    monkeypatch.setattr(archive_remote, "PART_LINES", 4)  # several parts from a small brain
    target = fake_container(tmp_path / "server", token=TOKEN)
    with ServerThread(target) as st:
        code = main(["import", str(archive), "--server", f"http://127.0.0.1:{st.port}", "--token", TOKEN])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert err.count("into notes:") >= 4  # a progress line per part
    assert "imported into brain notes" in out and "refused: 0" in out
    brain = target.brains.get("notes")
    assert snapshot(target, brain) == snapshot(source, filled.brain)
    thoughts = target.thoughts.recall(brain, "erin", text=None, filters=Filters(), limit=10, offset=0)[0]
    assert sorted(t.content for t in thoughts) == [
        f"Erin's thought number {n} about the anvil lab" for n in range(3)
    ]
    assert not Path(str(archive) + ".import-progress").exists()
    copied = target.libraries.collection_named(target.libraries.library(brain.id), "Pump manuals")
    assert copied is not None and copied.description == "service manuals"
    items = target.libraries.items([copied.library], collection=copied, limit=10, offset=0)
    assert [i.title for i in items] == ["Hydrex"]


def test_an_interrupted_import_resumes_after_the_last_acknowledged_part(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, source, filled = _archive(tmp_path)
    monkeypatch.setattr(archive_remote, "PART_LINES", 4)
    target = fake_container(tmp_path / "server", token=TOKEN)
    sent: list[int] = []
    real_send = archive_remote._send

    def flaky(remote: Any, part: list[str], brain: str | None, first: int) -> dict[str, Any]:
        if len(sent) == 2:
            raise httpx.ConnectError("the network went away")
        sent.append(first)
        return real_send(remote, part, brain, first)

    with ServerThread(target) as st:
        url = f"http://127.0.0.1:{st.port}"
        monkeypatch.setattr(archive_remote, "_send", flaky)
        # said in one line (exit 2), never a traceback that could quote the request's headers
        assert main(["import", str(archive), "--server", url, "--token", TOKEN]) == 2
        progress = json.loads(Path(str(archive) + ".import-progress").read_text())
        archive_id = progress.pop("archive")
        assert progress == {"server": url, "brain": None, "done": sent[1] + 3} and len(archive_id) == 64
        monkeypatch.setattr(archive_remote, "_send", real_send)
        capsys.readouterr()
        code = main(["import", str(archive), "--server", url, "--token", TOKEN])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert f"resuming after line {progress['done']:,}" in err
    assert "lines 2-" not in err  # the acknowledged parts were not sent again
    brain = target.brains.get("notes")
    assert snapshot(target, brain) == snapshot(source, filled.brain)


def test_progress_left_by_another_archive_of_the_same_name_is_not_resumed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, _, _ = _archive(tmp_path)
    monkeypatch.setattr(archive_remote, "PART_LINES", 4)
    target = fake_container(tmp_path / "server", token=TOKEN)
    with ServerThread(target) as st:
        url = f"http://127.0.0.1:{st.port}"
        Path(str(archive) + ".import-progress").write_text(
            json.dumps({"server": url, "brain": None, "archive": "0" * 64, "done": 9}), encoding="utf-8"
        )  # an earlier, different archive's import stopped at line 9
        code = main(["import", str(archive), "--server", url, "--token", TOKEN])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert "resuming" not in err and "lines 2-" in err  # from the start
    header = json.loads(archive.read_text(encoding="utf-8").splitlines()[0])
    assert header["kind"] == "cairn-archive"
    assert "refused: 0" in out and "0 document" not in out.split("already there")[0]


def test_a_row_the_archive_holds_twice_in_two_parts_is_sent_once_and_reported_as_a_duplicate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, source, filled = _archive(tmp_path)
    monkeypatch.setattr(archive_remote, "PART_LINES", 4)
    lines = archive.read_text(encoding="utf-8").splitlines(keepends=True)
    raw_line = next(n for n, text in enumerate(lines, start=1) if json.loads(text)["kind"] == "raw")
    other = json.loads(lines[raw_line - 1]) | {"data": {"other": "value"}}
    end = json.loads(lines[-1])
    again = [text for text in lines[1:9] if json.loads(text)["kind"] == "document"]  # sent in the first parts
    lines[-1:] = [
        *again,
        json.dumps(other) + "\n",
        json.dumps(end | {"records": end["records"] + len(again) + 1}) + "\n",
    ]
    archive.write_text("".join(lines), encoding="utf-8")
    target = fake_container(tmp_path / "server", token=TOKEN)
    target.adapters.clock.advance(60)  # type: ignore[attr-defined]  # restored later than exported
    with ServerThread(target) as st:
        code = main(["import", str(archive), "--server", f"http://127.0.0.1:{st.port}", "--token", TOKEN])
    out, err = capsys.readouterr()
    assert code == 0, (out, err)
    assert out.rstrip().endswith(f"duplicates in the archive: {len(again) + 1}") and "kept newer" not in out
    assert f"duplicate line {len(lines) - 1}: 'people/alice' ('exa' raw data), as line {raw_line}" in err
    path = json.loads(again[0])["path"]
    assert (
        f"duplicate line {len(lines) - len(again) - 1}: {path!r}, as line {lines.index(again[0]) + 1}:" in err
    )
    brain = target.brains.get("notes")
    assert snapshot(target, brain) == snapshot(source, filled.brain)


def test_a_bad_archive_or_a_refusal_is_named_and_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"kind": "document"}\n', encoding="utf-8")
    target = fake_container(tmp_path / "server", token=TOKEN)
    with ServerThread(target) as st:
        code = main(["import", str(bad), "--server", f"http://127.0.0.1:{st.port}", "--token", TOKEN])
        wrong = main(["import", str(bad), "--server", f"http://127.0.0.1:{st.port}", "--token", "nope"])
    err = capsys.readouterr().err
    assert code == 2 and "not a Cairn archive" in err and "Traceback" not in err
    assert wrong == 2 and TOKEN not in err
    assert target.brains.list() == []


def test_an_archive_cut_short_is_refused_before_a_part_is_sent_and_from_stdin_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    archive, _, _ = _archive(tmp_path)
    lines = archive.read_text(encoding="utf-8").splitlines(keepends=True)
    cut = tmp_path / "cut.jsonl"
    cut.write_text("".join(lines[:-2]), encoding="utf-8")
    target = fake_container(tmp_path / "server", token=TOKEN)
    with ServerThread(target) as st:
        url = f"http://127.0.0.1:{st.port}"
        code = main(["import", str(cut), "--server", url, "--token", TOKEN])
        err = capsys.readouterr().err
        assert code == 2 and f"ends after line {len(lines) - 2} without its end record" in err
        assert "nothing was imported" in err and target.brains.list() == []

        monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines[:-2])))
        code = main(["import", "-", "--server", url, "--token", TOKEN])
        err = capsys.readouterr().err
        assert code == 2 and f"ends after line {len(lines) - 2} without its end record" in err
        assert "which holds an incomplete copy" in err and "Traceback" not in err

        monkeypatch.setattr("sys.stdin", io.StringIO("".join(lines)))
        assert main(["import", "-", "--server", url, "--token", TOKEN]) == 0


def test_a_line_longer_than_any_record_is_refused_before_a_part_is_sent_and_from_stdin_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.services.archive.records import longest_line

    monkeypatch.setenv("CAIRN_MAX_FILE_BYTES", "1000")
    most = longest_line(1000)
    archive, _, _ = _archive(tmp_path)
    lines = archive.read_text(encoding="utf-8").splitlines(keepends=True)
    endless = "".join(lines[:4]) + "x" * (most + 1)  # a gzip bomb's line, say
    bomb = tmp_path / "bomb.jsonl"
    bomb.write_text(endless, encoding="utf-8")
    target = fake_container(tmp_path / "server", token=TOKEN)
    with ServerThread(target) as st:
        url = f"http://127.0.0.1:{st.port}"
        code = main(["import", str(bomb), "--server", url, "--token", TOKEN])
        err = capsys.readouterr().err
        assert code == 2 and f"line 5: the line is longer than {most:,} bytes" in err
        assert "nothing was imported" in err and target.brains.list() == []

        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(endless.encode())))
        code = main(["import", "-", "--server", url, "--token", TOKEN])
        err = capsys.readouterr().err
        assert code == 2 and f"line 5: the line is longer than {most:,} bytes" in err, err
        assert "nothing was imported" in err and target.brains.list() == []

        monkeypatch.setattr(archive_remote, "PART_LINES", 1)  # the lines before it go first
        monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(endless.encode())))
        code = main(["import", "-", "--server", url, "--token", TOKEN])
        err = capsys.readouterr().err
        assert code == 2 and f"line 5: the line is longer than {most:,} bytes" in err, err
        assert "were sent to notes on " in err and "which holds an incomplete copy" in err
        assert "Traceback" not in err
