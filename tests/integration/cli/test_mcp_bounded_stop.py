"""`cairn mcp` (the stdio server an agent client starts for a session and stops by closing its
input, then SIGTERM) stops within the budget `cairn serve` has, whatever runs: a call the
session's end cut short, a long sweep, a running job, a second SIGTERM during the clean stop. It
waits for what runs within that budget and then closes its stores (no -wal file left), and the
next start finds every acknowledged write and finishes what the stop left.

The process runs through WRAPPED (tests/support/stopping.py), which holds chosen fault points
(cairn/faults.py) for a while, and can shorten the budget and make the index sweep tick at once,
so each case takes seconds."""

from __future__ import annotations

import json
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest

from cairn import faults
from cairn.adapters.local import fts_health
from cairn.auth import access
from cairn.bootstrap.closing import close_stores
from cairn.entrypoints.cli.check import settle
from cairn.entrypoints.cli.clean_stop import STOP_WITHIN_S
from cairn.services.repositories import document_of
from tests.support.processes import environment
from tests.support.soundness import assert_sound, opened
from tests.support.stopping import WAIT_S, StdioSession, left_open, wrapped

pytestmark = pytest.mark.integration
QUEUED = {"CAIRN_INGEST_QUEUE_BYTES": "0"}  # every file ingest is a job


@contextmanager
def session(
    tmp_path: Path,
    *,
    budget: str = "-",
    held: str = "",
    knobs: str = "-",
    queued: bool = False,
    surface: str | None = None,
) -> Iterator[StdioSession]:
    """A wrapped `cairn mcp` on `tmp_path`/data (WRAPPED's budget, held points and knobs), its
    stderr in `tmp_path`/stderr.log; killed at the end if it still runs."""
    command = [*wrapped(budget, held, knobs), "mcp", "--data-dir", str(tmp_path / "data")]
    if surface is not None:
        command += ["--surface", surface]
    env = environment(extra=QUEUED if queued else None)
    started = StdioSession(command, tmp_path / "stderr.log", env, client="bounded")
    try:
        yield started
    finally:
        started.kill()


def remembered(server: StdioSession, text: str) -> dict[str, str]:
    """An acknowledged memory of the brain `shore`: its path -> its text."""
    path: str = server.tool("memory_remember", {"content": text, "brain": "shore"})["path"]
    return {path: text}


def call_held_after_its_commit(server: StdioSession) -> dict[str, str]:
    """Brain `shore` made and one memory acknowledged (returned as `remembered` gives it), then a
    second remembered in a call left running, held at the fault point after its commit."""
    server.tool("memory_create_brain", {"name": "Shore", "slug": "shore"})
    kept = remembered(server, "The godwit feeds on the mudflat at low tide.")
    args = {"content": "The curlew probes the sand for worms.", "brain": "shore"}
    server.request("tools/call", {"name": "memory_remember", "arguments": args}, answered=False)
    server.wait_for("held documents.committed")
    return kept


def next_start(data: Path, acknowledged: dict[str, str]) -> set[str]:
    """The next start, which settles what stopped writers left first: every acknowledged write
    there and the index sound; the brain's live paths."""
    restarted = opened(data)
    settle(restarted)
    assert_sound(restarted, acknowledged)
    brain = restarted.brains.resolve("shore")
    with access.as_system():
        docs = [document_of(item) for item in restarted.documents.repo.raw(brain.id)]
    close_stores(restarted)
    return {doc.path for doc in docs if doc.deleted_at is None}


@pytest.mark.parametrize("how", ["eof", "SIGTERM"])
def test_the_stop_waits_for_a_call_the_sessions_end_cut_short_then_closes_the_stores(
    tmp_path: Path, how: str
) -> None:
    """A call still running when the session ends (its write held two seconds after its commit)
    is waited for, within the budget, and the stores are closed once it has ended."""
    data = tmp_path / "data"
    with session(tmp_path, held="documents.committed=2@2") as server:
        kept = call_held_after_its_commit(server)
        took = server.end(how)
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < STOP_WITHIN_S, took
    assert left_open(data) == [], server.logged()[-3000:]
    assert len(next_start(data, kept)) == 2  # the call cut short had ended: its memory is kept


