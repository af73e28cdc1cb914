"""The crash suite: a real Cairn process killed with SIGKILL (what `kill -9` sends) at an injected
point inside a write, a batch, an ingest, a compaction, an erasure or a consolidation
(cairn/faults.py), then a restart on the same data directory. Whatever the point, every write the
killed process acknowledged is there, found by both search legs, nothing is found twice, no deleted
document is still found, and the index holds exactly what the records say. Each case first checks
that the process really died at its point: a point never reached would prove nothing.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from cairn.bootstrap import Container
from cairn.bootstrap.closing import close_stores
from cairn.domain.models import Brain, MemoryType
from cairn.ports.chunks import VerifiableChunks
from cairn.services.documents.inputs import BatchOp
from cairn.services.memory.entities import MENTIONS
from cairn.services.memory.memory_model import MemoryInput
from tests.support.index_check import index_problems
from tests.support.processes import Server, batch, cli, put, serving, start
from tests.support.soundness import assert_sound, note, opened

pytestmark = pytest.mark.integration
KILLED = -signal.SIGKILL
QUICK_JOBS = {"CAIRN_JOB_LEASE_S": "1", "CAIRN_INGEST_QUEUE_BYTES": "2000"}


def died(server: Server, wait_s: float = 120) -> bool:
    """Whether the server was killed at its fault point; one still running (its point never
    reached) is stopped here, so the failing test leaves no server behind."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and server.alive():
        time.sleep(0.05)
    if server.alive():
        server.stop()
        return False
    return server.process.poll() == KILLED


def settled(
    data: Path, *, extra: dict[str, str] | None = None, until: Callable[[Server], bool] | None = None
) -> Container:
    """Restart on the data (the server settles, compares and rebuilds), wait until it is done (and
    `until` says what it resumes is finished), stop it, and open the data in this process."""
    with serving(data, extra=extra) as server:
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            health = httpx.get(f"{server.base}/healthz", timeout=10).json()
            if health["status"] == "ok" and (until is None or until(server)):
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the restarted server never settled: {health}")
    return opened(data)


def _job_done(job_id: str) -> Callable[[Server], bool]:
    def done(server: Server) -> bool:
        job = httpx.get(f"{server.base}/v1/jobs/{job_id}", timeout=10).json()
        return job.get("status") == "completed"

    return done


WRITE_POINTS = ["documents.committed", "documents.indexed", "chunks.vectors_appended"]


@pytest.mark.parametrize("point", WRITE_POINTS)
def test_a_write_killed_at_each_point(data: Path, point: str) -> None:
    server = start(data, faults=f"{point}:4")
    acknowledged: dict[str, str] = {}
    sending: dict[str, str] = {}
    with pytest.raises(httpx.HTTPError):
        for n in range(5, 30):
            sending = {f"notes/{n}.md": note(n, 1)}
            if put(server.base, "shore", f"notes/{n}.md", sending[f"notes/{n}.md"]).status_code == 204:
                acknowledged.update(sending)
    assert died(server) and len(acknowledged) == 3
    assert_sound(settled(data), acknowledged, in_flight=sending)


@pytest.mark.parametrize("point", ["batch.committed", "batch.indexed"])
def test_batch_ops_killed_at_each_point(data: Path, point: str) -> None:
    server = start(data, faults=f"{point}:2")
    acknowledged: dict[str, str] = {}
    writes: dict[str, str] = {}
    with pytest.raises(httpx.HTTPError):
        for round_ in range(1, 5):
            writes = {f"notes/{n}.md": note(n, round_) for n in range(round_ * 5, round_ * 5 + 10)}
            if batch(server.base, "shore", writes).status_code == 200:
                acknowledged.update(writes)
    assert died(server) and len(acknowledged) == 10
    assert_sound(settled(data), acknowledged, in_flight=writes)


