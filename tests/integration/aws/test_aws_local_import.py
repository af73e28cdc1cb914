"""A laptop's brain moved into the AWS stack's emulation (DynamoDB and S3 on moto, the real API
function): `cairn import FILE --server URL` over the gateway, resumable, every surface's data in."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from cairn.entrypoints.cli import archive_remote, main
from cairn.services.thoughtmcp.models import NewMemory
from tests.fakes.container import fake_container
from tests.integration.aws.aws_local_run import AwsLocal, aws_local
from tests.support.archive_scenario import exported, fill


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AwsLocal]:
    """One emulated stack for the module: each test writes a brain of its own there."""
    with aws_local(tmp_path_factory.mktemp("stack")) as running:
        yield running


def test_a_laptop_brain_goes_into_the_stack_and_every_surface_finds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, stack: AwsLocal
) -> None:
    laptop = fake_container(tmp_path / "laptop")
    filled = fill(laptop)
    library = laptop.libraries.library(filled.brain.id)
    manuals = laptop.libraries.create_collection(library, "Pump manuals")
    laptop.documents.write(filled.brain, f"{manuals.folder}/hydrex.md", b"# Hydrex\n\nBleed the pump first.")
    laptop.thoughts.remember(
        filled.brain, NewMemory("Erin keeps the kiln at 1200 degrees", "erin", "s", "semantic")
    )
    archive = tmp_path / "notes.jsonl"
    archive.write_text(
        "".join(json.dumps(r) + "\n" for r in exported(laptop, filled.brain)), encoding="utf-8"
    )
    monkeypatch.setattr(archive_remote, "PART_LINES", 5)

    code = main(["import", str(archive), "--server", stack.base])
    out, err = capsys.readouterr()
    assert code == 0, (out, err, stack.log())
    again = main(["import", str(archive), "--server", stack.base])  # a re-run changes nothing
    rerun = capsys.readouterr().out
    brain = httpx.get(f"{stack.base}/v1/brains/notes", timeout=30).json()
    found = httpx.post(
        f"{stack.base}/v1/brains/{brain['id']}/search", json={"query": "bleed the pump"}, timeout=30
    ).json()
    listed = httpx.get(
        f"{stack.base}/v1/brains/{brain['id']}/documents", params={"recursive": "true"}, timeout=30
    )
    assert "imported into brain notes" in out and "refused: 0" in out
    assert again == 0 and "0 document, 0 memory, 0 link, 0 raw, 0 gap, 0 collection;" in rerun
    assert found["hits"] and found["hits"][0]["path"] == f"{manuals.folder}/hydrex.md"
    paths = {item["path"] for item in listed.json()["items"]}
    assert {"people/alice", f"{manuals.folder}/hydrex.md"} <= paths


def test_a_10_mb_document_is_uploaded_ingested_and_read_back_through_the_emulation(stack: AwsLocal) -> None:
    # Japanese text: 10 MB in 3.5 million characters, under the stack's 5 million per document
    paragraph = "このメモはエージェントのために保存された報告書の一部です。\n\n".encode()
    data = b"# Field report\n\n" + paragraph * (10 * 1024 * 1024 // len(paragraph)) + b"\nquokka harmonica\n"
    assert len(data) > 10 * 1000 * 1000 and len(data.decode()) < 5_000_000
    with httpx.Client(base_url=stack.base, timeout=120) as api:
        brain = api.post("/v1/brains", json={"name": "Reports", "slug": "reports"}).json()
        docs = f"/v1/brains/{brain['id']}/documents"
        ticket = api.post(f"{docs}/uploads", json={"file_name": "report.md", "size": len(data)}).json()
        sent = httpx.post(
            ticket["upload"]["url"],
            data=ticket["upload"]["fields"],
            files={"file": ("report.md", data)},
            timeout=120,
        )
        assert sent.status_code in (200, 201, 204), sent.text
        queued = api.post(f"{docs}/ingest/upload", json={"key": ticket["key"]}).json()
        assert queued["status"] == "queued", queued
        for _ in range(240):
            job = api.get(f"/v1/jobs/{queued['job_id']}").json()
            if job["status"] in ("completed", "failed"):
                break
            time.sleep(0.5)
        assert job["status"] == "completed", (job, stack.log())
        read = api.get(f"{docs}/read", params={"path": queued["path"]})
        assert read.status_code == 307  # past what a Lambda response carries: a presigned S3 GET
        fetched = httpx.get(read.headers["location"], timeout=120)
        found = api.post(f"/v1/brains/{brain['id']}/search", json={"query": "quokka harmonica"}).json()
    assert fetched.status_code == 200 and fetched.content == data
    assert found["hits"][0]["path"] == queued["path"]
