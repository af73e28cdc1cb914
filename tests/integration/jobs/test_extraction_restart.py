"""Extraction queued before a crash runs after the restart, exactly once in effect, on the
embedded SQLite record store, file blobs and SQLite job queue."""

from __future__ import annotations

from pathlib import Path

from cairn.adapters.local.extractive import ExtractiveGenerator
from cairn.adapters.local.file_blobs import FileBlobStore
from cairn.adapters.local.rule_facts import RuleFactExtractor
from cairn.adapters.local.rule_reflect import RuleReflector
from cairn.adapters.local.sqlite_jobs import SqliteJobRunner
from cairn.adapters.local.sqlite_records import SqliteRecordStore
from cairn.adapters.local.store_secret import FileStoreSecret
from cairn.bootstrap import Adapters, Container, build_container
from cairn.config import Settings
from cairn.services.memory.extraction import Said
from tests.fakes.chunks import MemoryChunkIndex
from tests.fakes.clock import FakeClock
from tests.fakes.embedder import HashingEmbedder


def boot(data: Path) -> Container:
    clock = FakeClock()
    adapters = Adapters(
        records=SqliteRecordStore(data / "records.sqlite3"),
        blobs=FileBlobStore(data / "blobs"),
        chunks=MemoryChunkIndex(64),
        embedder=HashingEmbedder(64),
        clock=clock,
        generator=ExtractiveGenerator(),
        jobs=SqliteJobRunner(data / "jobs.sqlite3", clock),
        extractor=RuleFactExtractor(),
        reflector=RuleReflector(),
        store_secret=FileStoreSecret(data / "store-secret.key"),
    )
    return build_container(Settings(data_dir=data), adapters)


def facts(c: Container, slug: str) -> list[str]:
    brain = c.brains.get(slug)
    return sorted(d.path for d in c.documents.documents(brain, "memory/") if d.metadata.get("kind") == "fact")


def test_extraction_queued_before_a_crash_runs_after_restart(tmp_path: Path) -> None:
    first = boot(tmp_path)
    brain = first.brains.create("Home", slug="home")
    session = first.sessions.create(brain)
    said = [Said("user", "I moved to Porto in 2021."), Said("user", "My sister Ana lives in Braga.")]
    first.extraction.submit_session(brain, session.id, said)
    transcript, _ = first.extraction.submit_transcript(brain, [Said("user", "I am allergic to peanuts.")])
    assert facts(first, "home") == []
    del first  # the process dies before its worker gets to the jobs

    second = boot(tmp_path)
    assert second.jobs.run_pending() == 2
    stored = facts(second, "home")
    assert len(stored) >= 3
    brain = second.brains.get("home")
    origins = {second.documents.get(brain, p).metadata["origins"] for p in stored}
    assert origins == {session.id, transcript.id}
    assert second.sessions.get(brain, session.id)[0].extracted_upto == 2

    third = boot(tmp_path)  # a further restart finds nothing left to do and writes nothing
    assert third.jobs.run_pending() == 0
    assert facts(third, "home") == stored