def test_the_reads_a_search_the_sessions_end_cut_short_counted_are_written(tmp_path: Path) -> None:
    """A search still running when the session ends (held two seconds before it counts the reads
    of its hits) is waited for; the stop had written the read counts before that wait, and those
    the search counted after it were lost with the process. They are written before the close."""
    data = tmp_path / "data"
    with session(tmp_path, held="access.saw=2", knobs="reads") as server:
        server.tool("memory_create_brain", {"name": "Shore", "slug": "shore"})
        kept = remembered(server, "The godwit feeds on the mudflat at low tide.")
        args = {"query": "where does the godwit feed", "brain": "shore"}
        server.request("tools/call", {"name": "memory_search", "arguments": args}, answered=False)
        server.wait_for("held access.saw")
        took = server.end("eof")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < STOP_WITHIN_S, took
    assert server.logged().count("held access.saw") == 1
    restarted = opened(data)
    brain = restarted.brains.resolve("shore")
    doc = restarted.documents.get(brain, next(iter(kept)))
    assert restarted.search.access is not None
    assert restarted.search.access.get_many(brain.id, [doc.id])[doc.id].count == 1
    close_stores(restarted)


def test_a_call_running_past_the_budget_is_left_and_the_next_start_finishes_its_write(
    tmp_path: Path,
) -> None:
    """The session's end waited for every call it cancelled, however long it ran: here its write
    is held a minute after its commit, under a budget of three seconds. The stop now leaves the
    call at the budget's end (the stores open under it), and the next start indexes its write."""
    data = tmp_path / "data"
    budget = 3.0
    with session(tmp_path, budget=str(budget), held="documents.committed=60@2") as server:
        kept = call_held_after_its_commit(server)
        took = server.end("eof")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert budget - 0.5 < took < budget + 2.0, took
    assert "left to the next start" in server.logged()
    assert len(next_start(data, kept)) == 2  # committed before it was held: indexed by the next start


def test_a_sigterm_during_a_long_sweep_ends_it_at_its_next_document(tmp_path: Path) -> None:
    """Documents a stopped writer committed and left unindexed, settled by the sweep one at a
    time (each held a second): SIGTERM ends the sweep after the document it settles, the stores
    are closed, and the next start settles the rest."""
    data = tmp_path / "data"
    with session(tmp_path, held="reconcile=1", knobs="sweep") as server:
        server.tool("memory_create_brain", {"name": "Shore", "slug": "shore"})
        kept = remembered(server, "The godwit feeds on the mudflat at low tide.")
        writer = opened(data)  # another process, stopped after each commit
        brain = writer.brains.resolve("shore")
        left = [f"notes/left{n}.md" for n in range(6)]
        for path in left:
            with faults.armed("documents.committed"), pytest.raises(faults.InjectedFault):
                writer.documents.write(brain, path, f"# Left {path}\n\nThe dunlin flock turns.".encode())
        close_stores(writer)  # that process is gone
        server.wait_for("held reconcile")
        took = server.end("SIGTERM")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < 5.0, took  # the document settled then, not the five after it
    assert server.logged().count("held reconcile") < len(left)
    assert left_open(data) == [], server.logged()[-3000:]
    assert set(left) <= next_start(data, kept)


def job_row(data: Path, job_id: str) -> dict[str, Any]:
    with closing(sqlite3.connect(data / "jobs.sqlite3")) as db:
        db.row_factory = sqlite3.Row
        row = db.execute("SELECT status, handed_over FROM jobs WHERE id = ?", (job_id,)).fetchone()
    assert row is not None, job_id
    return dict(row)


