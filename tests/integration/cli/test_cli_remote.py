"""`cairn ingest --server`: uploads through the REST API and waits out the server's rate limit
(429 + Retry-After) instead of failing the files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from cairn.entrypoints.cli import main
from cairn.entrypoints.cli.remote import retry_after_s
from tests.fakes.container import fake_container
from tests.integration.mcp.conftest import ServerThread


def test_a_rate_limited_bulk_ingest_waits_and_loses_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    for n in range(3):
        (docs / f"note{n}.md").write_text(f"# Note {n}\n\nbody {n}")
    (docs / "sub" / "deep.md").write_text("# Deep\n\nnested")
    container = fake_container(tmp_path, token="t0k", rate_limit_per_s=2, rate_limit_burst=2)
    with ServerThread(container) as st:
        argv = ["ingest", str(docs), "--server", f"http://127.0.0.1:{st.port}", "--token", "t0k"]
        code = main([*argv, "--brain", "notes", "--create"])
    out, err = capsys.readouterr()
    assert code == 0 and "created 4, reused 0, failed 0" in out, (out, err)
    assert "waited" in err and "Retry-After" in err
    brain = container.brains.get("notes")
    paths = sorted(f.path for f in container.documents.list(brain, "", recursive=True))
    assert paths == [f"ingest/docs/note{n}.md" for n in range(3)] + ["ingest/docs/sub/deep.md"]


def test_a_missing_brain_on_the_server_is_named_with_the_command_to_make_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.md").write_text("a")
    with ServerThread(fake_container(tmp_path)) as st:
        code = main(
            ["ingest", str(tmp_path / "a.md"), "--server", f"http://127.0.0.1:{st.port}", "--brain", "x"]
        )
    assert code == 2 and "cairn brains create x" in capsys.readouterr().err


def test_retry_after_takes_seconds_or_an_http_date() -> None:
    later = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    assert retry_after_s("7") == 7.0
    assert 25 <= retry_after_s(later) <= 31
    assert retry_after_s("soon", default=2.0) == 2.0 and retry_after_s(None) == 1.0
