"""`--server` unreachable: one line naming the failure's kind, never httpx's text (which may quote
the request's headers), and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

SECRET = "cairn_key_01m90s1vq9abcdefghijklmnop_Hx4Y5aQkrx2aTVspTl4gEW4Kwi5rtcC"


def test_a_server_that_cannot_be_reached_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from cairn.entrypoints.cli.parser import main

    monkeypatch.setenv("CAIRN_DATA_DIR", str(tmp_path / "data"))
    note = tmp_path / "note.md"
    note.write_text("# Note\n\nHello.")
    code = main(["ingest", "--server", "http://127.0.0.1:1", "--token", SECRET, "--brain", "x", str(note)])
    err = capsys.readouterr().err
    assert code == 2
    assert err == "error: server_unreachable: the request to the server failed (ConnectError)\n"