def test_deletes_killed_between_the_commit_and_the_index(data: Path) -> None:
    server = start(data, faults="documents.committed:3")
    gone: set[str] = set()
    with pytest.raises(httpx.HTTPError):
        for n in range(10):
            answer = httpx.delete(
                f"{server.base}/v1/brains/shore/documents", params={"path": f"notes/{n}.md"}
            )
            if answer.status_code == 204:
                gone.add(f"notes/{n}.md")
    assert died(server) and len(gone) == 2
    container = settled(data)
    # The delete in flight committed before the kill: it is a delete, with no chunk left behind
    assert_sound(container, {}, gone | {"notes/2.md"})


def test_a_bulk_ingest_killed_mid_way_is_finished_by_running_it_again(data: Path, tmp_path: Path) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    for n in range(12):
        (folder / f"f{n}.md").write_text(note(100 + n))
    killed = cli(
        "ingest", str(folder), "--brain", "shore", "--data-dir", str(data), faults="documents.committed:6"
    )
    assert killed.returncode == KILLED
    listed = cli("brains", "--data-dir", str(data))  # the next command to open the data settles it
    assert "documents a stopped process had written but not indexed" in listed.stderr
    assert index_problems(opened(data)) == []
    again = cli("ingest", str(folder), "--brain", "shore", "--data-dir", str(data))
    assert again.returncode == 0, again.stderr
    expected = {f"ingest/folder/f{n}.md": note(100 + n) for n in range(12)}
    assert_sound(opened(data), expected)


def test_a_queued_ingest_killed_in_its_job_is_finished_after_the_restart(data: Path) -> None:
    server = start(data, faults="documents.committed:1", extra=QUICK_JOBS)
    body = (note(500) + "\n\n" + "The sanderling runs with the waves. " * 80).encode()
    answer = httpx.post(
        f"{server.base}/v1/brains/shore/documents/ingest/file",
        files={"file": ("long.md", body)},
        data={"path": "notes/long.md"},
        timeout=60,
    )
    assert answer.status_code == 202, answer.text
    job_id = answer.json()["job_id"]
    assert died(server)
    container = settled(data, extra=QUICK_JOBS, until=_job_done(job_id))
    assert_sound(container, {"notes/long.md": body.decode()})


@pytest.mark.parametrize("point", ["compaction.copied", "compaction.swapped"])
def test_a_compaction_killed_at_each_point(data: Path, point: str) -> None:
    container = opened(data)  # rewrites leave dead vector rows for compaction to reclaim
    written = {f"notes/{n}.md": note(n, 2) for n in range(10)}
    ops = [BatchOp("write", path, text.encode()) for path, text in written.items()]
    container.documents.batch(container.brains.resolve("shore"), ops)
    close_stores(container)
    killed = cli("compact", "--data-dir", str(data), faults=point)
    assert killed.returncode == KILLED
    assert_sound(settled(data), written)
    done = cli("compact", "--data-dir", str(data))
    assert done.returncode == 0, done.stderr
    assert_sound(opened(data), written)


def _memories(container: Container, brain: Brain, agent: str, count: int) -> list[str]:
    return [
        container.memories.store(
            brain,
            MemoryInput(
                MemoryType.fact, f"{agent} noted fact number {i} about the saltings.", source_agent=agent
            ),
        ).memory.path
        for i in range(count)
    ]


@pytest.mark.parametrize("point", ["erasure.documents", "documents.bytes_erased"])
def test_an_erasure_killed_mid_way_is_finished_after_the_restart(data: Path, point: str) -> None:
    """Killed after its second document, or between the second document's bytes and its record."""
    container = opened(data)
    brain = container.brains.resolve("shore")
    doomed = _memories(container, brain, "victor", 6)
    kept = _memories(container, brain, "wanda", 3)
    killed = cli("erase", "source_agent", "victor", "--yes", "--data-dir", str(data), faults=f"{point}:2")
    assert killed.returncode == KILLED
    watching: list[Container] = []

    def erased(server: Server) -> bool:  # the restarted server resumes it in the background
        if not watching:
            watching.append(opened(data))
        return not any(watching[0].documents.exists(brain, path) for path in doomed)

    after = settled(data, until=erased)
    texts = {path: container.documents.read(brain, path).decode() for path in kept}
    assert_sound(after, texts, set(doomed))