def test_a_sigterm_during_a_running_job_hands_it_back_and_the_next_start_finishes_it(
    tmp_path: Path,
) -> None:
    """An ingest job whose document write is held three seconds after its commit: SIGTERM hands
    the job back after the worker's grace (one second) and the process leaves (its handler, still
    running, keeps the stores open: the next process takes the job at once, and SQLite recovers
    the files); the next session settles the write and runs the job to its end."""
    data = tmp_path / "data"
    rota = tmp_path / "rota.md"
    rota.write_text(
        "\n\n".join(f"## Berth {i}\n\nThe crane rota {i} lifts cargo on day {i % 7}." for i in range(30)),
        encoding="utf-8",
    )
    with session(tmp_path, held="documents.committed=3@2", queued=True) as server:
        server.tool("memory_create_brain", {"name": "Shore", "slug": "shore"})
        kept = remembered(server, "The godwit feeds on the mudflat at low tide.")
        job_id = server.tool("memory_ingest_file", {"path": str(rota), "brain": "shore"})["job_id"]
        server.wait_for("held documents.committed")
        took = server.end("SIGTERM")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < STOP_WITHIN_S, took
    assert job_row(data, job_id) == {"status": "queued", "handed_over": 1}

    with session(tmp_path, queued=True) as again:  # the next session takes the job at once
        deadline = time.monotonic() + WAIT_S
        while job_row(data, job_id)["status"] != "completed":
            assert time.monotonic() < deadline, job_row(data, job_id)
            time.sleep(0.1)
        again.end("eof")
    assert again.process.returncode == 0
    assert "rota.md" in " ".join(next_start(data, kept))


def test_a_second_sigterm_during_the_clean_stop_ends_the_process_at_once(tmp_path: Path) -> None:
    """The stop waits for a call the first SIGTERM cut short (its write held after its commit);
    a second SIGTERM ends the process at once. It used to reach the session, still waiting for
    the call, and change nothing. The next start indexes the call's committed write."""
    data = tmp_path / "data"
    with session(tmp_path, held="documents.committed=60@2") as server:
        kept = call_held_after_its_commit(server)
        server.process.send_signal(signal.SIGTERM)
        time.sleep(1.0)  # the clean stop is waiting for the call
        took = server.end("SIGTERM")
    assert server.process.returncode == 128 + signal.SIGTERM, server.logged()[-3000:]
    assert took < 2.0, took
    assert "SIGTERM during the clean stop: stopping at once" in server.logged()
    assert len(next_start(data, kept)) == 2


def postings_build(data: Path) -> tuple[bool, int | None]:
    """Whether the brain's term postings are whole, and where a build under way stands."""
    with closing(sqlite3.connect(data / "chunks.sqlite3")) as db:
        seq = db.execute("SELECT seq FROM brain_state").fetchone()[0]
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        whole = f"chunks_fts_{seq}_skipped" in tables
        building = f"chunks_fts_{seq}_building"
        at = db.execute(f"SELECT next FROM {building}").fetchone()[0] if building in tables else None
    return whole, at


