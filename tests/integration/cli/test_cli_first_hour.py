"""The `cairn` command as a new user meets it in the first hour, run as a separate process with its
output piped (as in a script or CI): a taken port, a brain created twice, a hint for a missing brain,
a closed pipe, progress without a terminal, and what `cairn serve` says it serves."""

from __future__ import annotations

import fcntl
import os
import re
import subprocess
from pathlib import Path

import httpx
import pytest

from cairn.entrypoints.cli import main
from cairn.entrypoints.mcp.registry import SURFACES
from tests.support.processes import CAIRN, cli, environment, serving

pytestmark = pytest.mark.integration
PIPE_BYTES = 4096  # the smallest pipe Linux makes (a page)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def notes(folder: Path, count: int, *, size: int = 0) -> Path:
    folder.mkdir()
    padding = " ".join(f"word{n}" for n in range(size // 8))
    for n in range(count):
        (folder / f"n{n:03}.md").write_text(f"# Note {n}\n\nThe kestrel hovers, note {n}. {padding}\n")
    return folder


def test_serve_lists_its_endpoints_and_a_second_one_on_its_port_says_so_in_one_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with serving(data) as server:
        port = server.base.rsplit(":", 1)[1]
        second = cli("serve", "--port", port, "--data-dir", str(tmp_path / "other"), timeout_s=120)
        listed = (tmp_path / f"serve-{port}.log").read_text()
        paths = [s.http_path + ("/" if s.trailing_slash else "") for s in SURFACES.values()]
        answers = {
            path: httpx.get(f"{server.base}{path}", timeout=30).status_code
            for path in [*paths, "/v1/brains", "/docs", "/healthz", "/ui"]
        }

    assert second.returncode == 1, second
    assert second.stdout == ""  # never "serving on" first
    (line,) = second.stderr.strip().splitlines()
    assert f"port {port}" in line and "--port" in line and "Traceback" not in second.stderr

    first, *endpoints = listed.split("INFO:")[0].strip().splitlines()
    assert first.startswith("cairn ") and f"serving on {server.base} " in first
    said = "\n".join(endpoints)
    for path in [*paths, "/v1", "/docs", "/healthz", "/ui"]:
        assert re.search(rf"[ /]{re.escape(path.lstrip('/'))}(\W|$)", said), (path, said)
    # Each one answers: the open loopback server shows the web UI without a sign-in.
    assert answers.pop("/ui") == 200
    assert answers.pop("/docs") == 200 and answers.pop("/healthz") == 200 and answers.pop("/v1/brains") == 200
    assert all(status != 404 for status in answers.values()), answers


def test_a_brain_created_twice_is_refused_unless_a_suffix_is_asked_for(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    assert run(capsys, "brains", "create", "Team Notes", "--data-dir", data)[0] == 0

    code, out, again = run(capsys, "brains", "create", "Team Notes", "--data-dir", data)
    assert code == 2 and out == ""
    assert "'team-notes' already exists" in again and "--suffix" in again
    code, _, slug_taken = run(capsys, "brains", "create", "Other", "--slug", "team-notes", "--data-dir", data)
    assert code == 2 and "pick another --slug" in slug_taken and "--suffix" not in slug_taken
    assert run(capsys, "brains", "list", "--data-dir", data)[1].count("team-notes") == 1

    code, out, _ = run(capsys, "brains", "create", "Team Notes", "--suffix", "--data-dir", data)
    assert code == 0 and out.startswith("created brain team-notes-2 ")


def test_a_missing_brain_hint_names_create_only_where_the_command_has_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = str(tmp_path / "data")
    folder = notes(tmp_path / "notes", 1)
    assert run(capsys, "brains", "create", "Team", "--data-dir", data)[0] == 0

    code, _, searched = run(capsys, "search", "kestrel", "--brain", "nope", "--data-dir", data)
    assert code == 2 and "`cairn brains create nope`" in searched and "--create" not in searched
    code, _, ingested = run(capsys, "ingest", str(folder), "--brain", "nope", "--data-dir", data)
    assert code == 2 and "--create" in ingested
    assert run(capsys, "ingest", str(folder), "--brain", "nope", "--create", "--data-dir", data)[0] == 0


def test_export_into_a_pipe_closed_early_stops_quietly_with_141(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    # A pipe of one page, not 64 KiB, so an archive of a few notes is well past what it holds: the
    # export is still writing when the reader is gone, as a big brain's is into any pipe.
    folder = notes(tmp_path / "notes", 5, size=3000)
    assert cli("ingest", str(folder), "--brain", "notes", "--create", "--data-dir", data).returncode == 0
    reading, writing = os.pipe()
    assert fcntl.fcntl(writing, fcntl.F_SETPIPE_SZ, PIPE_BYTES) == PIPE_BYTES

    export = subprocess.Popen(
        [CAIRN, "export", "notes", "--data-dir", data],
        stdout=writing,
        stderr=subprocess.PIPE,
        env=environment(),
    )
    os.close(writing)
    assert export.stderr is not None
    head = subprocess.run(["head", "-c", "100"], stdin=reading, capture_output=True, check=True)
    os.close(reading)  # only head held the reading end: it is gone now
    errors = export.stderr.read().decode()
    code = export.wait(timeout=120)

    assert head.stdout.startswith(b'{"kind": "cairn-archive"')
    assert code == 141, errors
    assert "Traceback" not in errors and "BrokenPipe" not in errors and "exported" not in errors
    assert sum(p.stat().st_size for p in folder.iterdir()) > 3 * PIPE_BYTES


def test_ingest_and_import_print_progress_lines_without_a_terminal(tmp_path: Path) -> None:
    data = str(tmp_path / "data")
    count = 12  # a line a tenth of the total: ten or so, as of 30
    folder = notes(tmp_path / "notes", count)

    ingested = cli("ingest", str(folder), "--brain", "notes", "--create", "--data-dir", data)
    archive = tmp_path / "notes.jsonl"
    assert cli("export", "notes", "-o", str(archive), "--data-dir", data).returncode == 0
    imported = cli("import", str(archive), "--brain", "copy", "--data-dir", data)

    assert ingested.returncode == 0 and imported.returncode == 0, (ingested.stderr, imported.stderr)
    for done, verb, unit, total in (
        (ingested, "ingested", "files", count),
        (imported, "imported", "records", count + 2),  # the header, the documents, the end record
    ):
        assert "\r" not in done.stderr and "\x1b[" not in done.stderr  # no bar, no terminal codes
        lines = re.findall(rf"^{verb} (\d+)/{total} {unit}\b.*$", done.stderr, re.MULTILINE)
        assert len(lines) >= 3, done.stderr
        assert [int(n) for n in lines] == sorted(int(n) for n in lines) and lines[-1] == str(total)
    assert re.search(
        rf"^ingested \d+/{count} files, \d+ chunks, [\d.]+ chunks/s$", ingested.stderr, re.MULTILINE
    )