def test_a_consolidation_killed_after_a_merge_is_finished_after_the_restart(data: Path) -> None:
    container = opened(data)
    brain = container.brains.resolve("shore")
    for text in ("Ana likes jazz.", "Ana really likes jazz.", "Ana likes jazz a lot.", "Ben owns two cats."):
        container.ingest.remember(brain, text)
    server = start(data, faults="consolidation.merged", extra=QUICK_JOBS)
    answer = httpx.post(f"{server.base}/v1/brains/shore/consolidate", timeout=30)
    assert answer.status_code == 202, answer.text
    assert died(server)
    after = settled(data, extra=QUICK_JOBS, until=_job_done(answer.json()["job_id"]))
    brain = after.brains.resolve("shore")
    live = " ".join(
        after.documents.read(brain, d.path).decode() for d in after.documents.documents(brain, "memory/")
    )
    assert "jazz" in live and "two cats" in live  # merged, not lost
    assert index_problems(after) == []
    assert after.repair.compare(brain, deep=True).sound


@pytest.mark.parametrize("reached", [4, 5])
def test_a_supersession_killed_where_its_vectors_are_written(data: Path, reached: int) -> None:
    """One fact key written again and again: each write indexes the new value (its vector
    appended) and writes the value it supersedes again, no longer current, on the vector row it
    already has (adapters/local/kept_vector_rows.py). Killed at the second or the first of them,
    the restart holds every acknowledged value, each value's chunk current exactly when its
    record is, and no more vector rows than chunks beside the row a killed append left."""
    server = start(data, faults=f"chunks.vectors_appended:{reached}")
    acknowledged: list[str] = []
    with pytest.raises(httpx.HTTPError):
        for n in range(20):
            value = {"content": f"The kettle descales every {n} days.", "type": "fact", "key": "kettle"}
            answer = httpx.post(
                f"{server.base}/zengram/memory", json={**value, "source_agent": "x"}, timeout=30
            )
            answer.raise_for_status()
            acknowledged.append(value["content"])
    assert died(server) and acknowledged
    after = settled(data)
    assert index_problems(after) == []
    for brain in after.brains.list():
        assert after.repair.compare(brain, deep=True).sound
        docs = [d for d in after.documents.documents(brain, "memories/") if d.memory is not None]
        held = {d.id: after.adapters.chunks.get_chunks(brain.id, d.id) for d in docs}
        assert all(c.current == (d.memory is not None and d.memory.current) for d in docs for c in held[d.id])
        texts = " ".join(c.text for chunks in held.values() for c in chunks)
        assert all(text in texts for text in acknowledged)
        assert sum(c.current for chunks in held.values() for c in chunks) == 1
        chunks = after.adapters.chunks
        assert isinstance(chunks, VerifiableChunks)
        assert chunks.check(brain.id).vector_rows <= after.adapters.chunks.count(brain.id) + 1


def test_a_typed_memory_killed_after_its_commit_gets_its_entity_links_after_the_restart(data: Path) -> None:
    """A zengram typed memory's entity links are written after its own commit, which marks them
    pending (services/links/pending.py). Killed between the two, the memory is there once after
    the restart, linked to the entities it names (its client, its source agent), and no mark is
    left."""
    server = start(data, faults="documents.indexed:1")
    memory = {
        "content": "The harbour trust moved the pilot boarding ground two miles east in March.",
        "type": "event",
        "client_id": "harbour-trust",
        "source_agent": "scout",
    }
    with pytest.raises(httpx.HTTPError):
        httpx.post(f"{server.base}/zengram/memory", json=memory, timeout=30).raise_for_status()
    assert died(server)
    after = settled(data)
    assert index_problems(after) == []
    assert list(after.pending_links.pending()) == []
    stored = [
        (brain, d)
        for brain in after.brains.list()
        for d in after.documents.documents(brain, "memories/")
        if d.memory is not None
    ]
    assert len(stored) == 1
    brain, doc = stored[0]
    linked = after.entities.links.outgoing(brain.id, doc.id, MENTIONS)
    assert sorted(str(link.metadata.get("role")) for link in linked) == ["about", "source"]
    assert after.entities.get(brain, "harbour-trust").mention_count == 1
    assert after.entities.get(brain, "scout").mention_count == 1