def test_a_session_ending_during_a_postings_build_keeps_its_steps_for_the_next(tmp_path: Path) -> None:
    """A brain past the size that has term postings (here 20 chunks), its build stepped by the
    maintenance worker (8 rows a step, each held): the session's end stops the build at its next
    step and closes the stores. The worker was a daemon thread left to the exit, inside the build's
    one transaction: the -wal files stayed, and the next session built from the first row again.
    Now the next session goes on from where the build stopped."""
    data = tmp_path / "data"
    rota = tmp_path / "rota.md"
    rota.write_text(
        "\n\n".join(f"## Berth {i}\n\nThe crane rota {i} lifts cargo on day {i % 7}." for i in range(120)),
        encoding="utf-8",
    )
    with session(tmp_path, held="postings.step=0.3", knobs="small") as server:
        server.tool("memory_create_brain", {"name": "Shore", "slug": "shore"})
        ingested = server.tool("memory_ingest_file", {"path": str(rota), "brain": "shore"})
        server.wait_for("held postings.step", times=2)
        took = server.end("eof")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < STOP_WITHIN_S, took
    assert left_open(data) == [], server.logged()[-3000:]
    first = server.logged().count("held postings.step")
    whole, at = postings_build(data)
    assert not whole and at is not None and at > 0, (whole, at)

    (tmp_path / "stderr.log").write_text("")
    with session(tmp_path, held="postings.step=0", knobs="small") as again:
        kept = remembered(again, "The godwit feeds on the mudflat at low tide.")  # wakes the worker
        deadline = time.monotonic() + WAIT_S
        while not postings_build(data)[0]:
            assert time.monotonic() < deadline, again.logged()[-3000:]
            time.sleep(0.1)
        again.end("eof")
    assert again.process.returncode == 0, again.logged()[-3000:]
    steps = -(-(ingested["chunk_count"] + 1) // 8)  # a build of every row, 8 a step
    assert again.logged().count("held postings.step") <= steps - first + 1
    next_start(data, kept)
    with closing(sqlite3.connect(data / "chunks.sqlite3")) as db:  # every term's rows as FTS5's
        brain_id = db.execute("SELECT brain_id FROM brain_state").fetchone()[0]
        assert fts_health.problem(db, brain_id, deep=True) == ""


def asked_and_held(server: StdioSession) -> dict[str, str]:
    """Brain `shore` with one memory (returned as `remembered` gives it), then memory_ask left
    running, its retrieval held in its worker thread."""
    server.tool("memory_create_brain", {"name": "Shore", "slug": "shore"})
    kept = remembered(server, "The godwit feeds on the mudflat at low tide.")
    args = {"query": "where does the godwit feed", "brain": "shore"}
    server.request("tools/call", {"name": "memory_ask", "arguments": args}, answered=False)
    server.wait_for("held ask.retrieve")
    return kept


def test_an_ask_the_sessions_end_cut_short_is_left_at_the_budgets_end(tmp_path: Path) -> None:
    """memory_ask streams on the session's loop and retrieves in a worker thread. The session's
    end waited for that thread, outside the stop's budget (a retrieval held 20 s kept the process
    20 s, under a budget of three); now it is counted as a sync call's thread is, and left at the
    budget's end."""
    data = tmp_path / "data"
    budget = 3.0
    with session(tmp_path, budget=str(budget), held="ask.retrieve=20", knobs="asks") as server:
        kept = asked_and_held(server)
        took = server.end("eof")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert budget - 0.5 < took < budget + 2.0, took
    assert "left to the next start" in server.logged()
    assert len(next_start(data, kept)) == 1


def test_an_ask_the_sessions_end_cut_short_is_waited_for_then_the_stores_closed(tmp_path: Path) -> None:
    """Its retrieval, held two seconds, is waited for within the budget; the stores are closed
    once it has ended, not under it."""
    data = tmp_path / "data"
    with session(tmp_path, held="ask.retrieve=2", knobs="asks") as server:
        kept = asked_and_held(server)
        took = server.end("eof")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < STOP_WITHIN_S, took
    assert left_open(data) == [], server.logged()[-3000:]
    assert "Traceback" not in server.logged() and "still running" not in server.logged()
    assert len(next_start(data, kept)) == 1


def test_an_erasure_the_sessions_end_cut_short_keeps_its_audit_entry_when_the_store_is_busy(
    tmp_path: Path,
) -> None:
    """Over stdio only an erasure is audited (its own `erasure` entry, recorded as it ends). One the
    session's end cut short ends while the stop waits for it; the record store refuses its entry
    as busy, and the stop had put what it kept in the spill before that wait: the entry, kept in
    memory, was lost with the process. The stop now spills it after the wait, for the next
    process to write."""
    facts = [
        {"type": "fact", "content": f"Scout logged tide {n} at the pier.", "source_agent": "scout"}
        for n in range(2)
    ]
    with session(tmp_path, surface="zengram") as writer:
        for fact in facts:  # zengram answers in text only
            stored = writer.request("tools/call", {"name": "brain_store", "arguments": fact})
            assert not stored["result"].get("isError"), stored
        assert writer.end("eof") < STOP_WITHIN_S
    (tmp_path / "stderr.log").write_text("")
    with session(tmp_path, held="erasure.documents=2", knobs="audit-busy", surface="admin") as server:
        args = {"kind": "source_agent", "subject": "scout"}
        server.request("tools/call", {"name": "admin_erase_subject", "arguments": args}, answered=False)
        server.wait_for("held erasure.documents")
        took = server.end("eof")
    assert server.process.returncode == 0, server.logged()[-3000:]
    assert took < STOP_WITHIN_S, took
    spill = tmp_path / "data" / "audit-kept.jsonl"
    kept = [json.loads(line) for line in spill.read_text().splitlines()] if spill.exists() else []
    assert [(e["action"], e["tenant"]) for e in kept] == [("erasure", "system")], server.logged()[-3000:]
